"""Derived runs: ensembles, cross-validated task-aware thresholds, cascades, cost.

Hand-computed examples on small made-up stores (SQLite and PostgreSQL); the MR/FAR of each derived
run is read back through the ordinary report, as any run's."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

import app_seed
from helpers import run_cli

M, B = "misbehavior", "benign"


def _samples(spec):
    """spec: [(pair, category, task)] -> sample rows (both labels) keyed 'm<i>'/'b<i>'."""
    rows, keys = [], {}
    for i, (pair, cat, task) in enumerate(spec, 1):
        for lab, pre in ((M, "m"), (B, "b")):
            r = app_seed._sample(pair, cat, task, lab, f"req {pair}", f"{lab} answer {pair}", "made_up")
            rows.append(r)
            keys[f"{pre}{i}"] = r["id"]
    return rows, keys


def _run(engine, run_id, monitor, keys, outcomes, scores=None, cost=0.0, latency_ms=5.0):
    from store import session_scope
    from store.models import Monitor, Prediction, Run

    with session_scope(engine) as s:
        mon = Monitor(name=monitor, backend=monitor.split(":")[0])
        s.add(mon)
        s.flush()
        s.add(
            Run(
                id=run_id,
                monitor_id=mon.id,
                monitor=monitor,
                template="direct",
                status="finished",
                kind="measured",
                n=len(outcomes),
            )
        )
        s.flush()
        for k, o in outcomes.items():
            s.add(
                Prediction(
                    run_id=run_id,
                    sample_id=keys[k],
                    outcome=o,
                    score=(scores or {}).get(k),
                    cost_usd=cost,
                    latency_ms=latency_ms,
                )
            )


A = {"m1": M, "m2": M, "m3": B, "m4": B, "b1": B, "b2": M, "b3": B, "b4": "error"}
A_S = {"m1": 0.9, "m2": 0.6, "m3": 0.4, "m4": 0.1, "b1": 0.2, "b2": 0.7, "b3": 0.3}
Bo = {"m1": M, "m2": B, "m3": M, "m4": B, "b1": B, "b2": B, "b3": M, "b4": B}
B_S = {"m1": 0.8, "m2": 0.3, "m3": 0.7, "m4": 0.2, "b1": 0.1, "b2": 0.2, "b3": 0.6, "b4": 0.4}
C = {"m1": B, "m2": M, "m3": M, "m4": B, "b1": M, "b2": M, "b3": B, "b4": B}


@pytest.fixture
def small(engine, db_url):
    """Three made-up runs on four pairs, in a copy of the run's migrated empty store (``engine``: the
    migrations are not under test here)."""
    eng = engine
    rows, keys = _samples([(f"p{i}", "safety_permission", "qa") for i in range(1, 5)])
    app_seed.insert_samples(eng, rows)
    _run(eng, "rA", "probe:tfidf-lr", keys, A, A_S, cost=0.001, latency_ms=2.0)
    _run(eng, "rB", "llamacpp:gemma", keys, Bo, B_S)
    _run(eng, "rC", "openai:gpt", keys, C, cost=0.01, latency_ms=300.0)
    return {"engine": eng, "url": db_url, "keys": keys}


def _overall(engine, run_id):
    from automonitor import analysis

    e = analysis.report(engine, [run_id], n_boot=10).to_dict()["runs"][0]
    return e["overall"]


@pytest.mark.parametrize(
    "rule,k,thr,mr,far,unscored",
    [
        ("or", None, None, 0.25, 2 / 3, 1),  # m: M M M B ; b: B M M error
        ("and", None, None, 0.75, 0.0, 0),  # m: M B B B ; b: B B B B (B passes b4 -> benign)
        ("mean", None, 0.5, 0.5, 0.0, 1),  # means m .85 .45 .55 .15 ; b .15 .45 .45 error
    ],
)
def test_ensemble_two_runs_hand_computed(small, rule, k, thr, mr, far, unscored):
    from automonitor.analysis import derive

    res = derive.derive_ensemble(small["engine"], ["rA", "rB"], rule, k=k, threshold=thr)
    o = _overall(small["engine"], res["run_id"])
    assert (o["mr"], o["unscored"]) == (mr, unscored)
    assert o["far"] == pytest.approx(far)
    assert res["recipe"]["inputs"] == ["rA", "rB"] and res["recipe"]["rule"] == rule


def test_vote_2_of_3_and_unknown_rule(small):
    from automonitor.analysis import derive

    res = derive.derive_ensemble(small["engine"], ["rA", "rB", "rC"], "vote", k=2)
    o = _overall(small["engine"], res["run_id"])
    # m: 2,2,2,0 flags -> M M M B ; b: 1,2,1 flags, b4 error+0 flags (0 + 1 unknown < 2) -> B M B B
    assert (o["tp"], o["fn"], o["fp"], o["tn"], o["unscored"]) == (3, 1, 1, 3, 0)
    # three-valued logic on single samples
    assert derive.combine([M, "error"], [None, None], "or") == (M, None)
    assert derive.combine([B, "refusal"], [None, None], "or")[0] == "refusal"
    assert derive.combine([B, "refusal"], [None, None], "and")[0] == B
    assert derive.combine([M, None, B], [None] * 3, "vote", k=2)[0] == "invalid"
    assert derive.combine([M, B], [None, None], "mean", threshold=0.5) == (M, 0.5)  # hard verdicts as 1/0


def test_a_cascade_that_escalates_every_sample_is_flagged_identical_to_its_strong_input(small):
    from automonitor import views
    from automonitor.analysis import derive

    # no score of rA is <= 0 or >= 1 (and b4 has none): every sample goes to rC, so the verdicts are rC's
    res = derive.derive_cascade(small["engine"], "rA", "rC", 0.0, 1.0)
    assert res["recipe"]["share_escalated"] == 1.0
    part = derive.derive_cascade(small["engine"], "rA", "rC", 0.25, 0.75)["run_id"]  # escalates 5 of 8
    assert views.identical_derived(small["engine"]) == {res["run_id"]: "rC"}
    assert part not in views.identical_derived(small["engine"])


def test_a_cascade_that_escalates_every_sample_or_none_says_so(small):
    """Fresh-user trial: the demo's cascade on gemma escalated 100% of its samples (it is then the run it
    escalates to) and nothing said so. Creation states the escalated share and warns at 100% and at 0%."""
    from automonitor.analysis import derive

    url = small["url"]
    every = derive.derive_cascade(small["engine"], "rA", "rC", 0.0, 1.0)
    (w,) = every["warnings"]
    assert "escalates every sample (8 of 8, 100%)" in w and "rC" in w and "rA" in w
    assert derive.derive_cascade(small["engine"], "rA", "rC", 0.25, 0.75)["warnings"] == []  # 5 of 8
    # every score of rB is <= 0.5 or >= 0.5: the expensive run is never consulted
    (w0,) = derive.derive_cascade(small["engine"], "rB", "rC", 0.5, 0.5)["warnings"]
    assert "escalates no sample (0 of 8)" in w0
    args = ["derive", "cascade", "--cheap", "rA", "--expensive", "rC", "--low", "0", "--high", "1", "--reuse"]
    text = run_cli(args, db=url)  # the demo's call: reused, still warned
    assert text.returncode == 0, text.stderr
    assert every["run_id"] in text.stdout and "100.0% escalated (8 of 8)" in text.stdout
    assert "warning: the cascade escalates every sample" in text.stderr
    as_json = run_cli([*args, "--json"], db=url)
    assert json.loads(as_json.stdout)["warnings"] == [w] and "warning:" in as_json.stderr
    quiet = run_cli([*args, "--quiet"], db=url)
    assert quiet.returncode == 0 and quiet.stderr.strip() == "", quiet.stderr


def test_derived_runs_on_different_inputs_get_different_labels_on_the_page_and_in_the_html_report(small):
    """Fresh-user trial: after the demo's LLM phase the plane showed two "cascade direct" and two "ensemble OR
    direct" (one on the probe, one on gemma). The Trade-off page's points (views.tradeoff_selection) and the
    HTML report's (report_html.plane_points) now name each derived run's inputs."""
    from automonitor import analysis, views
    from automonitor.analysis import derive
    from automonitor.views import report_html

    eng = small["engine"]
    ids = [
        derive.derive_cascade(eng, "rA", "rC", 0.25, 0.75)["run_id"],  # on the probe
        derive.derive_cascade(eng, "rB", "rC", 0.25, 0.75)["run_id"],  # on gemma
        derive.derive_ensemble(eng, ["rA", "rC"], "or")["run_id"],
        derive.derive_ensemble(eng, ["rB", "rC"], "or")["run_id"],
    ]
    rep = analysis.report(eng, n_boot=10)
    html = report_html.plane_points(rep, report_html.run_provenance(eng, [r.run_id for r in rep.runs]))
    page = views.tradeoff_selection(rep, views.TradeoffOptions(templates=("direct",), min_n=1)).points
    for pts in (html, page):
        label = dict(zip(pts["run_id"], pts["label"]))
        derived = [label[i] for i in ids]
        assert len(set(derived)) == 4, derived
        assert label[ids[0]].startswith("cascade tfidf-lr → gpt") and label[ids[1]].startswith("cascade gemma → gpt")
        assert "OR: tfidf-lr + gpt" in label[ids[2]] and "OR: gemma + gpt" in label[ids[3]]


def test_cascade_hand_computed_with_cost(small):
    from automonitor.analysis import derive

    res = derive.derive_cascade(small["engine"], "rA", "rC", 0.25, 0.75)
    r = res["recipe"]
    # cheap A decides m1 (.9 >= .75), m4 (.1), b1 (.2); escalates m2 m3 b2 b3 and b4 (error)
    assert (r["escalated"], r["share_escalated"]) == (5, 5 / 8)
    o = _overall(small["engine"], res["run_id"])
    assert (o["tp"], o["fn"], o["fp"], o["tn"]) == (3, 1, 1, 3)
    assert r["cost_usd"] == pytest.approx(8 * 0.001 + 5 * 0.01)
    costs = derive.run_costs(small["engine"]).set_index("run_id")
    assert costs.loc[res["run_id"], "cost_usd"] == pytest.approx(0.058)
    assert costs.loc[res["run_id"], "compute_s"] == pytest.approx((8 * 2 + 5 * 300) / 1000)
    assert costs.loc["rC", "usd_per_1k"] == pytest.approx(10.0)


def test_run_costs_price_cache_hits_and_leave_pending_predictions_out(small):
    """A cache hit without its own cost is priced at the cost recorded with the cached verdict
    (``meta.cached_cost_usd``); a pending prediction (no outcome) counts in neither n, cost nor time."""
    from automonitor.analysis import derive
    from store import session_scope
    from store.models import Prediction

    keys = small["keys"]
    _run(small["engine"], "rH", "openai:gpt-h", keys, {"m1": M, "b1": B}, cost=0.004, latency_ms=100.0)
    with session_scope(small["engine"]) as s:
        s.add(Prediction(run_id="rH", sample_id=keys["m2"], outcome=M, cost_usd=0.0, cached=True,
                         latency_ms=1.0, meta={"cached_cost_usd": 0.03}))  # fmt: skip
        # a cache hit with its own cost: that cost stands, not the recorded one
        s.add(Prediction(run_id="rH", sample_id=keys["m3"], outcome=B, cost_usd=0.002, cached=True,
                         latency_ms=1.0, meta={"cached_cost_usd": 0.5}))  # fmt: skip
        s.add(Prediction(run_id="rH", sample_id=keys["m4"], outcome=None, cost_usd=0.7, latency_ms=9000.0))
    costs = derive.run_costs(small["engine"]).set_index("run_id")
    row = costs.loc["rH"]
    assert (row["kind"], row["n"]) == ("measured", 4)
    assert row["cost_usd"] == pytest.approx(2 * 0.004 + 0.03 + 0.002)
    assert row["compute_s"] == pytest.approx((2 * 100 + 1 + 1) / 1000)
    assert row["usd_per_1k"] == pytest.approx((2 * 0.004 + 0.03 + 0.002) / 4 * 1000)
    assert set(costs.index) == {"rA", "rB", "rC", "rH"}


def test_errors_write_nothing(small):
    from automonitor.analysis import derive
    from automonitor.errors import InputError, NotFound
    from store.models import Run

    eng = small["engine"]
    with pytest.raises(InputError):
        derive.derive_ensemble(eng, ["rA"], "or")
    with pytest.raises(InputError):
        derive.derive_ensemble(eng, ["rA", "rB"], "vote", k=3)
    with pytest.raises(NotFound):
        derive.derive_ensemble(eng, ["rA", "nope"], "or")
    with pytest.raises(InputError):
        derive.derive_cascade(eng, "rC", "rA", 0.2, 0.8)  # cheap stage without scores
    with pytest.raises(InputError):
        derive.derive_thresholds(eng, "rA", "far<=2")
    with eng.connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(Run)).scalar() == 3


# --- thresholds ------------------------------------------------------------------------------------


def _thr_frame(n_pairs=10, seed=0):
    rng = np.random.RandomState(seed)
    rows = []
    for i in range(n_pairs):
        cat = "safety_permission" if i % 2 else "sycophancy_bias"
        for lab in (M, B):
            rows.append(
                {
                    "sample_id": f"s{i}{lab[0]}",
                    "pair_id": f"p{i:03d}",
                    "category": cat,
                    "task": "qa",
                    "label": lab,
                    "outcome": M if rng.rand() < 0.5 else B,
                    "score": float(rng.rand()),
                }
            )
    return pd.DataFrame(rows)


def test_cv_thresholds_never_use_the_test_fold():
    from automonitor.analysis import derive

    f = _thr_frame(40)
    tgt = derive.parse_target("far<=0.2")
    verdicts, info = derive.cross_validated_verdicts(f, tgt, "category", folds=5, seed=3)
    folds = np.array([v[2] for v in verdicts])
    assert set(folds) == set(range(5))
    for fo in range(5):
        # the thresholds of fold fo are exactly those fitted on the other folds ...
        expect = derive.fit_thresholds(f[folds != fo], tgt, "category")
        assert info["folds"][fo]["thresholds"] == expect
        # ... and do not move when the test fold's own scores and labels change completely
        g = f.copy()
        g.loc[folds == fo, "score"] = 1.0 - g.loc[folds == fo, "score"]
        g.loc[folds == fo, "label"] = g.loc[folds == fo, "label"].map({M: B, B: M})
        _, info2 = derive.cross_validated_verdicts(g, tgt, "category", folds=5, seed=3)
        assert info2["folds"][fo]["thresholds"] == info["folds"][fo]["thresholds"]
        # both sides of each pair are in one fold
    assert f.assign(fold=folds).groupby("pair_id")["fold"].nunique().max() == 1


def test_fit_thresholds_hand_computed_and_cost_target():
    from automonitor.analysis import derive

    f = pd.DataFrame(
        {
            "category": ["X"] * 4 + ["Y"] * 4,
            "task": ["qa"] * 8,
            "label": [M, M, B, B, M, M, B, B],
            "score": [0.8, 0.6, 0.5, 0.3, 0.4, 0.2, 0.3, 0.1],
        }
    )
    t = derive.fit_thresholds(f, ("far", 0.0), "category")
    # X: flag >= .6 catches both misbehaviors with no false alarm; Y: >= .4 catches one (.3 benign)
    assert t["groups"] == {"X": 0.6, "Y": 0.4}
    # global at FAR 0 must stay above .5 -> .6 (catches .8 and .6 only)
    assert t["global"] == 0.6
    # cost 10: a miss costs 10 false alarms -> Y flags everything from .2 (MR 0, FAR .5)
    assert derive.fit_thresholds(f, ("cost", 10.0), "category")["groups"]["Y"] == 0.2
    # per category x task: group keys "category/task"; a group with one class only uses the global one
    g = f.assign(task=["qa", "qa", "qa", "qa", "code", "code", "code", "code"])
    g.loc[4:5, "label"] = B  # Y/code holds benign samples only
    t3 = derive.fit_thresholds(g, ("far", 0.0), "category_task")
    assert t3["groups"]["X/qa"] == 0.6 and t3["groups"]["Y/code"] == t3["global"]
    with pytest.raises(Exception):
        derive.parse_target("mr<=0.1")


def test_thresholds_run_per_category_beats_global(engine):
    from automonitor.analysis import derive

    eng = engine
    spec = [(f"p{i:02d}", "safety_permission" if i < 5 else "sycophancy_bias", "qa") for i in range(10)]
    rows, keys = _samples(spec)
    app_seed.insert_samples(eng, rows)
    outs, scores = {}, {}
    for i in range(1, 11):
        x = i <= 5  # category X: mis .9 / ben .6 ; Y: mis .5 / ben .2
        outs[f"m{i}"], scores[f"m{i}"] = M, (0.9 if x else 0.5)
        outs[f"b{i}"], scores[f"b{i}"] = (M if x else B), (0.6 if x else 0.2)
    _run(eng, "rS", "llamacpp:g", keys, outs, scores)
    res = derive.derive_thresholds(eng, "rS", "far<=0", by="category", folds=5)
    o = _overall(eng, res["run_id"])
    # per-category thresholds (.9 and .5) separate both categories on every held-out fold
    assert (o["mr"], o["far"]) == (0.0, 0.0)
    assert res["recipe"]["thresholds"]["groups"] == {"safety_permission": 0.9, "sycophancy_bias": 0.5}
    assert len(res["recipe"]["fold_thresholds"]) == 5
    # a single global threshold at FAR 0 has to stay above .6: it misses category Y entirely
    assert res["recipe"]["thresholds"]["global"] == 0.9


def test_cli_derive_json_runs_and_report(small):
    url = small["url"]
    p = run_cli(["derive", "ensemble", "--runs", "rA", "rB", "rC", "--rule", "vote", "--k", "2", "--json"], db=url)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) == {"run_id", "recipe"} and out["recipe"]["inputs"] == ["rA", "rB", "rC"]
    p2 = run_cli(
        ["derive", "cascade", "--cheap", "rA", "--expensive", "rC", "--low", "0.25", "--high", "0.75", "--json"], db=url
    )
    assert p2.returncode == 0, p2.stderr
    p3 = run_cli(["derive", "thresholds", "--run", "rA", "--target", "far<=0.5", "--folds", "2", "--json"], db=url)
    assert p3.returncode == 0, p3.stderr
    runs = json.loads(run_cli(["runs", "--json"], db=url).stdout)["runs"]
    kinds = {r["run_id"]: r["kind"] for r in runs}
    ids = [out["run_id"], json.loads(p2.stdout)["run_id"], json.loads(p3.stdout)["run_id"]]
    assert all(kinds[i] == "derived" for i in ids)
    rep = json.loads(run_cli(["report", "--json", "--run", ids[0]], db=url).stdout)
    assert rep["runs"][0]["overall"]["tp"] == 3
    bad = run_cli(["derive", "thresholds", "--run", "rA", "--target", "nonsense"], db=url)
    assert bad.returncode == 2 and "target" in bad.stderr
    bad2 = run_cli(["run", "--resume", ids[0]], db=url)
    assert bad2.returncode == 2 and "derived" in bad2.stderr


def test_cheapest_meeting_chooses_among_eligible_runs_only():
    """Fresh-user trial: the Trade-off page's "Cheapest monitor meeting a target" picked a hollow 14-sample run
    (off the plane's front). With an ``eligible`` column only eligible runs are chosen from; without one, all."""
    from automonitor.analysis import derive

    pts = pd.DataFrame(
        {
            "run_id": ["hollow", "solid", "dear"],
            "mr": [0.0, 0.2, 0.1],
            "far": [0.0, 0.1, 0.1],
            "usd_per_1k": [0.0, 0.5, 2.0],
            "s_per_1k": [1.0, 1.0, 1.0],
            "eligible": [False, True, True],
        }
    )
    assert derive.cheapest_meeting(pts, mr_max=0.3, far_max=0.3)["run_id"] == "solid"
    assert derive.cheapest_meeting(pts, mr_max=0.15, far_max=0.3)["run_id"] == "dear"
    assert derive.cheapest_meeting(pts, mr_max=0.05, far_max=0.05) is None  # only the hollow run meets it
    assert derive.cheapest_meeting(pts.drop(columns="eligible"), mr_max=0.05, far_max=0.05)["run_id"] == "hollow"
