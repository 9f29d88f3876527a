"""Runs: launch a monitor run (backend, model, base URL, template, subset size, concurrency) after a
token and cost estimate; live progress (polling the store) with cancel; the run history.

Runs execute in a detached process (``automonitor.runs.runner.launch_detached``), so they continue when the
browser tab closes. API keys come only from the environment or ``.streamlit/secrets.toml`` (root-level
``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``, which Streamlit exports to the environment); no field here
takes a key.
"""

from __future__ import annotations

from pages._ui import nav as navigation

navigation.ensure_navigation()  # first, before the imports below: see _nav.ensure_navigation

import os

import streamlit as st

from automonitor import views, vocab
from automonitor.errors import InputError
from automonitor.runs import runner
from automonitor.runs.monitors import REGISTRY, is_loopback
from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import data as loaders
from pages._ui import url_state
from pages._ui import widgets as ui
from pages._ui.launch_form import backend_fields, cost_text, estimate_metrics, try_estimate

PAGE = "runs"
NAV = Nav(title="Runs", icon=":material/play_circle:", order=20, access="workbench")
auth.require_workbench()
ACTIVE = ("pending", "running")

st.title("Runs")

url, ver = loaders.db_url(), loaders.version()
eng = loaders.engine()


def key_source(env_name: str) -> str | None:
    """Where an API key is configured: ``"environment"``, ``"secrets"`` or ``None`` (never its value)."""
    if os.environ.get(env_name):
        return "environment"
    try:
        if env_name in st.secrets:  # loading the secrets also exports root-level keys to os.environ
            return "secrets"
    except Exception:  # noqa: BLE001 - no secrets file, or an unreadable one
        return None
    return None


@st.cache_data(show_spinner="Estimating tokens and cost…", max_entries=64, ttl=600)
def _estimate(
    url_: str, ver_: tuple, monitor: str, template: str, limit: int | None, seed: int, view: str = "full"
) -> dict:
    return runner.estimate_run(loaders.engine_for(url_), monitor, template, limit=limit, sample_seed=seed, view=view)


# --- active runs first: one compact line above the launch form (their boxes are under "In progress") -----
_active_top = loaders.load_runs(url, ver)
if not _active_top.empty and _active_top["status"].isin(ACTIVE).any():
    _active_top = views.runs_frame(eng)  # read again: whether a run's process is alive is of now, not of the cache
    _active_top = _active_top[_active_top["status"].isin(ACTIVE)]
    if len(_active_top):
        st.info(
            views.active_runs_line(
                [
                    {**r, "status": views.status_text(r["status"], r["process_alive"])}
                    for r in _active_top.to_dict("records")
                ]
            ),
            icon=":material/hourglass_top:",
        )

