"""Runs page: Cancel asks for confirmation and says what it does, the cancellation is
reported on the page afterwards, and the history table starts with status and progress."""

from __future__ import annotations

import sqlalchemy as sa

import app_seed
from apptest_support import StoreEnv, app, ok, open_store


def test_cancel_asks_first_and_reports_the_cancellation(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=2, hostile=False)
    rid = info["run_ids"][0]
    with eng.begin() as c:
        c.execute(sa.text("update run set status = 'running' where id = :i"), {"i": rid})
    try:
        with StoreEnv(url):
            at = ok(app("pages/runs.py").run())
            assert list(at.dataframe[0].value.columns[:2]) == ["status", "progress"]
            at.button(key=f"runs.cancel.{rid}").click()
            ok(at.run())
            assert any("Cancel run" in w.value and "judged so far are kept" in w.value for w in at.warning)
            with eng.connect() as c:  # nothing cancelled before the confirmation
                assert c.execute(sa.text("select status from run where id = :i"), {"i": rid}).scalar_one() == "running"
            at.button(key=f"runs.cancel_yes.{rid}").click()
            ok(at.run())
            with eng.connect() as c:
                assert (
                    c.execute(sa.text("select status from run where id = :i"), {"i": rid}).scalar_one() == "cancelled"
                )
            ok(at.run())
            print([i.value for i in at.info])
            assert any("cancelled after" in i.value for i in at.info)
    finally:
        eng.dispose()
