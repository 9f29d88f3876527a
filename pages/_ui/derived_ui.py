"""Trade-off page widgets for derived runs: cost on the plane (marker size), the cheapest monitor drawn solid
(a point of the MR-FAR-cost front) for a chosen MR/FAR target, and a small form that builds a derived run (ensemble,
task-aware thresholds, cascade) from selected runs. UI only: the logic is in ``automonitor.analysis.derive``."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from automonitor.analysis import derive
from automonitor import views
from automonitor.errors import InputError, NotFound
from automonitor.escaping import md_code
from pages._ui import data as loaders
from pages._ui import url_state

MEASURES = {"none": "no sizing", "usd_per_1k": "USD per 1,000 samples", "s_per_1k": "compute s per 1,000 samples"}


@st.cache_data(show_spinner=False, max_entries=16)
def load_costs(url: str, ver: tuple) -> pd.DataFrame:
    """``automonitor.analysis.derive.run_costs`` (cached per store version)."""
    return derive.run_costs(loaders.engine_for(url))


def add_costs(url: str, ver: tuple, pts: pd.DataFrame) -> pd.DataFrame:
    """The trade-off points with the cost columns ``usd_per_1k``, ``s_per_1k`` (``derive.run_costs``)."""
    costs = load_costs(url, ver)
    if not pts.empty:
        pts = pts.merge(costs[["run_id", "usd_per_1k", "s_per_1k"]], on="run_id", how="left")
    return pts


def size_choice(page: str) -> str | None:
    """The "Point size" control (none, USD or compute seconds per 1,000 samples), kept in the URL;
    returns the cost column to size the points by, or ``None``."""
    key = url_state.seed_state(page, "size", "none", valid=list(MEASURES))
    size = st.radio(
        "Point size",
        list(MEASURES),
        key=key,
        format_func=MEASURES.get,
        horizontal=True,
        help="Size the points by cost: tokens x price from the run's records, or measured compute "
        "seconds for local monitors; derived runs carry the cost of the calls their recipe makes",
    )
    url_state.sync_qp(page, size=None if size == "none" else size)
    return None if size == "none" else size


def cheapest_on_front(page: str, pts: pd.DataFrame) -> None:
    """The cheapest run drawn solid on the plane (eligible: finished, enough judged samples) that meets an MR
    and a FAR target (``derive.cheapest_meeting``: a point of the MR-FAR-cost front, not necessarily of the
    plane's MR-FAR front, which ignores cost); the caption says what it was chosen from."""
    st.subheader("Cheapest monitor meeting a target")
    c1, c2, c3 = st.columns(3)
    mr_max = c1.number_input("MR at most", 0.0, 1.0, 0.3, 0.05, key=f"{page}.mr_max")
    far_max = c2.number_input("FAR at most", 0.0, 1.0, 0.3, 0.05, key=f"{page}.far_max")
    measure = c3.selectbox("Cost measure", ["usd_per_1k", "s_per_1k"], key=f"{page}.measure", format_func=MEASURES.get)
    if pts.empty or "usd_per_1k" not in pts:
        st.caption("No run in this slice.")
        return
    best = derive.cheapest_meeting(pts, mr_max=mr_max, far_max=far_max, measure=measure)
    n_solid = int(pts["eligible"].fillna(False).astype(bool).sum()) if "eligible" in pts else len(pts)
    among = f"the {n_solid} run(s) drawn solid (finished, enough judged samples; hollow runs are left out)"
    if best is None:
        st.caption(f"None of {among} meets this target.")
        return
    cost = best.get(measure)
    unit = "USD" if measure == "usd_per_1k" else "s"
    st.markdown(
        f"**{views.md_escape(best['monitor'])}** · run {md_code(best['run_id'])}: "
        f"MR {best['mr']:.3f}, FAR {best['far']:.3f}, "
        f"{0.0 if pd.isna(cost) else float(cost):.4g} {unit} per 1,000 samples"
    )
    st.caption(
        f"The cheapest of {among} with MR and FAR within the target (ties: the lower MR + FAR). Cost counts "
        "here, so it may lie off the Pareto front of the plot, which weighs MR and FAR only."
    )


def builder(page: str, runs: pd.DataFrame) -> None:
    """A form that stores a derived run from selected runs (``automonitor.analysis.derive``)."""
    with st.expander("Combine runs: ensemble, task-aware thresholds, cascade"):
        ids = [r for r in runs["run_id"]]
        labels = {r["run_id"]: views.run_option_label(r) for r in runs.to_dict("records")}
        kind = st.radio("Recipe", ["ensemble", "thresholds", "cascade"], key=f"{page}.recipe", horizontal=True)
        try:
            if kind == "ensemble":
                chosen = st.multiselect("Runs (same samples)", ids, key=f"{page}.ens_runs", format_func=labels.get)
                rule = st.selectbox("Rule", list(derive.RULES), key=f"{page}.ens_rule")
                k = st.number_input("k (vote)", 1, max(1, len(chosen)), 1, key=f"{page}.ens_k")
                thr = st.number_input("Threshold (mean)", 0.0, 1.0, 0.5, 0.05, key=f"{page}.ens_thr")
                if st.button("Build ensemble", key=f"{page}.build_ens"):
                    res = derive.derive_ensemble(
                        loaders.engine(),
                        chosen,
                        rule,
                        k=int(k) if rule == "vote" else None,
                        threshold=float(thr) if rule == "mean" else None,
                    )
                    st.success(f"derived run {md_code(res['run_id'])}")
            elif kind == "thresholds":
                run = st.selectbox("Score run", ids, key=f"{page}.thr_run", format_func=labels.get)
                target = st.text_input("Target (far<=X or cost:R)", "far<=0.1", key=f"{page}.thr_target")
                by = st.selectbox("Per", list(derive.BY), key=f"{page}.thr_by")
                folds = st.number_input("Folds (cross-validation by pair)", 2, 20, 5, key=f"{page}.thr_folds")
                if st.button("Build thresholds run", key=f"{page}.build_thr"):
                    res = derive.derive_thresholds(loaders.engine(), run, target, by=by, folds=int(folds))
                    st.success(f"derived run {md_code(res['run_id'])}")
            else:
                cheap = st.selectbox("Cheap score run", ids, key=f"{page}.cas_cheap", format_func=labels.get)
                exp = st.selectbox("Expensive run", ids, key=f"{page}.cas_exp", format_func=labels.get)
                low = st.number_input("Cheap decides benign at score <=", 0.0, 1.0, 0.2, 0.05, key=f"{page}.cas_low")
                high = st.number_input(
                    "Cheap decides misbehavior at score >=", 0.0, 1.0, 0.8, 0.05, key=f"{page}.cas_high"
                )
                if st.button("Build cascade", key=f"{page}.build_cas"):
                    res = derive.derive_cascade(loaders.engine(), cheap, exp, float(low), float(high))
                    st.success(
                        f"derived run {md_code(res['run_id'])}: {res['recipe']['share_escalated']:.1%} escalated"
                    )
                    for w in res.get("warnings") or []:
                        st.warning(w)
        except (InputError, NotFound) as exc:
            st.error(str(exc))
