"""Transfer: the cross-slice transfer matrix of trained probes (``automonitor probe transfer``) as a
heatmap (AUROC, MR or FAR) above the paper's full Figure 8 (MR and FAR, 7 training rows x 6 test
slices), the trivial baselines on the same test slices, and the paper's cells beside the measured ones
where the slices match. The cell train Safety code -> test Specification Gaming code (the paper's
negative-transfer finding) is outlined in both."""

from __future__ import annotations

from pages._ui import nav as navigation

navigation.ensure_navigation()  # first, before the imports below: see _nav.ensure_navigation

import streamlit as st

from automonitor import views
from automonitor.analysis import transfer
from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import url_state
from pages._ui import widgets as ui

PAGE = "transfer"
NAV = Nav(title="Transfer", icon=":material/grid_on:", order=70, access="workbench")
auth.workbench_page(
    NAV,
    "Rows: the slice a probe was trained on; columns: the test slice it judged. The outlined cell "
    "answers the paper's question: does training on Safety code carry over to Specification Gaming "
    "code? (The paper's LoRA judge: MR 0.86 there, up from 0.49 untuned.) Produced by "
    "`automonitor probe transfer --features tfidf|embed`.",
    heading="Cross-category transfer of trained monitors",
)

feat_key = url_state.seed_state(PAGE, "features", "tfidf", valid=["tfidf", "embed"])
met_key = url_state.seed_state(PAGE, "metric", "auroc", valid=["auroc", "mr", "far"])
c1, c2 = st.columns(2)
features = c1.selectbox("Features", ["tfidf", "embed"], key=feat_key)
metric = c2.selectbox(
    "Metric",
    ["auroc", "mr", "far"],
    key=met_key,
    format_func=lambda m: {"auroc": "AUROC", "mr": "Miss rate", "far": "False alarm rate"}[m],
)
url_state.sync_qp(
    PAGE, features=None if features == "tfidf" else features, metric=None if metric == "auroc" else metric
)

#: Seconds between two looks for the matrix while `make demo`'s background phase computes it
WAIT_EVERY_S = 5.0


def _wait_for_matrix(features: str) -> None:
    """Run every :data:`WAIT_EVERY_S` seconds (a fragment) while the background phase works: rerun the whole
    page once the matrix of ``features`` is saved, or once the phase has ended without it (the page then
    says how to compute it), so nobody has to reload."""
    if transfer.load_saved(features) is not None or views.background_demo() is None:
        st.rerun()


res = transfer.load_saved(features)
paper_metric = metric if metric in ("mr", "far") else "mr"
if res is None:
    # while `make demo`'s background phase computes the matrix, say so (as the Runs page does) rather
    # than ask for a command that is already running, and show the matrix as soon as it is saved
    if ui.background_demo_notice(
        "It is computing the transfer matrix of tfidf probes: this page shows it as soon as it is saved "
        f"(it looks every {WAIT_EVERY_S:.0f} s)."
    ):
        st.fragment(run_every=WAIT_EVERY_S)(_wait_for_matrix)(features)
    else:
        st.info(
            f"No transfer matrix for {features} probes yet: run `automonitor probe transfer --features {features}`."
        )
else:  # one above the other: side by side at 1280 px the cells were too narrow to read
    st.plotly_chart(transfer.heatmap(res, metric), width="stretch", key=f"{PAGE}.ours")
st.plotly_chart(transfer.paper_heatmap(paper_metric), width="stretch", key=f"{PAGE}.paper")
st.caption(
    "Below: the paper's Figure 8 (arXiv 2601.05752 v2, Appendix C), LoRA-tuned Qwen3-4B-Instruct-2507 judges "
    "on the paper's own data, reported, not measured here"
    + (" (the paper has no AUROC matrix: its MR is shown)" if metric == "auroc" else "")
    + ". Our probes are linear probes on our data: compare the pattern, not the numbers."
)
if res is not None:
    st.subheader("Trivial baselines on the same test slices (AUROC)")
    st.caption(
        "length: response length as the score (below 0.5: the misbehaving side is shorter); tfidf: "
        "in-slice TF-IDF + logistic regression, cross-validated by pair. A probe no better than these "
        "learned a shortcut."
    )
    st.dataframe(
        views.display_frame([{"test slice": k, **v} for k, v in res.get("baselines", {}).items()]), hide_index=True
    )
st.subheader("Paper Figure 8 beside this probe, cell for cell")
st.dataframe(views.display_frame(transfer.paper_frame(res)), hide_index=True)
