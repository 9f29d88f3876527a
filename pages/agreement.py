"""Agreement page (admins): the figures of ``automonitor agreement`` (the same function,
``automonitor.annotation.agreement.agreement``, with the same defaults), overall and per category x task with
bootstrap intervals, annotator-vs-annotator confusion matrices, time per item and progress."""

from __future__ import annotations

from pages._ui import nav as navigation

navigation.ensure_navigation()  # first, before the imports below: see _nav.ensure_navigation

import json

import pandas as pd
import streamlit as st

from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import data as loaders
from pages._ui import url_state
from pages._ui import widgets as ui
from pages._ui import spans_ui

from automonitor.annotation import agreement as ag
from automonitor import annotation as ann
from automonitor import views
from automonitor.annotation.accounts import Account
from automonitor.errors import PermissionDenied
from automonitor.vocab import CATEGORY_NAMES, TASK_NAMES

PAGE = "agreement"
NAV = Nav(title="Agreement", icon=":material/handshake:", order=20, access="admin")
METRIC_NAMES = {
    "percent_agreement": "Raw agreement",
    "cohen_kappa": "Cohen's kappa",
    "fleiss_kappa": "Fleiss' kappa",
    "krippendorff_alpha": "Krippendorff's alpha",
    "gwet_ac1": "Gwet's AC1",
    "pabak": "PABAK",
}


account = auth.require_login("Access denied: the agreement page is for admins.", admin=True)
engine = loaders.engine()
st.title("Inter-annotator agreement")

with st.expander("Options (defaults match `automonitor agreement --json`)", expanded=False):
    c = st.columns(5)
    unsure = c[0].radio(
        "`unsure` labels",
        list(ag.UNSURE_POLICIES),
        key=f"{PAGE}.unsure",
        format_func={"category": "own category", "missing": "as missing"}.get,
    )
    n_boot = int(c[1].number_input("Bootstrap replicates", 0, 20000, ag.DEFAULT_BOOT, step=100, key=f"{PAGE}.n_boot"))
    seed = int(c[2].number_input("Bootstrap seed", 0, 2**31 - 1, ag.DEFAULT_SEED, key=f"{PAGE}.seed"))
    submitted_only = c[3].checkbox(
        "Submitted labels only",
        value=True,
        key=f"{PAGE}.submitted_only",
        help="on by default, like `automonitor agreement`; off counts draft labels too (`--include-drafts`)",
    )
    min_items = int(
        c[4].number_input(
            "Minimum items per slice",
            1,
            10000,
            int(url_state.qp("min_items", str(ag.DEFAULT_MIN_ITEMS)) or ag.DEFAULT_MIN_ITEMS)
            if (url_state.qp("min_items") or "").isdigit()
            else ag.DEFAULT_MIN_ITEMS,
            key=f"{PAGE}.min_items",
            help="slices with fewer items are greyed 'too few items' and get no interval",
        )
    )
url_state.set_qp(min_items=None if min_items == ag.DEFAULT_MIN_ITEMS else min_items)

runs = loaders.load_runs(loaders.db_url(), loaders.version())
run_ids = [""] + (list(runs["run_id"]) if len(runs) else [])
run_key = url_state.seed_state(PAGE, "run", "", valid=run_ids)
labels_of = {r["run_id"]: views.run_option_label(r) for r in (runs.to_dict("records") if len(runs) else [])}
monitor_run = st.selectbox(
    "Compare a monitor run with the humans",
    run_ids,
    key=run_key,
    format_func=lambda r: "— none —" if not r else labels_of.get(r, r),
)
url_state.sync_qp(PAGE, run=monitor_run or None)


@st.cache_data(show_spinner=False, max_entries=16)
def _agreement(url: str, fingerprint: tuple, ver: tuple, who: Account, **options: object) -> dict:
    """``automonitor.annotation.agreement.agreement`` with ``options`` (its keyword arguments), cached per
    label-table fingerprint, store version and options."""
    return ag.agreement(loaders.engine_for(url), who, **options)


