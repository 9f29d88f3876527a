"""``automonitor build``'s sources table (fresh-user trial): the paper editions keep test pairs that failed a gate,
so a source showed more test pairs than pairs passing the gates (safecoder "pass gates 28 / test 228") with
nothing saying why. The build report counts them per source (``test_pairs_failing_gates``, an added field) and a
line under the table names them. On the run's seed-0 build of the raw sources (``built_sqlite``)."""

from __future__ import annotations

import json
import shutil

from automonitor.cli.data import failing_gates_note


def test_the_table_says_test_pairs_include_pairs_that_failed_a_gate(cli, built_sqlite, tmp_path):
    src, report = built_sqlite
    sources = report["sources"]
    over = [n for n, s in sources.items() if s["test_pairs"] > s["eligible_for_test"]]
    assert "safecoder" in over  # the trial's case
    for s in sources.values():  # the test pairs passing the gates are among those that pass
        assert 0 <= s["test_pairs_failing_gates"] <= s["test_pairs"]
        assert s["test_pairs"] - s["test_pairs_failing_gates"] <= s["eligible_for_test"]
    note = failing_gates_note(report)
    assert note is not None and "so test can exceed pass gates" in note
    for n in over:
        assert f"{n} {sources[n]['test_pairs_failing_gates']} of {sources[n]['test_pairs']}" in note
    assert failing_gates_note({"sources": {"x": {"test_pairs": 3, "eligible_for_test": 3}}}) is None  # older report

    # the command prints it under the table
    db = tmp_path / "store.db"
    shutil.copyfile(src, db)
    url = f"sqlite:///{db}"
    res = cli(["build"], db=url)
    assert res.returncode == 0, res.stderr
    out = " ".join(res.stdout.split())
    assert note in out
    assert out.index("automonitor build (seed") < out.index(note) < out.index("edition paper:")
    # the build report (what `build --json` prints) keeps its fields and adds the count: a second no-op rebuild
    # reads its plan back from the plan cache (the fixture's build wrote it), a few seconds
    res = cli(["build", "--json"], db=url)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["unchanged"]
    assert {"eligible_for_test", "test_pairs", "paper_pairs", "test_pairs_failing_gates"} <= set(
        doc["sources"]["safecoder"]
    )
    assert doc["sources"] == sources
