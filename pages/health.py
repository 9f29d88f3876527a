"""Benchmark health: the audit of an edition (``automonitor audit``): trivial-baseline AUROC per slice with
flagged slices highlighted, train -> test leakage, tiny-diff pairs, false alarm rate on the controls."""

from __future__ import annotations

from pages._ui import nav as navigation

navigation.ensure_navigation()  # first, before the imports below: see _nav.ensure_navigation

import streamlit as st

from automonitor import views
from automonitor.data import audit
from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import data as loaders
from pages._ui import widgets as ui

PAGE = "health"
NAV = Nav(title="Benchmark health", icon=":material/health_and_safety:", order=60, access="workbench")
auth.workbench_page(
    NAV,
    "Can a trivial rule recover the gold labels? Baselines are trained on the train split and scored "
    f"on the edition's test set; a slice is flagged when one reaches {audit.flag_rule_text()}. "
    "A flagged slice measures the shortcut as much as the monitor: read its MR/FAR with care.",
)


@st.cache_data(show_spinner=False, max_entries=8)
def _load(url: str, fp: str, edition: str):
    return audit.cached_audit(loaders.engine_for(url), edition)


url = loaders.db_url()
edition = ui.edition_choice(
    PAGE,
    audit.EDITIONS,
    "paper: mirror of the paper's test composition; verified: pairs that pass the quality gates plus "
    "adjudicated pairs.",
)

with st.spinner("Auditing the edition (cached per store state)…"):
    doc = _load(url, audit.fingerprint(loaders.engine()), edition)

if not doc["slices"]:
    if doc["n_train"] == 0 and doc["controls"]["samples"] == 0:
        ui.empty_store_notice("samples")
    else:
        st.info(f"No test samples in edition {edition!r} yet.")
    st.stop()

table = audit.slices_table(doc)
flagged = int(table["flagged"].sum())
c1, c2, c3, c4, c5 = ui.metric_columns(5)
c1.metric("Flagged slices", f"{flagged} of {len(table)}")
c2.metric("Near-duplicate test pairs", f"{doc['leakage']['near_duplicate_pairs']:,}")
c3.metric("Shared conversations", f"{doc['leakage']['shared_conversations']:,}")
c4.metric(f"Pairs differing by <= {audit.TINY_DIFF_TOKENS} tokens", f"{doc['tiny_diff_pairs']:,}")
c5.metric("Control samples", f"{doc['controls']['samples']:,}")
st.caption(
    f"Test set: {views.md_escape(audit.test_set_text(doc.get('test_set')))}; "
    f"{doc['n_test']:,} test and {doc['n_train']:,} train samples."
)

st.subheader("Slices")


def _highlight(row):
    return ["background-color: rgba(255, 75, 75, 0.25)" if row["flagged"] else "" for _ in row]


AUROCS = ("length", "tfidf", "answer = suggestion")
shown = views.display_frame(table, {c: ".2f" for c in AUROCS})  # a missing AUROC: "—"
st.dataframe(
    shown.style.apply(_highlight, axis=1).format({c: "{:.2f}" for c in AUROCS if views.is_numeric(shown, c)}),
    hide_index=True,
    width="stretch",
    key=f"{PAGE}.slices",
    # what decides a flag first: at 1280 px only about seven columns fit (views.health)
    column_order=views.slice_column_order(shown.columns),
    column_config={
        "source": st.column_config.TextColumn(pinned=True),
        "answer = suggestion": st.column_config.Column(
            "ans = sugg", help="AUROC of the answer-equals-suggestion baseline", width="small"
        ),
        "length": st.column_config.Column(help="AUROC of the length baseline", width="small"),
        "tfidf": st.column_config.Column(help="AUROC of the TF-IDF baseline", width="small"),
        "flagged by": st.column_config.Column(help="the baselines whose AUROC flags the slice", width="medium"),
    },
)
st.caption(
    "Source `all` = the whole category x task cell. A flagged row is highlighted; `flagged by` names its "
    "baselines. Empty AUROC: not applicable or not computable (see notes)."
)
st.plotly_chart(audit.baselines_figure(doc), width="stretch", key=f"{PAGE}.baselines_fig")

left, right = st.columns(2)
with left:
    st.subheader("Leakage and tiny-diff pairs")
    st.plotly_chart(audit.leakage_figure(doc), width="stretch", key=f"{PAGE}.leak_fig")
    st.caption(
        doc["leakage"]["method"]["near_duplicate"]
        + "; shared conversations: "
        + doc["leakage"]["method"]["shared_conversations"]
        + "."
    )
with right:
    st.subheader("Controls (benign only)")
    fig = audit.controls_figure(doc)
    if fig is None:
        st.caption("No controls samples in the store: the false alarm rate on controls cannot be reported.")
    else:
        st.plotly_chart(fig, width="stretch", key=f"{PAGE}.controls_fig")
        st.caption(
            f"{doc['controls']['samples']:,} samples where the user's suggestion is correct and the model "
            "agrees: every flag is a false alarm."
        )

st.subheader("Tiers of the detector ladder")
tier_frame = views.tier_table(doc.get("tiers") or {})
if tier_frame.empty:
    st.caption(
        "No test pair of this edition carries a tier: build the benchmark (`automonitor build`) to run the ladder."
    )
else:
    st.dataframe(
        views.display_frame(tier_frame, {"implicit share": ".2f"}),
        hide_index=True,
        width="stretch",
        key=f"{PAGE}.tiers",
    )
    st.caption(
        "Pairs per cell: surface = some cheap detector of the build's ladder (TF-IDF and character n-gram probes, "
        "the rules monitor, static analysers, insecure idioms, test-literal and exit-call detectors, lexicons, "
        "MiniLM) separates the pair; implicit = none does. Filter samples by tier on the Samples page."
    )
if edition == "hard":
    st.subheader("What `hard` is certified against")
    st.markdown(views.hard_statement(doc.get("hard")))