try:
    with st.spinner("Computing agreement…"):
        doc = _agreement(
            loaders.db_url(),
            ag.label_fingerprint(engine, account),
            loaders.version(),
            account,
            unsure=unsure,
            n_boot=n_boot,
            seed=seed,
            submitted_only=submitted_only,
            min_items=min_items,
            run_id=monitor_run or None,
        )
        progress = ann.annotation_progress(engine, account)
except PermissionDenied as exc:
    st.error(f"Access denied: {ui.md(exc)}")
    st.stop()

if doc["labels"] == 0:
    st.info(
        "No labels yet. Annotators label on the **Label** page (or import labels with "
        "`automonitor annotations import FILE`)."
    )
    if progress:
        st.dataframe(views.display_frame(progress), hide_index=True)
    st.stop()


def _fmt(v, ci=None) -> str:
    if v is None:
        return "n/a"
    return f"{v:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


TOO_FEW = "too few items"


ALL_AGREE = "all resamples agree"


def _cell(v, ci, too_few: bool, how: str | None = None) -> str:
    """A table cell: value with its interval, or the value marked 'too few items' (no interval), or
    'all resamples agree' when the bootstrap cannot vary (``how``: the ``ci_method`` of the metric)."""
    if too_few:
        return "n/a" if v is None else f"{v:.3f} ({TOO_FEW})"
    if ci is None and how == ag.NONE_ALL_AGREE:
        return f"{_fmt(v)} ({ALL_AGREE}: no interval)"
    return _fmt(v, ci) + (" (Wilson)" if how == ag.WILSON_ALL_AGREE else "")


def _with_ci(d: dict, m: str) -> tuple:
    """The arguments of :func:`_cell` for metric ``m`` of a comparison ``d`` (value, interval, too few, method)."""
    return d[m], d["ci"][m], d["too_few"], d.get("ci_method", {}).get(m)


def _interval_help(ci, how: str | None) -> str:
    """The help of a metric tile: how its interval was made (``how``: its ``ci_method``)."""
    if how == ag.WILSON_ALL_AGREE:
        return (
            "Every bootstrap resample gives the same value (all items agree), so the percentile interval "
            "would be a point: this is the Wilson (1927) score interval over the items instead"
        )
    if how == ag.NONE_ALL_AGREE:
        return (
            "Every bootstrap resample gives the same value (all items agree): the bootstrap cannot give an "
            "interval, and a point such as [1.00, 1.00] would read as certainty. See raw agreement's "
            "Wilson interval"
        )
    return "95 % bootstrap interval over items" if ci else "undefined or no bootstrap"


st.caption(
    f"{doc['items']} items with at least two labels · {len(doc['annotators'])} annotators · "
    f"{doc['labels']} labels · `unsure` treated as "
    f"{'its own category' if doc['unsure'] == 'category' else 'a missing label'} · 95 % bootstrap "
    f"intervals over items ({doc['n_boot']} replicates, seed {doc['seed']}) · slices under "
    f"{doc['min_items']} items are greyed as *{TOO_FEW}* and get no interval"
)
many = len(doc["annotators"]) >= 3
shown = [m for m in ag.METRICS if m != "fleiss_kappa" or many]
if doc["too_few"]:
    st.warning(
        f"Only {doc['items']} items: fewer than {doc['min_items']}, too few items for an interval. "
        "Treat every figure below as a rough indication."
    )
cols = ui.metric_columns(len(shown) + 1)
cols[0].metric("Items", doc["items"])
for col, m in zip(cols[1:], shown):
    ci = doc["ci"].get(m)
    how = doc.get("ci_method", {}).get(m)
    name = "Light's kappa" if (m == "cohen_kappa" and many) else METRIC_NAMES[m]
    if doc["too_few"]:
        value = "n/a" if doc[m] is None else f"{doc[m]:.3f}"
        col.metric(name, value, delta=TOO_FEW, delta_color="off", delta_arrow="off", help="no interval: too few items")
    else:
        col.metric(
            name,
            _fmt(doc[m]),
            delta=f"95 % CI [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else (ALL_AGREE if how else "no interval"),
            delta_color="off",
            delta_arrow="off",
            help=_interval_help(ci, how),
        )

