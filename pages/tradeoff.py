"""Trade-off: the MR-FAR plane of all runs (filter by category / task / template), the Pareto front,
the six reported points of a secondary summary (not the paper's v2 text), Pearson r, Wilson error bars; clicking a run opens its drill-down.
Score runs: ROC curves and a cost-ratio slider that moves the cost-minimising operating point."""

from __future__ import annotations

from pages._ui import nav as navigation

# first, before the imports below: a fresh server's legacy pages/ mode (the page run without app.py) reruns
# through app.py's navigation at once, instead of listing the pages/ files while this page imports
navigation.ensure_navigation()

import streamlit as st

from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import data as loaders

PAGE = "tradeoff"
NAV = Nav(title="Trade-off", icon=":material/scatter_plot:", order=30, access="workbench")
auth.require_workbench()
ALL = "all"
COST_STEPS = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
#: the status line a session sees under the title until the plane is drawn, the first time it shows a store version
LOADING = "Loading the runs and their report for the plane…"

# the Options popover sits on the title's row: the filter row below then has room at 1280 px for the
# Category options, both templates' chips and the "Unscored outcomes" label (tests/e2e/test_run_labels_browser.py)
head, f5 = st.columns([5.2, 1], vertical_alignment="bottom")
head.title("Safety-utility trade-off")

url, ver = loaders.db_url(), loaders.version()
# a session's first run on a store version loads (and on a fresh server imports and computes) for seconds before
# the plane: a status line says so at once, drawn before the page's heavier imports and loads, and is taken away
# once the plane is drawn (an emptied placeholder takes no room); later reruns on that version are quick and
# show none (no line appearing and going on every click)
_drawn_key = f"{PAGE}.drawn_version"
loading = st.empty()
if st.session_state.get(_drawn_key) != ver:
    loading.status(LOADING, state="running")

import pandas as pd  # after the status line: a fresh server's first run imports them for ~1 s

from automonitor.analysis import metrics, report_format
from automonitor import views, vocab
from pages._ui import url_state
from pages._ui import widgets as ui
from pages._ui import derived_ui
from pages._ui import plot_size

# the detector ladder's runs (cheap detectors the build writes, kind ladder) are off the plane by default
lad_key = url_state.seed_state(PAGE, "ladder", False, valid=[True], cast=lambda v: v == "1")
show_ladder = bool(st.session_state.get(lad_key, False))
runs = loaders.load_runs(url, ver, show_ladder)
if runs.empty:
    loading.empty()
    ui.empty_store_notice("runs")
    st.stop()

cat_key = url_state.seed_state(PAGE, "category", ALL, valid=[ALL, *vocab.CATEGORIES])
task_key = url_state.seed_state(PAGE, "task", ALL, valid=[ALL, *vocab.TASKS])
present_tpl = sorted(set(runs["template"]))
tpl_key = url_state.seed_state(PAGE, "template", present_tpl, valid=present_tpl, multi=True)
url_state.follow_options(tpl_key, present_tpl)
pol_key = url_state.seed_state(PAGE, "invalid", "exclude", valid=vocab.INVALID_POLICIES)
# the paper's reference points are off by default: nothing on the page backs a comparison of our runs with
# them (the HTML report draws them, with the caption that says where they come from)
rep_key = url_state.seed_state(PAGE, "paper", False, cast=lambda v: v in ("1", "true", "yes"))
minn_key = url_state.seed_state(PAGE, "min_n", views.DEFAULT_MIN_N, cast=lambda v: max(1, int(v)))
arch_key = url_state.seed_state(PAGE, "archived", False, cast=lambda v: v in ("1", "true", "yes"))
_early = None  # (the unscored policy, the report of every run) read before the sample sets
if st.session_state.get(_drawn_key) != ver:
    # a session's first run on a store version: the report first, then the sample sets from the predictions the
    # report read (a cold page read every prediction twice: for the report and for the sets); warm, both are hits
    from automonitor.analysis.from_store import predictions_read_once

    with predictions_read_once():
        _early = (st.session_state[pol_key], loaders.load_report(url, ver, st.session_state[pol_key]))
        sets = loaders.load_sample_sets(url, ver)
else:
    sets = loaders.load_sample_sets(url, ver)
found = set(sets["edition"]) if not sets.empty else set()
editions = [e for e in vocab.EDITIONS] + sorted(found - set(vocab.EDITIONS))  # hard is selectable before any run
ed_key = url_state.seed_state(PAGE, "edition", ALL, valid=[ALL, *editions])

