"""Overview: benchmark composition (category x task x label, sources, splits, candidates) and runs."""

from __future__ import annotations

from pages._ui import nav as navigation

navigation.ensure_navigation()  # first, before the imports below: see _nav.ensure_navigation

import streamlit as st

from automonitor import views, vocab
from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import data as loaders
from pages._ui import url_state
from pages._ui import widgets as ui

PAGE = "overview"
NAV = Nav(title="Overview", icon=":material/dashboard:", order=10, access="workbench", default=True)
auth.workbench_page(
    NAV,
    "How reliably do LLM monitors catch unsafe, sycophantic or specification-gaming outputs "
    "without false alarms on benign ones? Paired samples: one misbehaving and one benign "
    "response to the same request.",
    heading="AutoMonitor-Bench",
)

url, ver = loaders.db_url(), loaders.version()
split_key = url_state.seed_state(PAGE, "split", "test", valid=["test", "train", "all"])
split = st.segmented_control(
    "Split", ["test", "train", "all"], key=split_key, help="Gold samples of this split (composition table and chart)."
)
split = split or "test"
url_state.sync_qp(PAGE, split=None if split == "test" else split)

edition = "paper"
if split == "test":
    edition = ui.edition_choice(
        PAGE,
        vocab.EDITIONS,
        "paper: the mirror of the paper's composition; verified: pairs whose label passed the quality gates, "
        "plus adjudicated pairs",
    )
comp = loaders.load_composition(url, ver, None if split == "all" else split, edition if split == "test" else None)
by_status = loaders.load_counts(url, ver, "status")
by_split = loaders.load_counts(url, ver, "split")

n_gold = int(comp["n"].sum()) if not comp.empty else 0
cand = int(by_status.loc[by_status["status"] == "candidate", "n"].sum()) if not by_status.empty else 0
rejected = int(by_status.loc[by_status["status"] == "rejected", "n"].sum()) if not by_status.empty else 0
runs = loaders.load_runs(url, ver)

by_source_kind = loaders.load_counts(url, ver, "label_source")
adjudicated = (
    int(
        by_source_kind.loc[
            (by_source_kind["label_source"] == "adjudicated") & (by_source_kind["status"] == "gold"), "n"
        ].sum()
    )
    if not by_source_kind.empty
    else 0
)
c1, c2, c3, c4, c5 = ui.metric_columns(5)
c1.metric(
    views.gold_tile_label(split, edition),
    f"{n_gold:,}",
    help="Split test: the chosen edition's test samples (the paper mirror by default; adjudicated "
    "pairs are in edition verified only). The Samples page counts every edition's members once.",
)
c2.metric("Pairs", f"{n_gold // 2:,}")
c3.metric("Candidates awaiting annotation", f"{cand:,}", help=f"{rejected:,} rejected by adjudication")
c4.metric(
    "Adjudicated (verified)",
    f"{adjudicated:,}",
    help="Samples accepted through annotation and adjudication: edition verified only",
)
c5.metric("Runs", f"{len(runs):,}")

if n_gold == 0 and by_status.empty:
    ui.empty_store_notice("samples")
else:
    st.subheader("Composition: category x task x label")
    if comp.empty:
        st.info(f"No gold samples in split {views.md_escape(split)}.")
    else:
        table = views.composition_pivot(comp)
        table.index = [vocab.CATEGORY_NAMES.get(i, i) for i in table.index]
        st.dataframe(views.display_frame(table), width="stretch")
        paper = {vocab.CATEGORY_NAMES[k]: v for k, v in vocab.PAPER_QUOTAS.items()}
        st.caption("Paper's test set: " + ", ".join(f"{k} {v:,}" for k, v in paper.items()) + " (3,010 samples).")

    chart_col, src_col = st.columns([1, 1])
    with chart_col:
        if not comp.empty:
            st.plotly_chart(views.composition_figure(comp), width="stretch", key=f"{PAGE}.comp_fig")
    with src_col:
        st.subheader("Sources")
        by_source = loaders.load_counts(url, ver, "source")
        if by_source.empty:
            st.caption("No samples.")
        else:
            piv = by_source.pivot_table(index="source", columns="status", values="n", aggfunc="sum", fill_value=0)
            piv["total"] = piv.sum(axis=1)
            st.dataframe(views.display_frame(piv.sort_values("total", ascending=False)), width="stretch")
        st.subheader("Splits and statuses")
        if not by_split.empty:
            d = by_split.copy()
            d["split"] = d["split"].fillna("(none: candidate)")
            st.dataframe(views.display_frame(d), hide_index=True, width="stretch")
            st.caption(
                "Every sample in the store: test/gold holds the members of all editions (paper, paper-r2, "
                "verified, hard), so it is larger than the edition tile above; a run's n also counts the "
                "benign-only controls it judged (split controls)."
            )

st.subheader("Runs so far")
if runs.empty:
    st.caption("No runs yet: launch one on the Runs page or with `automonitor run`.")
    st.page_link(navigation.PAGE_RUNS, label="Launch a run", icon=":material/play_circle:")
else:
    show = runs[["run_id", "monitor", "template", "status", "n", "done", "unscored", "cost_usd", "created_at"]].head(15)
    st.dataframe(
        views.display_frame(show),
        hide_index=True,
        width="stretch",
        column_config={"cost_usd": st.column_config.NumberColumn("cost (USD)", format="$%.4f")},
    )
    if len(runs) > 15:
        st.caption(f"… and {len(runs) - 15} more on the Runs page.")
