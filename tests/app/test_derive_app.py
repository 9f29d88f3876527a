"""Derived runs on a demo-like store: an ensemble, a thresholds run and a cascade appear on the
trade-off plot (AppTest), cost sizing and the cheapest run for a target, and the page's builder."""

from __future__ import annotations

import json

import pytest

import app_seed
from apptest_support import StoreEnv, app, ok, open_store


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from automonitor.analysis import derive

    url = f"sqlite:///{tmp_path_factory.mktemp('drv') / 'store.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=3, runs=3)  # rules, openai, llamacpp (r002 has scores)
    # a second score run standing in for a cheap probe (imported-style predictions with scores)
    app_seed.add_run(
        eng,
        info["samples"],
        monitor="probe:tfidf-lr",
        template="direct",
        run_id="r_probe",
        skill=0.8,
        scores=True,
        unscored=0.0,
        seed=5,
    )
    ens = derive.derive_ensemble(eng, ["r000", "r002", "r_probe"], "vote", k=2)["run_id"]
    thr = derive.derive_thresholds(eng, "r002", "far<=0.2", by="category", folds=3)["run_id"]
    cas = derive.derive_cascade(eng, "r_probe", "r001", 0.3, 0.7)["run_id"]
    with StoreEnv(url):
        yield {"url": url, "engine": eng, "derived": [ens, thr, cas]}
    eng.dispose()


def _chart_run_ids(at) -> set[str]:
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    ids = set()
    for tr in spec["data"]:
        if str(tr.get("name", "")).startswith("runs:"):
            ids |= {c[0] for c in tr.get("customdata", [])}
    return ids


def test_derived_runs_on_the_tradeoff_plot(demo):
    at = ok(app("pages/tradeoff.py").run())
    assert set(demo["derived"]) <= _chart_run_ids(at)
    table = at.dataframe[0].value.set_index("run_id")
    from automonitor import analysis

    rep = analysis.report(demo["engine"], demo["derived"], n_boot=10).to_dict()
    for e in rep["runs"]:
        assert table.loc[e["run_id"], "mr"] == pytest.approx(e["overall"]["mr"])
        assert table.loc[e["run_id"], "far"] == pytest.approx(e["overall"]["far"])

    # size by compute seconds: the cascade (probe everywhere + openai on the escalated share) is
    # drawn smaller than the 2-of-3 ensemble that pays for three runs on every sample
    at.radio(key="tradeoff.size").set_value("s_per_1k")
    ok(at.run())
    assert at.query_params.get("size") == "s_per_1k"
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    size = {}
    for tr in spec["data"]:
        if str(tr.get("name", "")).startswith("runs:") and isinstance(tr["marker"].get("size"), list):
            size.update({c[0]: s for c, s in zip(tr["customdata"], tr["marker"]["size"])})
    ens, _, cas = demo["derived"]
    assert size[cas] < size[ens]
    t = at.dataframe[0].value.set_index("run_id")
    assert t.loc[cas, "s_per_1k"] < t.loc[ens, "s_per_1k"]
    assert t.loc[ens, "s_per_1k"] == pytest.approx(3 * 5.0)  # three inputs at 5 ms a sample, per 1,000

    # cheapest run meeting a loose target is named: among the runs drawn solid (each of them at a minimum of 1
    # judged sample; at the default 100 every run of this 54-sample store is hollow and none is chosen), its
    # id shown as it is (no markdown escape in the code span: `drv\_cas\_...` before)
    at.query_params["min_n"] = "1"
    at.number_input(key="tradeoff.mr_max").set_value(1.0)
    at.number_input(key="tradeoff.far_max").set_value(1.0)
    ok(at.run())
    md = " ".join(m.value for m in at.markdown)
    from automonitor.analysis import derive
    from automonitor import views

    pts = views.tradeoff_points(analysis.report(demo["engine"], n_boot=10))
    best = derive.cheapest_meeting(pts, derive.run_costs(demo["engine"]), mr_max=1.0, far_max=1.0, measure="usd_per_1k")
    assert f"run `{best['run_id']}`" in md


def test_builder_form_creates_an_ensemble(demo):
    from automonitor import analysis

    before = set(analysis.runs_frame(demo["engine"])["run_id"])
    at = ok(app("pages/tradeoff.py").run())
    at.multiselect(key="tradeoff.ens_runs").set_value(["r000", "r001"])
    at.selectbox(key="tradeoff.ens_rule").select("or")
    at.button(key="tradeoff.build_ens").click()
    ok(at.run())
    new = set(analysis.runs_frame(demo["engine"])["run_id"]) - before
    assert len(new) == 1 and any(next(iter(new)) in s.value for s in at.success)
    at = ok(at.run())
    assert new <= _chart_run_ids(at)
    # a bad recipe: a clear error, nothing stored
    at.multiselect(key="tradeoff.ens_runs").set_value(["r000"])
    at.button(key="tradeoff.build_ens").click()
    ok(at.run())
    assert any("at least two" in e.value for e in at.error)
    assert set(analysis.runs_frame(demo["engine"])["run_id"]) - before == new


def test_derived_runs_open_in_drilldown_and_runs_pages(demo):
    for rid in demo["derived"]:
        at = ok(app("pages/drilldown.py", run=rid).run())
        assert not at.error, [e.value for e in at.error]
        assert at.selectbox(key="drilldown.run").value == rid
    at = ok(app("pages/runs.py").run())


@pytest.fixture
def copy_cascade(tmp_path):
    from automonitor.analysis import derive

    url = f"sqlite:///{tmp_path / 'store.db'}"
    eng = open_store(url)
    app_seed.seed_store(eng, pairs_per_cell=1, runs=3)  # r002 scores every scored sample in (0.2, 0.8)
    cas = derive.derive_cascade(eng, "r002", "r001", 0.0, 1.0)  # escalates everything: r001 again
    assert cas["recipe"]["share_escalated"] == 1.0
    with StoreEnv(url):
        yield cas["run_id"]
    eng.dispose()


def test_tradeoff_names_the_hidden_identical_derived_run(copy_cascade):
    at = ok(app("pages/tradeoff.py", min_n="1").run())
    assert copy_cascade not in _chart_run_ids(at)
    (note,) = [c.value for c in at.caption if "derived run hidden" in c.value]
    assert note.startswith("1 derived run hidden: ") and note.endswith("(Options) to draw it.")
    plain = note.replace("\\", "")
    assert f"{copy_cascade} gives the same verdicts as " in plain and "r001" in plain.split("same verdicts as")[1]
    assert "Show derived runs identical to an input" in plain
    # the control named in the caption draws it, and the caption goes
    at.toggle(key="tradeoff.duplicates").set_value(True)
    ok(at.run())
    assert copy_cascade in _chart_run_ids(at)
    assert not any("derived run hidden" in c.value for c in at.caption)
