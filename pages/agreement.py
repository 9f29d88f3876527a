"""Agreement page (admins): the figures of ``automonitor agreement`` (the same function,
``automonitor.agreement.agreement``, with the same defaults), overall and per category x task with
bootstrap intervals, annotator-vs-annotator confusion matrices, time per item and progress."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from pages import _common as ui
from pages import _spans_ui

from automonitor import agreement as ag
from automonitor import annotation as ann
from automonitor.accounts import Account
from automonitor.errors import PermissionDenied
from automonitor.vocab import CATEGORY_NAMES, TASK_NAMES

PAGE = "agreement"
METRIC_NAMES = {
    "percent_agreement": "Raw agreement",
    "cohen_kappa": "Cohen's kappa",
    "krippendorff_alpha": "Krippendorff's alpha",
    "gwet_ac1": "Gwet's AC1",
    "pabak": "PABAK",
}


account = ui.require_login("Access denied: the agreement page is for admins.", admin=True)
engine = ui.engine()
st.title("Inter-annotator agreement")

with st.expander("Options (defaults match `automonitor agreement --json`)", expanded=False):
    c = st.columns(4)
    unsure = c[0].radio(
        "`unsure` labels",
        list(ag.UNSURE_POLICIES),
        key=f"{PAGE}.unsure",
        format_func={"category": "own category", "missing": "as missing"}.get,
    )
    n_boot = int(c[1].number_input("Bootstrap replicates", 0, 20000, ag.DEFAULT_BOOT, step=100, key=f"{PAGE}.n_boot"))
    seed = int(c[2].number_input("Bootstrap seed", 0, 2**31 - 1, ag.DEFAULT_SEED, key=f"{PAGE}.seed"))
    submitted_only = c[3].checkbox("Submitted labels only", key=f"{PAGE}.submitted_only")


@st.cache_data(show_spinner=False, max_entries=16)
def _agreement(
    url: str, fingerprint: tuple, who: Account, unsure: str, n_boot: int, seed: int, submitted_only: bool
) -> dict:
    """``automonitor.agreement.agreement`` cached per label-table fingerprint and options."""
    return ag.agreement(
        ui._engine_for(url), who, unsure=unsure, n_boot=n_boot, seed=seed, submitted_only=submitted_only
    )


try:
    from store.engine import db_url

    with st.spinner("Computing agreement…"):
        doc = _agreement(db_url(), ag.label_fingerprint(engine, account), account, unsure, n_boot, seed, submitted_only)
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
        st.dataframe(pd.DataFrame(progress), hide_index=True)
    st.stop()


def _fmt(v, ci=None) -> str:
    if v is None:
        return "n/a"
    return f"{v:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


st.caption(
    f"{doc['items']} items with at least two labels · {len(doc['annotators'])} annotators · "
    f"{doc['labels']} labels · `unsure` treated as "
    f"{'its own category' if doc['unsure'] == 'category' else 'a missing label'} · 95 % bootstrap "
    f"intervals over items ({doc['n_boot']} replicates, seed {doc['seed']})"
)
cols = st.columns(len(ag.METRICS) + 1)
cols[0].metric("Items", doc["items"])
for col, m in zip(cols[1:], ag.METRICS):
    ci = doc["ci"].get(m)
    col.metric(
        METRIC_NAMES[m],
        _fmt(doc[m]),
        help=f"95 % interval: {_fmt(ci[0])} – {_fmt(ci[1])}" if ci else "no interval (undefined or no bootstrap)",
    )

_spans_ui.span_agreement_section(doc)  # span F1 / token alpha (issue 21)

st.subheader("Overall and per category × task")
rows = []
for r in ag.flat_rows(doc):
    rows.append(
        {
            "Slice": r["slice"],
            "Category": CATEGORY_NAMES.get(r["category"], r["category"] or "all"),
            "Task": TASK_NAMES.get(r["task"], r["task"] or "all"),
            "Items": r["items"],
            **{
                METRIC_NAMES[m]: _fmt(r[m], (r[f"{m}_lo"], r[f"{m}_hi"]) if r[f"{m}_lo"] is not None else None)
                for m in ag.METRICS
            },
        }
    )
st.dataframe(pd.DataFrame(rows), hide_index=True, key=f"{PAGE}.table")

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
            "Median s / item": None if t["median_s"] is None else round(t["median_s"], 1),
            "Mean s / item": None if t["mean_s"] is None else round(t["mean_s"], 1),
        }
        for n, t in doc["time_per_item"].items()
    ]
)
prog = pd.DataFrame(progress).rename(columns=str.capitalize)
if not prog.empty:
    times = times.merge(prog, on="Annotator", how="outer")
st.dataframe(times, hide_index=True, key=f"{PAGE}.times")

st.download_button(
    "Download agreement JSON",
    json.dumps(doc, indent=2, default=str),
    file_name="agreement.json",
    mime="application/json",
    key=f"{PAGE}.download",
)
