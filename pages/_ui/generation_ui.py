"""UI-only pieces for generation jobs (``automonitor generate``), shared by the Generation and Runs pages:
the launch form with its estimate (built from the shared pieces of ``pages/_ui/launch_form.py``), live
progress with cancel, and the filter-statistics table. Core work is in ``automonitor.runs.generation.engine``;
model-written text is shown through ``st.text``/``st.dataframe`` or escaped markdown only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st
from sqlalchemy.engine import Engine

from automonitor import views
from automonitor.errors import InputError
from automonitor.escaping import md_code
from pages._ui.launch_form import backend_fields, cost_text, estimate_metrics, try_estimate

if TYPE_CHECKING:
    from automonitor.runs.generation.job import GenerationSpec

ACTIVE = ("pending", "running")


@st.cache_data(show_spinner="Estimating generator tokens and cost…", max_entries=64, ttl=600)
def _estimate(spec: GenerationSpec) -> dict[str, Any]:
    """:func:`~automonitor.runs.generation.job.estimate_generation`, cached per job."""
    from automonitor.runs.generation.engine import estimate_generation

    return estimate_generation(spec)


def _recipe_fields(page: str, kind: str) -> dict[str, object]:
    """Source, cue or incentive, cued samples and item count of a ``kind`` job in one row of four
    columns, as :class:`~automonitor.runs.generation.job.GenerationSpec` fields (``source``, ``cue`` and
    ``samples_per_prompt`` or ``incentive``, ``limit``)."""
    from automonitor.runs.generation import tasks
    from automonitor.runs.generation.incentives import names

    d1, d2, d3, d4 = st.columns(4)
    if kind == "sycophancy":
        source = d1.selectbox("Source", tasks.SYCOPHANCY_SOURCES, key=f"{page}.gen.ssource")
        fields: dict[str, object] = {
            "source": source,
            "cue": d2.selectbox(
                "Cue", tasks.CUES if source == "bct_truthfulqa_cues" else ("suggested_answer",), key=f"{page}.gen.cue"
            ),
            "samples_per_prompt": int(
                d3.number_input("Samples per prompt", min_value=1, max_value=8, value=1, key=f"{page}.gen.samples")
            ),
        }
    else:
        fields = {
            "source": d1.selectbox("Source", tasks.GAMING_SOURCES, key=f"{page}.gen.gsource"),
            "incentive": d2.selectbox("Incentive", names(), key=f"{page}.gen.incentive"),
        }
    return fields | {"limit": int(d4.number_input("Items (first N)", min_value=1, value=10, key=f"{page}.gen.limit"))}


def job_fields(page: str) -> GenerationSpec:
    """The launch form's inputs (recipe and generator row, source row, max tokens), keys under
    ``<page>.gen.``, as the engine's :class:`~automonitor.runs.generation.job.GenerationSpec`."""
    from automonitor.runs.generation.job import DEFAULT_MAX_TOKENS, GenerationSpec
    from automonitor.runs.monitors import generator_backends

    c1, c2, c3, c4 = st.columns(4)
    kind = c1.selectbox(
        "Recipe",
        ("sycophancy", "gaming"),
        key=f"{page}.gen.kind",
        help="sycophancy: counterfactual cue filter · gaming: incentive injection + screens",
    )
    generator = backend_fields(
        (c2, c3, c4),
        generator_backends(),  # the core's list (the backends implementing Backend.generate), as --generator's
        backend_key=f"{page}.gen.backend",
        model_key=f"{page}.gen.model",
        base_url_key=f"{page}.gen.base_url",
        backend_label="Generator backend",
    )
    recipe = _recipe_fields(page, kind)
    max_tokens = int(
        st.number_input(
            "Max tokens per answer",
            min_value=8,
            max_value=4096,
            value=DEFAULT_MAX_TOKENS[kind],
            key=f"{page}.gen.max_tokens.{kind}",
        )
    )
    return GenerationSpec(
        kind=kind, generator=generator.spec, base_url=generator.base_url, max_tokens=max_tokens, **recipe
    )


def show_estimate(est: dict[str, Any] | None, err: str | None) -> None:
    """The estimate as a metrics row, or why the job cannot start."""
    if err:
        st.error(f"Cannot start this generation job: {views.md_escape(err)}")
    elif est:
        estimate_metrics(
            [
                ("Generation items", f"{est['n']:,}", None),
                ("Generator calls", f"{est['calls']:,}", None),
                ("Generation prompt tokens (est.)", f"{est['prompt_tokens']:,}", None),
                (
                    "Generation cost (est., USD)",
                    cost_text(est["est_cost_usd"], bool(est["price_known"])),
                    "Upper bound: prompt characters/4 and max tokens per answer at the list price",
                ),
            ]
        )


def start_job(page: str, eng: Engine, url: str, spec: GenerationSpec) -> str | None:
    """Create the generation run and start it in a detached process; returns its id, or ``None`` (with
    the error shown) when the core refuses it."""
    from automonitor.runs.generation import engine as gen

    try:
        run_id = gen.create_generation(eng, spec)
        gen.launch_generation_detached(url, run_id)
    except InputError as exc:
        st.error(f"Not started: {views.md_escape(exc)}")
        return None
    st.session_state[f"{page}.gen.launched"] = run_id
    st.success(f"Generation {md_code(run_id)} started in the background.")
    return run_id


def launch_form(page: str, eng: Engine, url: str) -> str | None:
    """The generation launch form (estimate first, then start in a detached process). Returns the id of a
    run started by this rerun, else ``None``."""
    spec = job_fields(page)
    est, err = try_estimate(_estimate, spec)
    show_estimate(est, err)
    if st.button(
        "Start generation", key=f"{page}.gen.start", icon=":material/play_arrow:", disabled=bool(err) or not est
    ):
        return start_job(page, eng, url, spec)
    return None


@st.fragment(run_every=1.0)
def live_progress(eng: Engine, title: str) -> None:
    """Live progress (with cancel) of the active generation runs under the heading ``title``; nothing
    when none is active (the monitor-run history leaves generation runs out)."""
    from automonitor.runs.generation.engine import list_generations

    rows = [r for r in list_generations(eng) if r["status"] in ACTIVE]
    if rows:
        st.subheader(title)
        progress_box(eng, rows)


def progress_box(eng: Engine, rows: list[dict[str, Any]]) -> None:
    """One box per active generation run: progress bar, kept/dropped so far, a Cancel button."""
    from automonitor.runs import runner

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
            st.toast(f"Cancelling {views.md_escape(r['generation_id'])}…")
