"""The Runs page's monitor-view box: the estimate follows the view (a view no sample has is refused before
anything starts, naming the missing part) and a launched run records the chosen view."""

from __future__ import annotations

import time

import sqlalchemy as sa

import app_seed
from apptest_support import StoreEnv, app, ok, open_store


def test_runs_page_view_box_estimates_and_launches_under_the_view(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    eng = open_store(url)
    app_seed.seed_store(eng, pairs_per_cell=2, runs=0)
    with StoreEnv(url):
        at = ok(app("pages/runs.py").run())
        assert at.selectbox(key="runs.view").value == "full"
        # the seeded responses are plain answers: no reasoning part, so no run can start under it
        at.selectbox(key="runs.view").select("reasoning")
        ok(at.run())
        assert any("no reasoning part" in e.value for e in at.error)
        assert at.button(key="runs.start").disabled
        at.selectbox(key="runs.view").select("answer")
        at.number_input(key="runs.limit").set_value(12)
        ok(at.run())
        assert not at.button(key="runs.start").disabled
        at.button(key="runs.start").click()
        ok(at.run())
        launched = at.session_state["runs.launched"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with eng.connect() as c:
                status = c.execute(sa.text("select status from run where id = :i"), {"i": launched}).scalar_one()
            if status in ("finished", "failed", "cancelled"):
                break
            time.sleep(0.5)
        assert status == "finished"
        with eng.connect() as c:
            params = c.execute(sa.text("select params from run where id = :i"), {"i": launched}).scalar_one()
        assert '"view": "answer"' in params
    eng.dispose()