f1, f2, f3, f4 = st.columns([2.3, 1.1, 2.4, 1.6], vertical_alignment="bottom")
cat, tsk = ui.slice_selects(f1, f2, cat_key, task_key, ALL)
templates = f3.multiselect("Templates", present_tpl, key=tpl_key)
invalid = f4.selectbox(
    "Unscored outcomes",
    vocab.INVALID_POLICIES,
    key=pol_key,
    help="invalid/refusal answers: exclude: left out of MR/FAR; as-flag: count as a flag; as-miss: count as a "
    "pass. An error (the judge never answered) is always left out.",
)
with f5.popover("Options", width="stretch"):
    show_paper = st.toggle(
        "Reported points (secondary summary)",
        key=rep_key,
        help="Six MR/FAR points reported by a secondary summary of the paper, not found in its v2 text "
        "(not measured here)",
    )
    min_n = st.number_input(
        "Minimum judged samples per slice for the Pareto front",
        min_value=1,
        step=10,
        key=minn_key,
        help=f"Runs below it are drawn hollow and left off the front (default {views.DEFAULT_MIN_N}).",
    )
    edition = st.selectbox(
        "Sample set (edition)",
        [ALL, *editions],
        key=ed_key,
        format_func=lambda e: "all editions (one front each)" if e == ALL else e,
    )
    show_archived = st.toggle("Show archived runs", key=arch_key)
    inc_key = url_state.seed_state(PAGE, "incomplete", False, valid=[True], cast=lambda v: v == "1")
    include_incomplete = st.toggle(
        "Cancelled / unfinished runs may enter the front",
        key=inc_key,
        help="Their rates rest on the samples judged before they stopped; by default they are drawn as grey "
        "crosses and left off the Pareto front.",
    )
    dup_key = url_state.seed_state(PAGE, "duplicates", False, valid=[True], cast=lambda v: v == "1")
    show_duplicates = st.toggle(
        views.SHOW_DUPLICATES_LABEL,
        key=dup_key,
        help="A derived run (ensemble, thresholds, cascade) whose verdicts equal one of its inputs' on "
        "every sample is the same monitor again; it is hidden by default.",
    )
    st.toggle(
        "Detector ladder runs",
        key=lad_key,
        help="The cheap detectors the build runs on the verified edition (word and character n-gram probes, "
        "rules, static analysers, lexicons...), one run each: what a monitor must beat. Off by default.",
    )
    size_col = derived_ui.size_choice(PAGE)
    # colour runs by localisation (the share of their TPs whose evidence hits a gold span)
    col_key = url_state.seed_state(PAGE, "colour", "template", valid=["template", "localisation"])
    colour_by = st.radio(
        "Colour runs by",
        ["template", "localisation"],
        key=col_key,
        horizontal=True,
        format_func={"template": "template", "localisation": "localised hits share"}.get,
        help="localised hits share: among a run's true positives, the share whose quoted evidence overlaps "
        "a gold span (evidence runs on samples with gold spans; others keep their template colour)",
    )
url_state.sync_qp(
    PAGE,
    category=cat,
    task=tsk,
    template=None if set(templates) == set(present_tpl) else (templates or ["none"]),
    invalid=None if invalid == "exclude" else invalid,
    paper="1" if show_paper else None,
    min_n=None if min_n == views.DEFAULT_MIN_N else str(int(min_n)),
    edition=None if edition == ALL else edition,
    archived="1" if show_archived else None,
    incomplete="1" if include_incomplete else None,
    duplicates="1" if show_duplicates else None,
    colour=None if colour_by == "template" else colour_by,
)

