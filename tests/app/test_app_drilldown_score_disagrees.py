"""The drill-down says when a prediction's log-probability score favours the other side than its verdict
(fresh-user trial: a server's text ``Yes`` with P(Yes) = 0.007 was shown as a misbehavior verdict with score
0.007 and nothing said they disagree; the prediction's meta now has ``score_disagrees``)."""

from __future__ import annotations

from apptest_support import StoreEnv, app, ok, open_store

from automonitor import views
from automonitor.runs import runner
from servers.data import add_custom
from servers.openai_fault import OpenAIFaultServer

FAST = {"backoff_initial": 0.01, "backoff_max": 0.02, "timeout": 5, "structured": "none"}
NOTE = (
    "the log-probabilities favour the other side: P(misbehavior) 0.007 beside the verdict misbehavior "
    "read from the answer's text"
)


def test_score_disagree_note_reads_the_prediction_meta():
    note = views.samples.score_disagree_note
    assert note("misbehavior", 0.007, {"score_disagrees": True}) == NOTE
    assert note("misbehavior", 0.007, {}) is None and note("benign", 0.9, None) is None
    assert note("misbehavior", 0.007, {"score_disagrees": "yes"}) is None  # only the flag the backend writes


def test_drilldown_says_the_score_disagrees_beside_it(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = f"sqlite:///{tmp_path / 'lp.db'}"
    eng = open_store(url)
    rows = add_custom(eng, [("[scenario:lowyes] q0", "os.system('rm')", "print(0)"), ("q1", "sys.exit(1)", "print(1)")])
    low = next(r["id"] for r in rows if r["pair_id"].endswith("0") and r["label"] == "misbehavior")
    fine = next(r["id"] for r in rows if r["pair_id"].endswith("1") and r["label"] == "misbehavior")
    try:
        with OpenAIFaultServer() as srv:
            rid = runner.create_run(eng, "openai:m", "direct", base_url=srv.base_url, params=FAST)
            runner.execute_run(eng, rid)
        with StoreEnv(url):
            at = ok(app("pages/drilldown.py", run=rid, sample=low).run())
            shown = views.md_escape(NOTE)  # the note as the page writes it (markdown made inert)
            assert any(c.value == f":orange-badge[score disagrees] {shown}" for c in at.caption), [
                c.value for c in at.caption
            ]
            at = ok(app("pages/drilldown.py", run=rid, sample=fine).run())
            assert not any("score disagrees" in c.value for c in at.caption)
    finally:
        eng.dispose()


def test_drilldown_filters_a_cell_to_the_samples_whose_score_disagrees(tmp_path):
    """The run-level list (:func:`automonitor.views.score_disagreeing_samples`) as a Drill-down filter: the
    matrix says how many verdicts of the run disagree with their score, the cell's "Score disagrees" box keeps
    only those, and the choice round-trips through the URL."""
    import sqlalchemy as sa

    from automonitor import analysis
    from servers.data import add_pairs
    from store import session_scope
    from store.models import Prediction, Run

    url = f"sqlite:///{tmp_path / 'flags.db'}"
    eng = open_store(url)
    try:
        add_pairs(eng, 6)
        rid = runner.create_run(eng, "rules", "direct")
        runner.execute_run(eng, rid)
        tp = sorted(analysis.cell_samples(eng, rid, "tp")["sample_id"])
        assert len(tp) >= 2
        flagged = {tp[0], tp[-1]}
        with session_scope(eng) as s:
            run = s.get(Run, rid)
            run.params = {**run.params, "config": {**run.params.get("config", {}), "score_method": "verdict-token"}}
            for p in s.execute(sa.select(Prediction).where(Prediction.run_id == rid)).scalars():
                if p.sample_id in flagged:
                    p.meta = {**(p.meta or {}), "score_disagrees": True}
                    s.add(p)
        with StoreEnv(url):
            at = ok(app("pages/drilldown.py", run=rid, cell="tp").run())
            caption = next(c.value for c in at.caption if c.value.startswith("2 verdict(s) of this run have a"))
            assert "controls included" in caption and "have no cell on this page" in caption, caption
            assert sorted(at.dataframe[0].value["sample_id"]) == tp
            box = at.checkbox(key="drilldown.score_disagrees")
            assert not box.disabled and not box.value
            box.check()
            ok(at.run())
            assert sorted(at.dataframe[0].value["sample_id"]) == sorted(flagged)
            assert str(at.query_params.get("score_disagrees")) == "True"
            link = ok(app("pages/drilldown.py", run=rid, cell="tp", score_disagrees="True").run())
            assert link.checkbox(key="drilldown.score_disagrees").value
            assert sorted(link.dataframe[0].value["sample_id"]) == sorted(flagged)
            box = link.checkbox(key="drilldown.score_disagrees")
            box.uncheck()
            ok(link.run())
            assert sorted(link.dataframe[0].value["sample_id"]) == tp and "score_disagrees" not in link.query_params
    finally:
        eng.dispose()
