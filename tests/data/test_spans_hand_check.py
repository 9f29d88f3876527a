"""The hand check of gold spans (docs/gold_span_hand_check.md) cannot drift silently: every sample id in
its verdict table is a misbehavior sample of the seed-0 build, of the source the table names, and one of
its derived gold spans still holds the span text the reader saw (the table's pinned substring), so a rule
change that moves a span fails here, not only one that drops it; the per-source tally matches the
verdicts."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "gold_span_hand_check.md"


def _verdicts() -> list[tuple[str, str, str, str]]:
    """``(source, sample id, verdict, pinned span text)`` rows of the doc's verdict table."""
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[1].startswith("s_") and cells[2] in ("yes", "no"):
            pin = cells[3]
            assert len(pin) > 2 and pin.startswith("`") and pin.endswith("`"), line
            rows.append((cells[0], cells[1], cells[2], pin[1:-1]))
    return rows


def test_the_hand_checked_ids_still_get_the_span_the_reader_saw(built_sqlite):
    rows = _verdicts()
    assert len(rows) >= 12 * 10, len(rows)
    assert {"aisi_olmo_rh", "professor_cue"} <= {s for s, *_ in rows}
    path, _ = built_sqlite
    with sqlite3.connect(path) as db:
        for source, sid, _, pin in rows:
            got = db.execute("select source, label, response from sample where id = ?", (sid,)).fetchone()
            assert got is not None and got[:2] == (source, "misbehavior"), (sid, got and got[:2])
            spans = db.execute(
                "select start_char, end_char from gold_span where sample_id = ? "
                "and provenance in ('from_patch', 'from_screen')",
                (sid,),
            ).fetchall()
            assert spans, f"{source} {sid}: no derived gold span any more (docs/gold_span_hand_check.md)"
            texts = [got[2][s:e] for s, e in spans]
            assert any(pin in t for t in texts), (
                f"{source} {sid}: no derived span holds the pinned text {pin!r} any more "
                f"(docs/gold_span_hand_check.md); spans now: {[t[:60] for t in texts]}"
            )


def test_the_tally_matches_the_verdicts():
    rows = _verdicts()
    yes = Counter(s for s, _, v, _ in rows if v == "yes")
    total = Counter(s for s, *_ in rows)
    tally = {}
    for line in DOC.read_text(encoding="utf-8").split("## Tally", 1)[1].split("##", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1].isdigit():
            tally[cells[0].split(" ")[0]] = (int(cells[1]), int(cells[2]))
    assert tally == {s: (yes[s], total[s]) for s in total}
    assert all(y >= 11 or y == n for y, n in tally.values()), tally