archived_ids = list(runs.loc[runs["archived"].fillna(False).astype(bool), "run_id"])
shown = loaders.load_tradeoff(
    url,
    ver,
    views.TradeoffOptions(
        invalid=invalid,
        category=cat,
        task=tsk,
        templates=tuple(templates),
        min_n=int(min_n),
        archived=tuple(archived_ids),
        show_archived=bool(show_archived),
        edition=None if edition == ALL else edition,
        show_paper=bool(show_paper),
        include_incomplete=bool(include_incomplete),
        show_duplicates=bool(show_duplicates),
        show_ladder=show_ladder,
    ),
)
raw_pts, scored, front_ids, reported, hidden_pts = shown.raw, shown.points, shown.front, shown.reported, shown.hidden
scored = derived_ui.add_costs(url, ver, scored)
loc = loaders.load_localisation(url, ver, invalid, cat, tsk) if colour_by == "localisation" else None
# runs of one monitor and template under several monitor views (run --view): their dotted line can be hidden
vl_key = url_state.seed_state(
    PAGE, "view_lines", True, valid=[False], cast=lambda v: v.lower() not in ("0", "false", "no")
)
show_view_lines = bool(st.session_state.get(vl_key, True))
if views.view_line_count(scored):
    show_view_lines = st.toggle(
        views.VIEW_LINES_LABEL,
        key=vl_key,
        help="A dotted line joins the points of one monitor and template judged under several monitor views "
        "(full, answer, reasoning, actions: `automonitor run --view`).",
    )
url_state.sync_qp(PAGE, view_lines=None if show_view_lines else False)  # synced as the value seed_state reads back
with st.container(gap=None):  # the measuring component takes no room above the chart
    # the plot area the browser draws (about 742 x 297 px at 1280x720): the labels are laid out for it
    plot_px = plot_size.measured_plot(f"{PAGE}.plot_size", f"{PAGE}.chart")
    fig = views.tradeoff_figure(
        scored,
        reported=reported,
        front=front_ids,
        height=400,
        size_col=size_col,
        localisation=loc,
        include_incomplete=bool(include_incomplete),
        view_lines=show_view_lines,
        plot_px=plot_px,
    )
    event = st.plotly_chart(
        fig,
        key=f"{PAGE}.chart",
        on_select="rerun",
        selection_mode="points",
        width="stretch",
        config={"displaylogo": False},
    )
loading.empty()  # the plane is drawn
st.session_state[_drawn_key] = ver
hover_only = views.hover_only_note(views.hover_only_labels(fig))
if hover_only:
    st.caption(hover_only)
_unplotted = views.unplotted_runs(
    raw_pts, scored, dict(zip(runs["run_id"], runs["status"])) if len(runs) else {}, archived_ids
)
if _unplotted:  # named, with why, as `report` lists them ([errors 100%], (failed)); not only in a tooltip
    st.caption(views.unplotted_runs_caption(_unplotted))

if loc is not None:
    n_loc = int(loc["localised_share"].notna().sum()) if len(loc) else 0
    where = f"category {cat}" if cat else (f"task {tsk}" if tsk else "all samples")
    st.caption(
        f"Colour: localised hits share ({views.md_escape(where)}) of {n_loc} run(s) with evidence on samples "
        "with gold spans; the other runs keep their template colour."
        + (" Per category x task cell it is not reported: the category's share is shown." if cat and tsk else "")
    )
if edition != ALL and edition not in found:
    st.info(
        f"No run judged edition {edition} yet: `automonitor run --edition {edition} ...` judges it; the table "
        "below shows every run's MR/FAR on the verified and hard members it judged."
    )
_all_report = _early[1] if _early is not None and _early[0] == invalid else loaders.load_report(url, ver, invalid)
_diff_rows = views.difficulty_rows(_all_report)
if _diff_rows:
    with st.expander(
        "Difficulty: MR / FAR on the verified and the hard members of each run", expanded=edition == "hard"
    ):
        st.caption(
            "hard = the verified pairs that trivial baselines (length, TF-IDF, tool calls, answer = suggestion) "
            "cannot separate, plus sycophancy controls in proportion (`automonitor audit --edition hard`)."
        )
        st.dataframe(pd.DataFrame(_diff_rows), hide_index=True, key=f"{PAGE}.difficulty")

# slices the audit flags (a trivial baseline separates the classes) are marked here too, for the edition(s) shown
audit_eds = views.audit_editions(None if edition == ALL else edition, scored["edition"] if len(scored) else ())
flags = views.edition_audit_flags(
    {e: loaders.load_audit(url, ver, e) for e in audit_eds} if len(scored) else {}, cat, tsk
)
if flags:
    ui.show_html(views.audit_badges_html(flags))
    st.caption(views.md_escape(views.audit_flags_note(flags, audit_eds)))

summary = views.set_summary(scored)
note = (
    "Lower-left is better: miss rate MR = FN/(TP+FN) against false alarm rate FAR = FP/(TN+FP); "
    f"95% Wilson error bars. {views.hollow_runs_note(scored, int(min_n))} "
    "Click a point to open its missed samples (FN)."
)
st.caption(note)
# the scored samples the project's errata mark wrong or doubtful, for the edition(s) on the plane (plain text)
for _line in report_format.errata_lines(_all_report, set(scored["edition"]) if len(scored) else ()):
    st.caption(views.md_escape(_line))