spans_ui.span_agreement_section(doc)  # span F1 / token alpha

st.subheader("Overall and per category × task")
rows = [
    {
        "Slice": r["slice"],
        "Category": CATEGORY_NAMES.get(r["category"], r["category"] or "all"),
        "Task": TASK_NAMES.get(r["task"], r["task"] or "all"),
        "Items": r["items"],
        **{
            METRIC_NAMES[m]: _cell(
                r[m],
                (r[f"{m}_lo"], r[f"{m}_hi"]) if r[f"{m}_lo"] is not None else None,
                r["too_few"],
                r[f"{m}_ci_method"],
            )
            for m in shown
        },
    }
    for r in ag.flat_rows(doc, methods=True)
]
table = pd.DataFrame(rows)
few = [r["too_few"] for r in ag.flat_rows(doc)]


def _grey(row: pd.Series) -> list[str]:
    return ["color: #9e9e9e; font-style: italic" if few[row.name] else "" for _ in row]


st.dataframe(table.style.apply(_grey, axis=1), hide_index=True, key=f"{PAGE}.table")
st.caption(f"Grey italic rows: *{TOO_FEW}* (fewer than {doc['min_items']}); no interval is shown for them.")

mon = doc.get("monitor")
if mon:
    st.subheader("Monitor vs humans")
    st.caption(
        f"Run {ui.md(mon['run_id'])} ({ui.md(mon['monitor'])} · {ui.md(mon['template'])}): "
        f"{mon['judged']} labelled items judged, {mon['unscored']} unscored answers left out. Gold = the "
        "resolution finalize uses (latest adjudication, else unanimous labels)."
    )
    against = [("resolved gold", mon["vs_gold"]), *mon["vs_annotators"].items()]
    mrows = [
        {
            "Against": who,
            "Items": a["items"],
            "Cohen's kappa": _cell(*_with_ci(a, "cohen_kappa")),
            "Raw agreement": _cell(*_with_ci(a, "percent_agreement")),
        }
        for who, a in against
    ]
    st.dataframe(pd.DataFrame(mrows), hide_index=True, key=f"{PAGE}.monitor")
    mcols = st.columns(min(3, len(against)))
    for i, (who, a) in enumerate(against):
        with mcols[i % len(mcols)]:
            st.markdown(f"**{ui.md(who)}** (rows) vs **monitor** (columns)")
            lab = a["confusion"]["labels"]
            st.dataframe(pd.DataFrame(a["confusion"]["matrix"], index=lab, columns=lab))

st.subheader("Annotator vs annotator")
if not doc["confusion"]:
    st.caption("No two annotators share an item yet.")
for conf in doc["confusion"]:
    st.markdown(f"**{ui.md(conf['a'])}** (rows) vs **{ui.md(conf['b'])}** (columns) · {conf['items']} shared items")
    st.dataframe(pd.DataFrame(conf["matrix"], index=conf["labels"], columns=conf["labels"]))

st.subheader("Time per item and progress")
times = pd.DataFrame(
    [
        {
            "Annotator": n,
            "Labels": t["labels"],
            "Timed": t["timed"],
            "Median s / item": views.cell(t["median_s"], ".1f"),
            "Mean s / item": views.cell(t["mean_s"], ".1f"),
        }
        for n, t in doc["time_per_item"].items()
    ]
)
prog = pd.DataFrame(progress).rename(columns=str.capitalize)
if not prog.empty:
    times = times.merge(prog, on="Annotator", how="outer")
st.dataframe(views.display_frame(times), hide_index=True, key=f"{PAGE}.times")

st.download_button(
    "Download agreement JSON",
    json.dumps(doc, indent=2, default=str),
    file_name="agreement.json",
    mime="application/json",
    key=f"{PAGE}.download",
)
