"""UI-only pieces for generation jobs (``automonitor generate``), shared by the Generation and Runs pages:
the launch form with its estimate, live progress with cancel, and the filter-statistics table. Core work
is in ``automonitor.generation.engine``; model-written text is shown through ``st.text``/``st.dataframe``
or escaped markdown only."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from automonitor import views
from automonitor.errors import InputError

ACTIVE = ("pending", "running")
GEN_BACKENDS = ("openai", "anthropic", "llamacpp")


@st.cache_data(show_spinner="Estimating generator tokens and cost…", max_entries=64, ttl=600)
def _estimate(kind, generator, source, cue, incentive, limit, samples, max_tokens) -> dict:
    from automonitor.generation.engine import estimate_generation

    return estimate_generation(
        kind,
        generator,
        source=source,
        cue=cue,
        incentive=incentive,
        limit=limit,
        samples_per_prompt=samples,
        max_tokens=max_tokens,
    )


def launch_form(page: str, eng, url: str) -> str | None:
    """The generation launch form (estimate first, then start in a detached process). Returns the id of a
    run started by this rerun, else ``None``."""
    job = _job_inputs(page)
    est, err = _estimate_box(job)
    if st.button(
        "Start generation", key=f"{page}.gen.start", icon=":material/play_arrow:", disabled=bool(err) or not est
    ):
        return _start(page, eng, url, job)
    return None


def _job_inputs(page: str) -> dict:
    """The form's widgets: ``{kind, backend, generator, base_url, source, cue, incentive, samples, limit,
    max_tokens}`` (``cue`` for sycophancy jobs, ``incentive`` for gaming jobs, else ``None``)."""
    from automonitor.generation import engine as gen
    from automonitor.generation import tasks
    from automonitor.generation.incentives import names
    from automonitor.monitors import REGISTRY

    c1, c2, c3, c4 = st.columns(4)
    kind = c1.selectbox(
        "Recipe",
        ("sycophancy", "gaming"),
        key=f"{page}.gen.kind",
        help="sycophancy: counterfactual cue filter · gaming: incentive injection + screens",
    )
    backend = c2.selectbox("Generator backend", GEN_BACKENDS, key=f"{page}.gen.backend")
    model = c3.text_input("Model", key=f"{page}.gen.model", placeholder=REGISTRY[backend].default_model)
    base_url = c4.text_input(
        "Base URL",
        key=f"{page}.gen.base_url",
        disabled=not REGISTRY[backend].takes_base_url,
        placeholder="http://127.0.0.1:8080/v1" if backend == "openai" else "(default)",
    )
    d1, d2, d3, d4 = st.columns(4)
    cue = incentive = None
    if kind == "sycophancy":
        source = d1.selectbox("Source", tasks.SYCOPHANCY_SOURCES, key=f"{page}.gen.ssource")
        cue = d2.selectbox(
            "Cue", tasks.CUES if source == "bct_truthfulqa_cues" else ("suggested_answer",), key=f"{page}.gen.cue"
        )
        samples = int(
            d3.number_input("Samples per prompt", min_value=1, max_value=8, value=1, key=f"{page}.gen.samples")
        )
    else:
        source = d1.selectbox("Source", tasks.GAMING_SOURCES, key=f"{page}.gen.gsource")
        incentive = d2.selectbox("Incentive", names(), key=f"{page}.gen.incentive")
        samples = 1
    limit = int(d4.number_input("Items (first N)", min_value=1, value=10, key=f"{page}.gen.limit"))
    max_tokens = int(
        st.number_input(
            "Max tokens per answer",
            min_value=8,
            max_value=4096,
            value=gen.DEFAULT_MAX_TOKENS[kind],
            key=f"{page}.gen.max_tokens.{kind}",
        )
    )
    generator = f"{backend}:{model.strip()}" if model.strip() else backend
    return dict(
        kind=kind,
        backend=backend,
        generator=generator,
        base_url=base_url,
        source=source,
        cue=cue,
        incentive=incentive,
        samples=samples,
        limit=limit,
        max_tokens=max_tokens,
    )


def _estimate_box(job: dict) -> tuple[dict | None, str | None]:
    """Estimate the job (:func:`_estimate`) and show it as metrics, or show why it cannot start.
    Returns ``(estimate, error text)``, one of them ``None``."""
    est, err = None, None
    try:
        est = _estimate(
            job["kind"],
            job["generator"],
            job["source"],
            job["cue"],
            job["incentive"],
            job["limit"],
            job["samples"],
            job["max_tokens"],
        )
    except InputError as exc:
        err = str(exc)
    except Exception as exc:  # noqa: BLE001 - shown, nothing started
        err = f"{type(exc).__name__}: {exc}"
    if err:
        st.error(f"Cannot start this generation job: {views.md_escape(err)}")
    elif est:
        e1, e2, e3, e4 = st.columns(4)
        e1.metric("Generation items", f"{est['n']:,}")
        e2.metric("Generator calls", f"{est['calls']:,}")
        e3.metric("Generation prompt tokens (est.)", f"{est['prompt_tokens']:,}")
        e4.metric(
            "Generation cost (est., USD)",
            f"${est['est_cost_usd']:,.4f}" if est["price_known"] else "unknown price",
            help="Upper bound: prompt characters/4 and max tokens per answer at the list price",
        )
    return est, err


def _start(page: str, eng, url: str, job: dict) -> str | None:
    """Create the generation run and launch it detached; the run id, or ``None`` (error shown) when the
    job is refused."""
    from automonitor.generation import engine as gen

    try:
        run_id = gen.create_generation(
            eng,
            job["kind"],
            job["generator"],
            source=job["source"],
            cue=job["cue"],
            incentive=job["incentive"],
            limit=job["limit"],
            samples_per_prompt=job["samples"],
            base_url=job["base_url"].strip() or None,
            max_tokens=job["max_tokens"],
        )
        gen.launch_generation_detached(url, run_id)
    except InputError as exc:
        st.error(f"Not started: {views.md_escape(exc)}")
        return None
    st.session_state[f"{page}.gen.launched"] = run_id
    st.success(f"Generation `{run_id}` started in the background.")
    return run_id


def progress_box(eng, rows: list[dict]) -> None:
    """One box per active generation run: progress bar, kept/dropped so far, a Cancel button."""
    from automonitor import runner

    for r in rows:
        box = st.container(border=True)
        head, btn = box.columns([5, 1], vertical_alignment="center")
        head.markdown(
            f"**generation · {views.md_escape(r['kind'])} · {views.md_escape(r['generator'])}** · "
            f"{views.md_escape(r['generation_id'])} · status **{views.md_escape(r['status'])}**"
        )
        frac = (r["done"] / r["n"]) if r["n"] else 0.0
        box.progress(
            min(1.0, frac),
            text=f"{r['done']:,} / {r['n']:,} items · kept {r['kept']} · "
            + " · ".join(f"{views.md_escape(k)} {v}" for k, v in sorted(r["dropped"].items())),
        )
        if r["status"] in ACTIVE and btn.button(
            "Cancel", key=f"gen.cancel.{r['generation_id']}", icon=":material/stop_circle:"
        ):
            runner.cancel_run(eng, r["generation_id"])
            st.toast(f"Cancelling {r['generation_id']}…")


def stats_frame(rows: list[dict]) -> pd.DataFrame:
    """Filter statistics per generation run: prompts, kept, candidates added, one column per drop reason."""
    reasons = sorted({k for r in rows for k in r["dropped"]})
    out = []
    for r in rows:
        out.append(
            {
                "generation_id": r["generation_id"],
                "status": r["status"],
                "kind": r["kind"],
                "generator": r["generator"],
                "source": r["source"],
                "cue/incentive": r["cue"] or r["incentive"],
                "prompts": r["prompts"],
                "kept": r["kept"],
                "kept_rate": (r["kept"] / r["prompts"]) if r["prompts"] else None,
                "candidates_added": r["candidates_added"],
                **{f"dropped: {k}": r["dropped"].get(k, 0) for k in reasons},
                "calls": r["calls"],
                "cache_hits": r["cache_hits"],
                "cost_usd": r["cost_usd"],
                "created_at": r.get("created_at"),
            }
        )
    return pd.DataFrame(out)
