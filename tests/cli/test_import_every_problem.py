"""``automonitor import`` names every malformed line and field of a bad pair file, not only the first stage's
(fresh-user trial: a file with a malformed JSON line listed only that line, and the bad fields of the other
lines came one at a time on the next tries). The list is capped (``--max-errors``, default 20) with a count of
the rest, each problem names file, line and field, and nothing is written."""

from __future__ import annotations

import json

import sqlalchemy as sa

from helpers import run_cli
from store import get_engine, init_db
from store.models import Sample


def _row(pair: str, side: str, **kw: object) -> str:
    row = {
        "pair_id": pair,
        "category": "sycophancy_bias",
        "task": "qa",
        "request": f"question {pair}",
        "response": f"{side} answer {pair}",
        "label": side,
    }
    return json.dumps({**row, **kw})


def _samples(url: str) -> int:
    engine = get_engine(url)
    init_db(engine)
    with engine.connect() as c:
        return int(c.execute(sa.select(sa.func.count()).select_from(Sample)).scalar() or 0)


def test_import_lists_malformed_lines_and_bad_fields_together_and_writes_nothing(sqlite_url, tmp_path, sqlite_engine):
    # sqlite_engine: sqlite_url is a copy of the run's migrated empty store (the migrations are not under test)
    lines = [
        _row("p1", "misbehavior"),
        _row("p1", "benign")[:-1],  # line 2: malformed JSON (no closing brace)
        _row("p2", "misbehavior", category="bogus"),  # line 3: field category
        "not json at all",  # line 4: malformed JSON
        _row("p2", "benign", task="zzz"),  # line 5: field task
        _row("p3", "misbehavior", label="maybe"),  # line 6: field label
        "[1, 2]",  # line 7: not an object
    ]
    f = tmp_path / "bad.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = run_cli(["import", str(f)], db=sqlite_url)
    assert res.returncode == 2, res.stderr
    err = res.stderr
    assert f"{f}, line 2: malformed JSON" in err  # the first problem locates the error
    for where in (
        "line 3, field 'category'",
        "line 4: malformed JSON",
        "line 5, field 'task'",
        "line 6, field 'label'",
    ):
        assert where in err, (where, err)
    assert "line 7: expected a JSON object" in err
    assert "(5 more problems)" in err
    assert [ln for ln in err.splitlines() if "line 3" in ln][0].count(str(f)) == 1  # the file is named
    assert _samples(sqlite_url) == 0  # all or nothing


def test_import_caps_the_list_at_20_problems_and_counts_the_rest(sqlite_url, tmp_path, sqlite_engine):
    # sqlite_engine: sqlite_url is a copy of the run's migrated empty store (the migrations are not under test)
    lines = []
    for i in range(15):
        lines.append(f"{{broken {i}")  # malformed JSON
        lines.append(_row(f"q{i}", "benign", task="nope"))  # a bad field
    f = tmp_path / "many.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = run_cli(["import", str(f)], db=sqlite_url)
    assert res.returncode == 2, res.stderr
    assert "(29 more problems)" in res.stderr
    assert res.stderr.count("\n  also: ") == 19 and "... and 10 more" in res.stderr  # 20 named, 30 counted
    assert "line 2, field 'task'" in res.stderr and "line 20, field 'task'" in res.stderr
    assert "line 21" not in res.stderr
    assert _samples(sqlite_url) == 0
    wide = run_cli(["import", str(f), "--max-errors", "40"], db=sqlite_url)
    assert wide.stderr.count("\n  also: ") == 29 and "line 30, field 'task'" in wide.stderr
