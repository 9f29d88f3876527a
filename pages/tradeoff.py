"""Trade-off: the MR-FAR plane of all runs (filter by category / task / template), the Pareto front,
the paper's reported points, Pearson r, Wilson error bars; clicking a run opens its drill-down.
Score runs: ROC curves and a cost-ratio slider that moves the cost-minimising operating point."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from automonitor import metrics, views, vocab
from pages import _common as ui

PAGE = "tradeoff"
ui.require_workbench()
ALL = "all"
COST_STEPS = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]

st.title("Safety-utility trade-off")
st.caption("Each point is one monitor run. Lower-left is better: **miss rate** MR = FN/(TP+FN) (unsafe "
           "outputs let through) against **false alarm rate** FAR = FP/(TN+FP) (benign outputs "
           "flagged). Error bars: 95% Wilson intervals. Click a point to open its drill-down.")

url, ver = ui.db_url(), ui.version()
runs = ui.load_runs(url, ver)
if runs.empty:
    ui.empty_store_notice("runs")
    st.stop()

cat_key = ui.seed_state(PAGE, "category", ALL, valid=[ALL, *vocab.CATEGORIES])
task_key = ui.seed_state(PAGE, "task", ALL, valid=[ALL, *vocab.TASKS])
present_tpl = sorted(set(runs["template"]))
tpl_key = ui.seed_state(PAGE, "template", present_tpl, valid=present_tpl, multi=True)
ui.follow_options(tpl_key, present_tpl)
pol_key = ui.seed_state(PAGE, "invalid", "exclude", valid=vocab.INVALID_POLICIES)
rep_key = ui.seed_state(PAGE, "paper", True, cast=lambda v: v not in ("0", "false", "no"))
ed_key = ui.seed_state(PAGE, "edition", "paper", valid=list(vocab.EDITIONS))

f1, f2, f3, f4, f5 = st.columns([1.8, 1.2, 2.2, 1.3, 1.4], vertical_alignment="bottom")
category = f1.selectbox("Category", [ALL, *vocab.CATEGORIES], key=cat_key,
                        format_func=lambda c: "All categories" if c == ALL else vocab.CATEGORY_NAMES[c])
task = f2.selectbox("Task", [ALL, *vocab.TASKS], key=task_key,
                    format_func=lambda t: "All tasks" if t == ALL else vocab.TASK_NAMES[t])
templates = f3.multiselect("Templates", present_tpl, key=tpl_key)
invalid = f4.selectbox("Unscored outcomes", vocab.INVALID_POLICIES, key=pol_key,
                       help="exclude: left out of MR/FAR; as-flag: count as a flag; as-miss: count as a pass")
show_paper = f5.toggle("Paper", key=rep_key, help="The paper's reported MR/FAR (not measured here)")
edition = st.radio("Test-set edition", list(vocab.EDITIONS), key=ed_key, horizontal=True,
                   help="paper: mirror of the paper's composition; verified: only pairs whose label passed "
                        "the quality gates (runs judge one edition each)")
ui.sync_qp(PAGE, category=None if category == ALL else category, task=None if task == ALL else task,
           template=None if set(templates) == set(present_tpl) else (templates or ["none"]),
           invalid=None if invalid == "exclude" else invalid, paper=None if show_paper else "0",
           edition=None if edition == "paper" else edition)

cat = None if category == ALL else category
tsk = None if task == ALL else task
report = ui.load_report(url, ver, None, invalid, edition)
pts = views.tradeoff_points(report, cat, tsk, templates)
reported = views.reported_for(ui.load_reported(), cat, tsk, templates) if show_paper else None

scored = pts.dropna(subset=["mr", "far"])
r, p = metrics.pearson_r(list(scored["mr"]), list(scored["far"]))
front_ids = list(scored.loc[scored["on_front"], "run_id"]) if len(scored) else []
m1, m2, m3, m4 = st.columns(4)
m1.metric("Runs shown", f"{len(scored)}", help=f"{len(pts) - len(scored)} without MR/FAR in this slice")
m2.metric("On the Pareto front", f"{len(front_ids)}")
m3.metric("Pearson r (MR, FAR)", "–" if r is None else f"{r:+.2f}",
          help="Correlation of MR and FAR across the runs shown; the paper reports r = -0.54 over 22 monitors."
          + ("" if p is None else f" p = {p:.3g}."))
best = scored.assign(s=scored["mr"] + scored["far"]).sort_values("s").head(1)
m4.metric("Lowest MR + FAR", "–" if best.empty else f"{best.iloc[0]['s']:.3f}",
          help=None if best.empty else views.md_escape(f"{best.iloc[0]['monitor']} · {best.iloc[0]['template']} · "
                                                       f"{best.iloc[0]['run_id']}"))

fig = views.tradeoff_figure(scored, reported=reported, front=front_ids)
event = st.plotly_chart(fig, key=f"{PAGE}.chart", on_select="rerun", selection_mode="points",
                        width="stretch", config={"displaylogo": False})


def _open_drilldown(run_id: str) -> None:
    params = {"run": run_id}
    if cat:
        params["category"] = cat
    if tsk:
        params["task"] = tsk
    if invalid != "exclude":
        params["invalid"] = invalid
    st.switch_page(ui.PAGE_DRILLDOWN, query_params=params)


sel = (event.selection.points if event is not None and event.selection else []) or []
for point in sel:
    curve, idx = point.get("curve_number"), point.get("point_index", point.get("point_number"))
    if curve is None or idx is None or curve >= len(fig.data):
        continue
    trace = fig.data[curve]
    if trace.customdata is None or not str(trace.name).startswith("runs:"):
        continue  # the Pareto line or a paper point: nothing to drill into
    _open_drilldown(str(trace.customdata[idx][0]))

st.subheader("Runs in this slice")
table = pts[["run_id", "monitor", "template", "n", "tp", "fn", "fp", "tn", "unscored", "mr", "mr_lo", "mr_hi",
             "far", "far_lo", "far_hi", "on_front"]]
tev = st.dataframe(table, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                   key=f"{PAGE}.table",
                   column_config={c: st.column_config.NumberColumn(format="%.3f")
                                  for c in ("mr", "mr_lo", "mr_hi", "far", "far_lo", "far_hi")})
if tev is not None and tev.selection.rows:
    _open_drilldown(str(table.iloc[tev.selection.rows[0]]["run_id"]))
st.caption("Select a row (or click a point) to open the run's confusion matrix and samples.")

# --- score runs: ROC and operating point ---------------------------------------------------------
score_runs = [e for e in report["runs"] if e.get("auroc") is not None and e["template"] in templates]
st.subheader("Score runs: ROC and operating point")
if not score_runs:
    st.caption("No run in this selection gives P(misbehavior) scores (e.g. a logprob backend or imported "
               "predictions with a `score`).")
    st.stop()
labels = {e["run_id"]: f"{e['monitor']} · {e['template']} · {e['run_id']}" for e in score_runs}
roc_key = ui.seed_state(PAGE, "roc", list(labels)[:4], valid=list(labels), multi=True)
ui.follow_options(roc_key, list(labels))
cost_key = ui.seed_state(PAGE, "cost", 1.0, valid=COST_STEPS, cast=float)
c1, c2 = st.columns([3, 2])
chosen = c1.multiselect("Score runs", list(labels), key=roc_key, format_func=labels.get)
cost = c2.select_slider("Cost ratio (one miss costs as much as N false alarms)", COST_STEPS, key=cost_key,
                        format_func=lambda v: f"{v:g}")
ui.sync_qp(PAGE, roc=None if chosen == list(labels)[:4] else (chosen or ["none"]),
           cost=None if cost == 1.0 else f"{cost:g}")
if chosen:
    curves, ops, rows = {}, {}, []
    for rid in chosen:
        roc = ui.load_roc(url, ver, rid)
        sc = ui.load_scores(url, ver, rid)
        if roc.empty or sc.empty:
            continue
        op = metrics.operating_point(sc["label"].to_numpy(), sc["score"].to_numpy(float), cost)
        curves[labels[rid]] = roc
        if op:
            ops[labels[rid]] = op
            thr = op["threshold"]
            rows.append({"run": labels[rid], "AUROC": next(e["auroc"] for e in score_runs if e["run_id"] == rid),
                         "threshold": "flag nothing" if thr == float("inf") else f"{thr:.3f}",
                         "MR": op["mr"], "FAR": op["far"], "expected cost": op["expected_cost"]})
    st.plotly_chart(views.roc_figure(curves, operating=ops), key=f"{PAGE}.roc_chart", width="stretch")
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.3f")
                                    for c in ("AUROC", "MR", "FAR", "expected cost")})
        st.caption("Operating point: the score threshold minimising expected cost = ratio x prevalence x MR + "
                   "(1 - prevalence) x FAR (prevalence = share of misbehavior in the scored samples; "
                   "Metz 1978). Flag when score >= threshold.")
