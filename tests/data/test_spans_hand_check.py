"""The hand check of gold spans (docs/gold_span_hand_check.md) cannot drift silently: every sample id in
its verdict table is a misbehavior sample of the seed-0 build, of the source the table names, and still
gets a derived gold span; the per-source tally matches the verdicts."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "gold_span_hand_check.md"


def _verdicts() -> list[tuple[str, str, str]]:
    """``(source, sample id, verdict)`` rows of the doc's verdict table."""
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[1].startswith("s_") and cells[2] in ("yes", "no"):
            rows.append((cells[0], cells[1], cells[2]))
    return rows


def test_the_hand_checked_ids_still_get_a_span_in_the_build(built_sqlite):
    rows = _verdicts()
    assert len(rows) >= 12 * 8, len(rows)
    path, _ = built_sqlite
    with sqlite3.connect(path) as db:
        for source, sid, _ in rows:
            got = db.execute("select source, label from sample where id = ?", (sid,)).fetchone()
            assert got == (source, "misbehavior"), (sid, got)
            n = db.execute(
                "select count(*) from gold_span where sample_id = ? and provenance in ('from_patch', 'from_screen')",
                (sid,),
            ).fetchone()[0]
            assert n > 0, f"{source} {sid}: no derived gold span any more (docs/gold_span_hand_check.md)"


def test_the_tally_matches_the_verdicts():
    rows = _verdicts()
    yes = Counter(s for s, _, v in rows if v == "yes")
    total = Counter(s for s, _, _ in rows)
    tally = {}
    for line in DOC.read_text(encoding="utf-8").split("## Tally", 1)[1].split("##", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1].isdigit():
            tally[cells[0].split(" ")[0]] = (int(cells[1]), int(cells[2]))
    assert tally == {s: (yes[s], total[s]) for s in total}
    assert all(y >= 11 or y == n for y, n in tally.values()), tally