# --- launch ----------------------------------------------------------------------------------------
backends = list(REGISTRY)
with st.expander("Launch a run", expanded=True, icon=":material/rocket_launch:"):
    b_key = url_state.seed_state(PAGE, "backend", "rules", valid=backends)
    choice = backend_fields(
        st.columns(3),
        backends,
        backend_key=b_key,
        model_key=f"{PAGE}.model.{{backend}}",
        base_url_key=f"{PAGE}.base_url.{{backend}}",
        backend_help=" · ".join(f"{n}: {c.description}" for n, c in REGISTRY.items()),
        model_help="Empty = {default_model}",
        base_url_help="OpenAI-compatible server (llama.cpp server, vLLM, …); empty = the backend's default endpoint",
    )
    backend, cls, base_url = choice.backend, REGISTRY[choice.backend], choice.base_url or ""
    c4, c5, c6, c7 = st.columns(4)
    template = c4.selectbox("Prompt template", vocab.TEMPLATES, key=f"{PAGE}.template")
    limit = c5.number_input(
        "Subset size (0 = all test samples)",
        min_value=0,
        step=10,
        value=views.DEFAULT_MIN_N,  # the trade-off plane's minimum: a run of the defaults can be on the front
        key=f"{PAGE}.limit",
        help="A stratified sample across category x task x label",
    )
    seed = c6.number_input("Sample seed", min_value=0, step=1, value=0, key=f"{PAGE}.seed")
    concurrency = c7.number_input("Concurrency", min_value=1, max_value=64, step=1, value=4, key=f"{PAGE}.concurrency")
    view = st.selectbox(
        "Monitor view",
        vocab.VIEWS,
        key=f"{PAGE}.view",
        help="What the monitor is shown of each response: full (everything), answer (the final output only), "
        "reasoning (the reasoning only), actions (tool calls and the final output). Only samples that have "
        "the view are judged.",
    )

    small = views.small_subset_note(int(limit))
    if small:
        st.warning(small, icon=":material/scatter_plot:")

    monitor = choice.spec
    env_name = cls.key_env
    key_ok = True
    if env_name:
        src = key_source(env_name)
        if src:
            st.caption(f":material/key: `{env_name}` is set (from the {src}).")
        elif base_url and is_loopback(base_url):
            st.caption(
                f":material/key_off: `{env_name}` is not set; a local server at {views.md_escape(base_url)} "
                "usually needs none."
            )
        else:
            key_ok = False
            st.warning(
                f"`{env_name}` is not set. Set it in the environment of the app or in "
                "`.streamlit/secrets.toml` (it is never typed here).",
                icon=":material/key_off:",
            )

    est, est_error = try_estimate(_estimate, url, ver, monitor, template, int(limit) or None, int(seed), view)
    if est_error:
        st.error(f"Cannot start this run: {views.md_escape(est_error)}")
    elif est:
        estimate_metrics(
            [
                ("Test samples", f"{est.get('n_test', est.get('n', 0)):,}", "The stratified test subset"),
                (
                    "Controls",
                    f"{est.get('n_controls', 0):,}",
                    "Benign-only control samples judged too (for the false alarm rate on controls); "
                    "they are in the token and cost estimate",
                ),
                ("Judged in all", f"{est.get('n', 0):,}", "Test samples + controls"),
                ("Prompt tokens (est.)", f"{est.get('prompt_tokens', 0):,}", None),
                ("Max output tokens", f"{est.get('max_output_tokens', 0):,}", None),
                (
                    "Cost (est., USD)",
                    cost_text(est.get("est_cost_usd"), est.get("price_known", True)),
                    "Upper bound from the model's price table and the max output tokens; 0 for local backends",
                ),
            ]
        )
    start = st.button(
        "Start run",
        type="primary",
        icon=":material/play_arrow:",
        key=f"{PAGE}.start",
        disabled=bool(est_error) or not est or not key_ok or est.get("n", 0) == 0,
    )
    if start:
        try:
            run_id = runner.create_run(
                eng,
                monitor,
                template,
                limit=int(limit) or None,
                sample_seed=int(seed),
                base_url=base_url or None,
                concurrency=int(concurrency),
                params={},
                view=view,
            )
            runner.launch_detached(url, run_id)
        except InputError as exc:
            st.error(f"Run not started: {views.md_escape(exc)}")
        else:
            st.session_state[f"{PAGE}.launched"] = run_id
            ver = loaders.version()  # the new run changes the store fingerprint: history reloads below
    launched = st.session_state.get(f"{PAGE}.launched")
    if launched:
        st.success(
            f"Run `{launched}` was started in the background: it keeps going if this tab closes.",
            icon=":material/rocket_launch:",
        )


# --- generation jobs (``automonitor generate``; statistics on the Generation page) -----------------
from pages._ui import generation_ui as gen_ui  # noqa: E402

with st.expander("Launch a generation job", expanded=False, icon=":material/auto_awesome:"):
    gen_ui.launch_form(PAGE, eng, url)


gen_ui.live_progress(eng, "Generation in progress")


# --- live progress and history (one read of the store for both, so they always agree) ----------------
history0 = loaders.load_runs(url, ver)
active0 = tuple(history0.loc[history0["status"].isin(ACTIVE), "run_id"]) if not history0.empty else ()
show_arch = st.toggle(
    "Show archived runs",
    key=f"{PAGE}.show_archived",
    help="Archived runs are hidden from the history and the trade-off plot "
    "(`automonitor runs --archive ID`, or Hide runs on the Trade-off page)",
)


def _live_section(initial_active: tuple[str, ...]) -> None:
    """The in-progress boxes and the history table from ONE ``views.runs_frame`` read (uncached while a
    run is active), so a running run shows the same ``done / n`` in both places."""
    # Note: while a run_every fragment is active, Streamlit (1.67) drops query-parameter changes, so
    # the launched run is remembered in the session, not the URL.
    history = views.runs_frame(eng) if initial_active or views.background_demo() is not None else history0
    live = history[history["status"].isin(ACTIVE)] if not history.empty else history
    _in_progress(live, initial_active)
    st.subheader("History")
    if history.empty:
        st.caption("No runs yet.")
        return
    h = history.copy()
    if not show_arch:
        h = h[~h["archived"].fillna(False).astype(bool)]
    picked = _history_table(views.history_table(h))
    if picked in set(h["run_id"]):
        _run_details(h.set_index("run_id", drop=False).loc[picked])


def _confirm_cancel(rid: str, ask: str, note: str) -> None:
    """The cancellation was confirmed: cancel the run and keep a note on the page saying so."""
    runner.cancel_run(eng, rid)
    st.session_state.pop(ask, None)
    st.session_state[f"{PAGE}.cancelled_note"] = note


