"""Runs with no MR/FAR (every call failed, every answer invalid) and archived runs are named under the Trade-off
plane with why, in the words ``automonitor report`` uses, not only counted in a tooltip (newcomer, round 4)."""

from __future__ import annotations

import sqlalchemy as sa

import app_seed
from automonitor import views
from automonitor.analysis.from_store import report
from store import get_engine, init_db


def _store(tmp_path):
    eng = get_engine(f"sqlite:///{tmp_path / 'unplotted.db'}")
    init_db(eng)
    ids = app_seed.seed_store(eng, pairs_per_cell=1, runs=4, hostile=False)["run_ids"]
    with eng.begin() as c:  # r000: every call failed (HTTP 500), the run failed; r001: every answer invalid
        c.execute(sa.text("update prediction set outcome = 'error' where run_id = :i"), {"i": ids[0]})
        c.execute(sa.text("update run set status = 'failed', monitor = :m where id = :i"), {"i": ids[0], "m": "*evil*"})
        c.execute(sa.text("update prediction set outcome = 'invalid' where run_id = :i"), {"i": ids[1]})
        c.execute(sa.text("update run set archived = 1 where id = :i"), {"i": ids[2]})
    return eng, ids


def test_runs_without_mr_far_and_archived_are_named_with_why(tmp_path):
    eng, ids = _store(tmp_path)
    try:
        runs = views.runs_frame(eng)
        statuses = dict(zip(runs["run_id"], runs["status"]))
        archived = tuple(runs.loc[runs["archived"].fillna(False).astype(bool), "run_id"])
        sel = views.tradeoff_selection(
            report(eng),
            views.TradeoffOptions(templates=tuple(set(runs["template"])), archived=archived),
            statuses=statuses,
        )
        rows = views.unplotted_runs(sel.raw, sel.points, statuses, archived)
        why = {rid: w for _, rid, w in rows}
        assert set(why) == {ids[0], ids[1], ids[2]}, rows  # the plotted run r003 is not named
        assert why[ids[0]] == "failed, errors 100%"
        assert why[ids[1]] == "unscored 100%"
        assert why[ids[2]] == "archived"
        cap = views.unplotted_runs_caption(rows)
        assert "\\*evil\\*" in cap and "*evil*" not in cap.replace("\\*", "")  # user text escaped
        assert "(failed, errors 100%)" in cap.replace("\\", "")
        assert "more" not in cap
        short = views.unplotted_runs_caption(rows, limit=1)
        assert short.endswith("and 2 more") and ids[1] not in short.replace("\\", "")
        assert views.unplotted_runs_caption([]) == ""
    finally:
        eng.dispose()


def test_a_run_with_no_live_process_gets_resume_advice_with_its_id():
    assert views.no_live_process("running", False) and not views.no_live_process("running", True)
    assert not views.no_live_process("running", None) and not views.no_live_process("finished", False)
    advice = views.resume_advice("r-20261208.1")
    assert "`automonitor run --resume r-20261208.1`" in advice and "No process is judging this run" in advice
    odd = views.resume_advice("a`b*c")  # a user-supplied id never breaks out of the code span
    assert "`automonitor run --resume` a\\`b\\*c" in odd
