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