if not show_duplicates:  # the derived runs this view hides as copies of an input are named, not dropped silently
    run_names = {r["run_id"]: views.run_full_label({**r, "status": None}) for r in runs.to_dict("records")}
    hidden_note = views.hidden_duplicates_caption(hidden_pts, run_names)
    if hidden_note:
        st.caption(hidden_note)
if len(summary) > 1:
    st.warning(
        "These runs were measured on different sample sets: "
        + "; ".join(f"{views.md_escape(d['edition'])} ({d['runs']} runs)" for d in summary)
        + ". Each edition has its own Pareto front (line style); compare points across editions "
        "with care, or pick one edition under Options."
    )
elif summary:
    sets_txt = ", ".join(views.md_escape(x) for x in summary[0]["sample_sets"][:3])
    st.caption(f"Sample set: {sets_txt}" + (" …" if len(summary[0]["sample_sets"]) > 3 else ""))
front_sets = views.front_sample_sets(scored)
if len(front_sets) > 1:
    st.warning(
        "The Pareto front joins runs measured on different sample sets of the same edition (e.g. a "
        "stratified subset and the whole test set): "
        + "; ".join(views.md_escape(x) for x in front_sets)
        + ". Their MR/FAR are estimated on different samples; judge the same samples to compare them "
        "exactly."
    )


def _open_drilldown(run_id: str) -> None:
    params = {"run": run_id, "cell": "fn"}
    if cat:
        params["category"] = cat
    if tsk:
        params["task"] = tsk
    if invalid != "exclude":
        params["invalid"] = invalid
    st.switch_page(navigation.PAGE_DRILLDOWN, query_params=params)


sel = (event.selection.points if event is not None and event.selection else []) or []
for point in sel:
    curve, idx = point.get("curve_number"), point.get("point_index", point.get("point_number"))
    if curve is None or idx is None or curve >= len(fig.data):
        continue
    trace = fig.data[curve]
    if trace.customdata is None or not str(trace.name).startswith("runs:"):
        continue  # the Pareto line or a paper point: nothing to drill into
    _open_drilldown(str(trace.customdata[idx][0]))

# Pearson r over the runs eligible here (the hollow ones left out, as in the HTML report)
_elig0 = scored[scored["eligible"]] if len(scored) else scored
r, p = metrics.pearson_r(list(_elig0["mr"]), list(_elig0["far"])) if len(_elig0) else (None, None)
m1, m2, m3, m4 = st.columns(4)
m1.metric("Runs shown", f"{len(scored)}", help=f"{len(raw_pts) - len(scored)} without MR/FAR here or archived")
m2.metric("On the Pareto front", f"{len(front_ids)}")
m3.metric(
    "Pearson r (MR, FAR)",
    "–" if r is None else f"{r:+.2f}",
    help=f"Correlation of MR and FAR across the {len(_elig0)} runs shown with at least {int(min_n)} judged "
    "samples (hollow runs left out); the paper reports r = -0.54 over 22 monitors."
    + ("" if p is None else f" p = {p:.3g}."),
)
best = _elig0.assign(s=_elig0["mr"] + _elig0["far"]).sort_values("s").head(1) if len(_elig0) else _elig0
m4.metric(
    "Lowest MR + FAR",
    "–" if best.empty else f"{best.iloc[0]['s']:.3f}",
    help=None
    if best.empty
    else views.md_escape(f"{best.iloc[0]['monitor']} · {best.iloc[0]['template']} · {best.iloc[0]['run_id']}"),
)

# "Download report": the self-contained HTML report of the runs shown (automonitor.views.report_html)
rep_state = f"{PAGE}.html_report"
if st.button("Build HTML report", key=f"{PAGE}.build_report", help="One self-contained file to send: no server needed"):
    # imported here: its 26 modules (~0.17 s of a cold first run) serve only this button
    from automonitor.views import report_html

    with st.spinner("Building the HTML report…"):
        st.session_state[rep_state] = report_html.build_for(
            loaders.engine(), list(scored["run_id"]), invalid, edition=None if edition == ALL else edition
        ).encode("utf-8")
if st.session_state.get(rep_state):
    st.download_button(
        "Download report",
        st.session_state[rep_state],
        file_name="automonitor-report.html",
        mime="text/html",
        key=f"{PAGE}.download_report",
    )

