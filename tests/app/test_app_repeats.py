"""The Drill-down page shows the K verdicts of a sample of a run judged with
``--repeat K`` (Streamlit AppTest against a real SQLite store; nothing mocked)."""

from __future__ import annotations


from automonitor.runs import runner
from servers.data import add_custom
from apptest_support import app_test, open_store, page_path


def test_drilldown_lists_the_k_verdicts(tmp_path, monkeypatch):

    from store.models import Prediction
    from sqlmodel import Session, select

    url = f"sqlite:///{tmp_path / 's.db'}"
    engine = open_store(url)
    rows = add_custom(engine, [("q", "import os\nos.system('rm -rf ' + path)", "print('hello')")])
    rid = runner.create_run(engine, "rules", "direct", params={"repeat": 3})
    runner.execute_run(engine, rid)
    sid = rows[0]["id"]
    with Session(engine) as s:  # make repeat 1 differ, as a sampling judge would
        p = s.exec(
            select(Prediction).where(Prediction.run_id == rid, Prediction.sample_id == sid, Prediction.repeat == 1)
        ).one()
        first = (
            s.exec(
                select(Prediction).where(Prediction.run_id == rid, Prediction.sample_id == sid, Prediction.repeat == 0)
            )
            .one()
            .outcome
        )
        p.outcome = "invalid"
        s.add(p)
        s.commit()
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    at = app_test(60)
    at.run()
    at.switch_page(page_path("pages/drilldown.py"))
    at.query_params["run"] = rid
    at.query_params["sample"] = sid
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(m.value == "**3 repeats**" for m in at.markdown)
    tables = [t.value for t in at.table]
    rep = next(t for t in tables if "repeat" in t.columns)
    assert list(rep["verdict"]) == [first, "invalid", first]