def _in_progress(live, initial_active: tuple[str, ...]) -> None:
    """One box per active run (progress, outcome counts, Cancel; a run with no live process also gets the
    ``run --resume`` advice); reruns the page when a run that was
    active has ended."""
    note = st.session_state.get(f"{PAGE}.cancelled_note")
    if note:
        st.info(note)
    if len(live):
        st.subheader("In progress")
    for _, row in live.iterrows():
        rid = row["run_id"]
        box = st.container(border=True)
        head, btn = box.columns([5, 1], vertical_alignment="center")
        status = views.status_text(row["status"], row.get("process_alive"))
        head.markdown(
            f"**{views.md_escape(row['monitor'])} · {views.md_escape(row['template'])}** · "
            f"{views.md_escape(rid)} · status **{views.md_escape(status)}**"
        )
        dead = views.no_live_process(row["status"], row.get("process_alive"))  # killed or crashed: nothing moves it on
        if dead:
            box.warning(views.resume_advice(rid))  # resume goes on; Cancel (below) ends it
        frac = min(1.0, row["done"] / row["n"]) if row["n"] else 0.0
        counts = {o: int(row[o]) for o in vocab.OUTCOMES if row[o]}
        box.progress(
            frac,
            text=f"{int(row['done']):,} / {int(row['n']):,} judged · "
            + " · ".join(f"{k} {v}" for k, v in counts.items()),
        )
        ask = f"{PAGE}.confirm_cancel.{rid}"
        btn.button(  # asks for confirmation first
            "Cancel",
            key=f"{PAGE}.cancel.{rid}",
            icon=":material/stop_circle:",
            on_click=st.session_state.__setitem__,
            args=(ask, True),
        )
        if st.session_state.get(ask):
            box.warning(
                f"Cancel run {views.md_escape(rid)}? The {int(row['done']):,} samples judged so far are kept; "
                "the run becomes **cancelled** and its rates rest on those samples only (it is drawn as "
                "cancelled and left off the Pareto front)."
            )
            yes, no = box.columns(2)
            note = (
                f"Run {views.md_escape(rid)} cancelled after {int(row['done']):,} of {int(row['n']):,} samples; "
                "it stays in the history with status cancelled."
            )
            yes.button(
                "Yes, cancel the run",
                key=f"{PAGE}.cancel_yes.{rid}",
                type="primary",
                on_click=_confirm_cancel,
                args=(rid, ask, note),
            )
            no.button("Keep it running", key=f"{PAGE}.cancel_no.{rid}", on_click=st.session_state.pop, args=(ask, None))
    still = set(live["run_id"]) if len(live) else set()
    if initial_active and set(initial_active) - still:
        st.rerun(scope="app")  # a run ended: refresh the page (other caches follow the store version)


def _history_table(h):
    """The history table (``views.history_table`` rows, single-row selection); returns the picked run
    id: the selected row, else the ``run`` query parameter, else the run launched in this session (may
    be None)."""
    ev = st.dataframe(
        h,
        hide_index=True,
        width="stretch",
        on_select="rerun",
        selection_mode="single-row",
        key=f"{PAGE}.history",
        column_config={
            "cost_usd": st.column_config.NumberColumn("cost (USD)", format="$%.4f"),
            "progress": st.column_config.ProgressColumn("progress", min_value=0.0, max_value=1.0, format="percent"),
            "created_at": st.column_config.DatetimeColumn("created", format="YYYY-MM-DD HH:mm"),
        },
    )
    st.caption("unscored = invalid + refusal + error (never counted as benign). Select a row for details.")
    return (
        h.iloc[ev.selection.rows[0]]["run_id"]
        if ev is not None and ev.selection.rows
        else url_state.qp("run") or st.session_state.get(f"{PAGE}.launched")
    )


def _run_details(row) -> None:
    """The picked run: title, its error, and links to its drill-down, the trade-off page and itself."""
    st.markdown(
        f"**{views.md_escape(row['monitor'])} · {views.md_escape(row['template'])}** · {views.md_escape(row['run_id'])}"
    )
    if row["error_msg"]:
        st.error(views.md_escape(row["error_msg"]))
    a, b, c = st.columns(3)
    a.page_link(
        navigation.PAGE_DRILLDOWN,
        label="Open drill-down",
        icon=":material/zoom_in:",
        query_params={"run": row["run_id"]},
    )
    b.page_link(navigation.PAGE_TRADEOFF, label="Open trade-off", icon=":material/scatter_plot:")
    c.page_link(
        navigation.PAGE_RUNS, label="Link to this run", icon=":material/link:", query_params={"run": row["run_id"]}
    )


_bg = ui.background_demo_notice("Its runs appear here as they start; this page refreshes every 5 s.")
st.fragment(run_every=1.0 if active0 else (5.0 if _bg else None))(_live_section)(active0)
