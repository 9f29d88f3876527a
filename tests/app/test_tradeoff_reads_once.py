"""A cold Trade-off page reads every prediction once (issue 38): on a session's first run on a store version the
report is loaded first and the sample sets take the samples its runs judged from the report's read
(``predictions_read_once``), instead of a second read of every prediction (``judged_test_samples``); the sets are
the rows a read of the store gives, a detector ladder run (left out of the report) included."""

from __future__ import annotations

import pandas as pd
import sqlalchemy as sa

import app_seed
from apptest_support import StoreEnv, app, ok, open_store
from automonitor import views
from pages._ui import data as loaders
from store.queries import analysis as queries
from store.queries import workbench


def test_a_cold_tradeoff_page_reads_the_predictions_once(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'once.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=2, runs=3)
    gold = [r for r in info["samples"] if r["status"] == "gold" and r["split"] == "test"]
    app_seed.add_run(eng, gold[: len(gold) // 2], monitor="rules", template="direct", run_id="lad-1")
    with eng.begin() as c:
        c.execute(sa.text("UPDATE run SET kind = 'ladder' WHERE id = 'lad-1'"))
    report_runs = sorted(queries.load_runs(eng)["run_id"])
    assert "lad-1" not in report_runs and len(report_runs) >= 3

    light_reads: list[list[str]] = []
    store_reads: list[object] = []
    real_load, real_judged = queries.load_predictions, workbench.judged_test_samples

    def load_predictions(engine, run_ids=None, **kwargs):
        if kwargs.get("light"):
            light_reads.append(sorted(run_ids or []))
        return real_load(engine, run_ids, **kwargs)

    def judged_test_samples(conn, run_ids=None):
        store_reads.append(None if run_ids is None else sorted(run_ids))
        return real_judged(conn, run_ids)

    monkeypatch.setattr(queries, "load_predictions", load_predictions)
    monkeypatch.setattr(workbench, "judged_test_samples", judged_test_samples)
    try:
        with StoreEnv(url):
            ok(app("pages/tradeoff.py").run())
            # the report's runs read once; only the ladder run (not in the report) read for its sample set
            assert light_reads.count(report_runs) == 1, light_reads
            assert store_reads == [["lad-1"]]
            page_sets = loaders.load_sample_sets(url, loaders.version())  # the page's cache entry
        assert store_reads == [["lad-1"]]  # a cache hit, not computed again
        monkeypatch.undo()
        pd.testing.assert_frame_equal(page_sets, views.run_sample_sets(eng))
        assert set(page_sets["run_id"]) == {*report_runs, "lad-1"}
    finally:
        eng.dispose()
