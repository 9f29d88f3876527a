"""What a generation run did: its statistics (``Run.params['stats']``), the kept/total table per filter
step, the contract's JSON summary, the list of runs and the per-item transcripts."""

from __future__ import annotations

from typing import TypedDict

from sqlalchemy.engine import Engine

from automonitor.errors import NotFound
from automonitor.timestamps import iso_utc
from automonitor.runs.generation.recipes import ItemRecord
from store import session_scope
from store.queries.rowtypes import GenerationStats

# The filter steps in order, each with the drop reasons it produces (for the kept/total table per step).
STEPS: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "sycophancy": [
        ("answered", ("generation_error", "incomplete_answer", "oversized_answer")),
        ("uncued_parsed", ("unparseable_uncued",)),
        ("uncued_right", ("uncued_wrong",)),
        ("cued_parsed", ("unparseable_cued",)),
        ("cued_followed_cue", ("cued_right", "cued_wrong_not_cue")),
        ("new_candidate", ("duplicate_candidate",)),
    ],
    "gaming": [
        ("answered", ("generation_error", "incomplete_answer", "oversized_answer")),
        ("code_found", ("no_code",)),
        ("incentive_shows_signal", ("no_signal",)),
        ("baseline_clean", ("baseline_also_games",)),
        ("new_candidate", ("duplicate_candidate",)),
    ],
}


FilterStep = TypedDict("FilterStep", {"step": str, "in": int, "out": int, "dropped": dict[str, int]})
"""One filter step of a run: items in, items out, drops by reason (:func:`filter_steps`)."""


class GenerationSummary(GenerationStats):
    """A generation run's summary (:func:`generation_summary`): its statistics, what its job asked for, its
    status and progress, and its filter steps."""

    generation_id: str
    status: str
    kind: str | None
    generator: str | None
    source: str | None
    cue: str | None
    incentive: str | None
    n: int
    done: int
    error: str | None
    steps: list[FilterStep]


class GenerationListing(GenerationSummary):
    """A :class:`GenerationSummary` with the run's creation, start and end times, ISO 8601 or ``None``
    (:func:`list_generations`)."""

    created_at: str | None
    started_at: str | None
    finished_at: str | None


def empty_stats() -> GenerationStats:
    """A run's statistics before its first item: prompts, kept, dropped (reason -> count), candidates
    added, calls, cache hits, tokens in/out, cost in USD."""
    return {
        "prompts": 0,
        "kept": 0,
        "dropped": {},
        "candidates_added": 0,
        "calls": 0,
        "cache_hits": 0,
        "tokens_in": 0,
        "tokens_out": 0,
        "cost_usd": 0.0,
    }


def filter_steps(kind: str | None, prompts: int, dropped: dict[str, int]) -> list[FilterStep]:
    """Kept/total per filter step: ``[{"step", "in", "out", "dropped": {reason: n}}]`` in order
    (``out`` of the last step = kept); ``[]`` for an unknown kind."""
    out: list[FilterStep] = []
    n = int(prompts)
    for name, reasons in STEPS.get(kind or "", []):
        d = {r: int(dropped.get(r, 0)) for r in reasons if dropped.get(r)}
        out.append({"step": name, "in": n, "out": n - sum(d.values()), "dropped": d})
        n -= sum(d.values())
    return out


def generation_summary(engine: Engine, run_id: str) -> GenerationSummary:
    """The contract's JSON: ``{"generation_id", "prompts", "kept", "dropped": {reason: int},
    "candidates_added"}`` (``candidates_added`` counts pairs) plus ``status``, ``generator``, ``kind``,
    ``source``, ``cue``/``incentive``, ``calls``, ``cache_hits``, ``tokens_in``, ``tokens_out``,
    ``cost_usd``, ``steps`` (:func:`filter_steps`). Raises NotFound."""
    from store.queries.generation import get_generation_run

    with session_scope(engine) as s:
        run = get_generation_run(s, run_id)
        if run is None:
            raise NotFound(f"no generation run {run_id!r}")
        params = run.params or {}
        st, job = params.get("stats") or empty_stats(), params.get("job") or {}
        return {
            "generation_id": run_id,
            "prompts": st["prompts"],
            "kept": st["kept"],
            "dropped": dict(st["dropped"]),
            "candidates_added": st["candidates_added"],
            "status": run.status,
            "kind": job.get("kind"),
            "generator": job.get("generator"),
            "source": job.get("source"),
            "cue": job.get("cue"),
            "incentive": job.get("incentive"),
            "n": run.n,
            "done": (params.get("progress") or {}).get("done", 0),
            "calls": st["calls"],
            "cache_hits": st["cache_hits"],
            "tokens_in": st["tokens_in"],
            "tokens_out": st["tokens_out"],
            "cost_usd": st["cost_usd"],
            "error": run.error,
            "steps": filter_steps(job.get("kind"), st["prompts"], st["dropped"]),
        }


def list_generations(engine: Engine) -> list[GenerationListing]:
    """Every generation run, newest first, as :func:`generation_summary` dicts (+ ``created_at``,
    ``started_at``, ``finished_at``: ISO 8601 or ``None``, a run not started or not ended yet)."""
    from store.queries.generation import generation_runs

    with session_scope(engine) as s:
        ids = generation_runs(s)
    return [
        {
            **generation_summary(engine, r),
            "created_at": iso_utc(c),
            "started_at": iso_utc(started),
            "finished_at": iso_utc(finished),
        }
        for r, c, started, finished in ids
    ]


def generation_items(engine: Engine, run_id: str) -> list[ItemRecord]:
    """The run's per-item transcripts (prompts, outputs, decision, reason). Raises NotFound."""
    from store.queries.generation import get_generation_run

    with session_scope(engine) as s:
        run = get_generation_run(s, run_id)
        if run is None:
            raise NotFound(f"no generation run {run_id!r}")
        return list((run.params or {}).get("items") or [])
