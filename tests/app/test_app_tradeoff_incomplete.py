"""AppTest: the Trade-off page's "Cancelled / unfinished runs may enter the front" toggle changes what the
plot says about the cancelled run (legend and hover), not only where the front goes."""

from __future__ import annotations

import json

import sqlalchemy as sa

import app_seed
from apptest_support import StoreEnv, app, ok, open_store


def _incomplete_trace(at) -> dict:
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    (tr,) = [t for t in spec["data"] if str(t.get("name", "")).startswith("runs: cancelled")]
    return tr


def test_the_toggle_renames_the_cancelled_runs_in_legend_and_hover(tmp_path):
    url = f"sqlite:///{tmp_path / 'incomplete.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=2, runs=3, hostile=False)
    with eng.begin() as c:
        c.execute(sa.text("update run set status = 'cancelled' where id = :i"), {"i": info["run_ids"][0]})
    try:
        with StoreEnv(url):
            at = ok(app("pages/tradeoff.py", min_n="1").run())
            tr = _incomplete_trace(at)
            assert tr["name"] == "runs: cancelled / unfinished (not on the front)"
            assert "not on the front unless included" in tr["hovertemplate"]
            at.toggle(key="tradeoff.incomplete").set_value(True)
            ok(at.run())
            tr = _incomplete_trace(at)
            assert tr["name"] == "runs: cancelled / unfinished (may enter the front)"
            assert "included in the Pareto front on request" in tr["hovertemplate"]
            assert "not on the front" not in tr["name"] + tr["hovertemplate"]
    finally:
        eng.dispose()