st.subheader("Runs in this slice")
table = views.slice_runs_table(scored)
row = ui.picked_row(
    table,
    f"{PAGE}.table",
    column_config={
        c: st.column_config.NumberColumn(format="%.3f") for c in ("mr", "mr_lo", "mr_hi", "far", "far_lo", "far_hi")
    }
    | {c: st.column_config.NumberColumn(format="%.4g") for c in views.COST_COLUMNS if views.is_numeric(table, c)},
)
if row is not None:
    _open_drilldown(str(table.iloc[row]["run_id"]))
st.caption("Select a row (or click a point) to open the run's missed samples.")

# --- hide / archive runs (reversible) ---------------------------------------------------------------
with st.expander("Hide runs (archive)", expanded=False):
    all_ids = list(runs["run_id"])
    names = {r["run_id"]: views.run_option_label(r) for r in runs.to_dict("records")}
    chosen_arch = st.multiselect(
        "Archived runs (hidden from this plot and the run list; remove to show again)",
        all_ids,
        default=archived_ids,
        format_func=names.get,
        key=f"{PAGE}.archive.{len(archived_ids)}.{'-'.join(archived_ids)[:200]}",
    )
    if set(chosen_arch) != set(archived_ids):
        for rid in set(chosen_arch) - set(archived_ids):
            views.set_archived(loaders.engine(), rid, True)
        for rid in set(archived_ids) - set(chosen_arch):
            views.set_archived(loaders.engine(), rid, False)
        st.rerun()
derived_ui.cheapest_on_front(PAGE, scored)
derived_ui.builder(PAGE, runs)

# --- score runs: ROC and operating point ---------------------------------------------------------
score_runs = [
    e
    for e in loaders.load_score_runs(url, ver, invalid)
    if e["template"] in templates and e["run_id"] not in set(archived_ids)
]
st.subheader("Score runs: ROC and operating point")
if not score_runs:
    st.caption(
        "No run in this selection gives P(misbehavior) scores (e.g. a logprob backend or imported "
        "predictions with a `score`)."
    )
    st.stop()
status_of = dict(zip(runs["run_id"], runs["status"]))
labels = {e["run_id"]: views.run_option_label({**e, "status": status_of.get(e["run_id"])}) for e in score_runs}
full_labels = {
    labels[e["run_id"]]: views.run_full_label({**e, "status": status_of.get(e["run_id"])}) for e in score_runs
}
roc_key = url_state.seed_state(PAGE, "roc", list(labels)[:2], valid=list(labels), multi=True)
url_state.follow_options(roc_key, list(labels))
cost_key = url_state.seed_state(PAGE, "cost", 1.0, valid=COST_STEPS, cast=float)
# the chosen runs' labels get the whole width: at 1280 px two of them overflowed a 3/5 column, which
# then scrolled sideways and hid one
chosen = st.multiselect("Score runs", list(labels), key=roc_key, format_func=labels.get)
c2, _ = st.columns([2, 3])
cost = c2.select_slider(
    "Cost ratio (one miss costs as much as N false alarms)", COST_STEPS, key=cost_key, format_func=lambda v: f"{v:g}"
)
url_state.sync_qp(
    PAGE, roc=None if chosen == list(labels)[:2] else (chosen or ["none"]), cost=None if cost == 1.0 else f"{cost:g}"
)
if chosen:
    curves, ops, rows = {}, {}, []
    for rid in chosen:
        roc, sc = loaders.load_score_run(url, ver, rid)  # one read of the run's predictions
        if roc.empty or sc.empty:
            continue
        op = metrics.operating_point(sc["label"].to_numpy(), sc["score"].to_numpy(float), cost)
        curves[labels[rid]] = roc
        if op:
            ops[labels[rid]] = op
            auroc = next(e["auroc"] for e in score_runs if e["run_id"] == rid)
            rows.append(views.operating_point_row(labels[rid], auroc, op))
    st.plotly_chart(
        views.roc_figure(curves, operating=ops, full_labels=full_labels), key=f"{PAGE}.roc_chart", width="stretch"
    )
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        st.caption(
            "Operating point: the score threshold minimising expected cost = ratio x prevalence x MR + "
            "(1 - prevalence) x FAR (prevalence = share of misbehavior in the scored samples; "
            "Metz 1978). Flag when score >= threshold."
        )
