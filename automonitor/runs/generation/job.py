"""A generation job: its validated options (``Run.params['job']``), its items, its generator backend and
its estimate before it starts (no network, nothing written).

The job is a JSON object, typed :class:`GenerationJob` (it is stored in ``Run.params`` and read back by
``generate resume``): ``kind``, ``generator`` (``backend:model``), ``backend``, ``model``, ``base_url``, ``source``, ``cue``
(sycophancy), ``incentive`` (gaming), ``limit``, ``samples_per_prompt``, ``raw``, ``max_tokens``,
``max_attempts``, ``concurrency``, ``prompt_version``.
"""

from __future__ import annotations

from typing import Sequence, TypedDict

from pydantic import BaseModel, ConfigDict
from typing_extensions import NotRequired

from automonitor.errors import InputError
from automonitor.runs.generation import tasks
from automonitor.runs.generation.incentives import load_incentive
from automonitor.runs.monitors import create_backend, generator_backends, parse_monitor_spec
from automonitor.runs.monitors.pricing import resolve_price
from automonitor.runs.monitors.backend import Backend
from automonitor.runs.params import redact_url

KINDS = ("sycophancy", "gaming")
DEFAULT_MAX_TOKENS = {"sycophancy": 512, "gaming": 768}
PROMPT_VERSION = "generation-v1"


def _check_numbers(limit: int | None, samples_per_prompt: int, max_tokens: int | None) -> None:
    """Raise InputError unless ``limit``, ``samples_per_prompt`` and ``max_tokens`` are at least 1."""
    if limit is not None and limit < 1:
        raise InputError("--limit must be at least 1", field="limit")
    if samples_per_prompt < 1:
        raise InputError("--samples-per-prompt must be at least 1", field="samples-per-prompt")
    if max_tokens is not None and max_tokens < 1:
        raise InputError("--max-tokens must be at least 1", field="max-tokens")


def _check_gaming(source: str, incentive: str | None) -> None:
    """Raise InputError unless ``incentive`` exists, ``source`` is a gaming source, the incentive applies
    to it and has a signal for its task type."""
    if incentive is None:
        raise InputError("generate gaming needs --incentive NAME", field="incentive")
    inc = load_incentive(incentive)
    if source not in tasks.GAMING_SOURCES:
        raise InputError(
            f"unknown gaming source {source!r}; choose one of {', '.join(tasks.GAMING_SOURCES)}", field="source"
        )
    if source not in inc.applies_to:
        raise InputError(
            f"incentive {incentive!r} does not apply to {source!r} (it applies to {', '.join(inc.applies_to)})",
            field="incentive",
        )
    if tasks.GAMING_TASK[source] not in inc.signal:
        raise InputError(
            f"incentive {incentive!r} has no signal for {tasks.GAMING_TASK[source]} tasks", field="incentive"
        )


class GenerationSpec(BaseModel):
    """The options of a generation job, one typed object shared by the CLI (``automonitor generate``), the
    app's launch form and the engine (:func:`automonitor.runs.generation.engine.create_generation`,
    :func:`estimate_generation`). Types are checked here (a wrong type raises pydantic's
    ``ValidationError``, a ``ValueError``); the domain rules (a known kind, a generator that can write,
    counts of at least 1, an incentive that fits its source) are checked by :func:`build_job`, which
    raises :class:`InputError` naming the CLI option.

    Attributes:
        kind: ``sycophancy`` | ``gaming``; generator: ``BACKEND[:MODEL]`` (not ``rules``).
        source: a sycophancy source (``bct_truthfulqa_cues``, ``turpin_bbh``, ``mmlu_moral_scenarios``) or a
            gaming source
            (``truthfulqa``, ``humaneval``, ``mbpp``, ``dfir``); cue: ``suggested_answer`` |
            ``are_you_sure`` (sycophancy); incentive: an incentive name (gaming).
        limit: the first N items of the source (``None``: all); samples_per_prompt: cued samples per
            question (sycophancy).
        base_url: the server of an OpenAI-compatible generator; max_tokens: per answer (``None``: 512
            sycophancy, 768 gaming); raw: the raw dir (``None``: ``$AUTOMONITOR_RAW``).
        max_attempts: tries per call (transient failures); concurrency: calls in flight.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    generator: str
    source: str
    cue: str | None = None
    incentive: str | None = None
    limit: int | None = None
    samples_per_prompt: int = 1
    base_url: str | None = None
    max_tokens: int | None = None
    raw: str | None = None
    max_attempts: int = 4
    concurrency: int = 4


class GenerationJob(TypedDict):
    """A validated generation job (:func:`build_job`; the module docstring); ``timeout``: seconds per
    generator call, when a stored job names one (300 otherwise)."""

    kind: str
    generator: str
    backend: str
    model: str
    base_url: str | None
    source: str
    cue: str | None
    incentive: str | None
    limit: int | None
    samples_per_prompt: int
    raw: str | None
    max_tokens: int
    max_attempts: int
    concurrency: int
    prompt_version: str
    timeout: NotRequired[float | None]


class GenerationEstimate(TypedDict):
    """What a generation job will cost at most (:func:`estimate_generation`)."""

    n: int
    calls: int
    prompt_tokens: int
    max_output_tokens: int
    est_cost_usd: float | None
    price_per_mtok: list[float]
    price_known: bool


def build_job(spec: GenerationSpec) -> GenerationJob:
    """Validate a generation spec and return the job dict (module docstring).

    Raises:
        InputError: unknown kind or backend, the ``rules`` backend, a bad base URL (or one for
            ``llamacpp``, or one carrying a credential: userinfo or a secret query value), a count below 1, a gaming job without a fitting incentive and source. The
            checks run in that order; the first failure is raised.
    """
    kind, source, cue, incentive, base_url = spec.kind, spec.source, spec.cue, spec.incentive, spec.base_url
    limit, samples_per_prompt, max_tokens = spec.limit, spec.samples_per_prompt, spec.max_tokens
    if kind not in KINDS:
        raise InputError(f"unknown generation kind {kind!r}; choose sycophancy or gaming", field="kind")
    gens = generator_backends()
    mon = parse_monitor_spec(spec.generator, field="generator", choices=gens)
    if mon.backend not in gens:
        raise InputError(f"the {mon.backend} backend cannot generate text; use {', '.join(gens)}", field="generator")
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise InputError(f"--base-url must be an http(s) URL, got {redact_url(base_url)!r}", field="base-url")
    if base_url and redact_url(base_url) != base_url:  # a generation job is stored as given: no secret in it
        raise InputError(
            f"--base-url {redact_url(base_url)} carries a credential; keys come only from the environment "
            "(OPENAI_API_KEY for openai, ANTHROPIC_API_KEY for anthropic)",
            field="base-url",
        )
    if mon.backend == "llamacpp" and base_url:
        raise InputError("--base-url does not apply to the llamacpp backend", field="base-url")
    _check_numbers(limit, samples_per_prompt, max_tokens)
    if kind == "gaming":
        _check_gaming(source, incentive)
    return {
        "kind": kind,
        "generator": mon.name,
        "backend": mon.backend,
        "model": mon.model,
        "base_url": base_url,
        "source": source,
        "cue": (cue or "suggested_answer") if kind == "sycophancy" else None,
        "incentive": incentive if kind == "gaming" else None,
        "limit": limit,
        "samples_per_prompt": samples_per_prompt,
        "raw": spec.raw,
        "max_tokens": max_tokens or DEFAULT_MAX_TOKENS[kind],
        "max_attempts": spec.max_attempts,
        "concurrency": spec.concurrency,
        "prompt_version": PROMPT_VERSION,
    }


def job_items(job: GenerationJob) -> list[tasks.SycophancyItem] | list[tasks.GamingTask]:
    """The job's items in source order (at most ``job['limit']``). Raises InputError (unreadable raw files)."""
    if job["kind"] == "sycophancy":
        return tasks.sycophancy_items(job["source"], job["cue"], job.get("raw"), job.get("limit"))
    return tasks.gaming_tasks(job["source"], job.get("raw"), job.get("limit"))


def job_backend(job: GenerationJob) -> Backend:
    """The generator backend of a job (``direct`` prompt builder, ``timeout`` from the job, default 300 s).

    Raises:
        InputError: missing API key or model file, bad parameter (no network call is made).
    """
    from automonitor.runs.prompts import PromptBuilder, load_template

    return create_backend(
        f"{job['backend']}:{job['model']}",
        base_url=job.get("base_url"),
        params={"timeout": float(job.get("timeout") or 300.0)},
        prompt=PromptBuilder(load_template("direct")),
    )


def _prompt_chars_and_calls(
    job: GenerationJob, items: Sequence[tasks.SycophancyItem | tasks.GamingTask]
) -> tuple[int, int]:
    """``(characters of every prompt sent, calls)`` of a job: sycophancy sends Q once and Q' K times per
    item; gaming sends the task with and without the incentive."""
    chars = calls = 0
    if job["kind"] == "sycophancy":
        k = job["samples_per_prompt"]
        for it in items:
            if isinstance(it, tasks.SycophancyItem):  # a sycophancy job's items all are
                chars += sum(len(m["content"]) for m in it.uncued) + k * sum(len(m["content"]) for m in it.cued)
                calls += 1 + k
        return chars, calls
    inc = load_incentive(job["incentive"])
    for t in items:
        if isinstance(t, tasks.GamingTask):  # a gaming job's items all are
            chars += len(t.prompt) + len(inc.render(t.prompt))
            calls += 2
    return chars, calls


def estimate_generation(spec: GenerationSpec) -> GenerationEstimate:
    """Estimate a generation job before starting it (no network, nothing written).

    Returns ``{"n", "calls", "prompt_tokens", "max_output_tokens", "est_cost_usd", "price_per_mtok",
    "price_known"}``: calls = n x (1 + samples_per_prompt) (sycophancy) or n x 2 (gaming); prompt tokens
    = characters/4 of the rendered prompts; output tokens = calls x max_tokens (an upper bound); cost =
    tokens x the price of the exact model id in ``automonitor/data/prices.json`` (0 for llamacpp); an
    unlisted model gives ``price_known: false`` and ``est_cost_usd: null`` (unknown).

    Raises:
        InputError: as :func:`automonitor.runs.generation.engine.create_generation`.
    """
    job = build_job(spec.model_copy(update={"base_url": None, "max_attempts": 1, "concurrency": 1}))
    items = job_items(job)
    chars, calls = _prompt_chars_and_calls(job, list(items))
    pr = resolve_price(job["model"], local=job["backend"] == "llamacpp")
    pin, pout = pr.input, pr.output
    ptok, otok = chars // 4, calls * job["max_tokens"]
    return {
        "n": len(items),
        "calls": calls,
        "prompt_tokens": ptok,
        "max_output_tokens": otok,
        "est_cost_usd": round((ptok * pin + otok * pout) / 1e6, 6) if pr.known else None,
        "price_per_mtok": [pin, pout],
        "price_known": pr.known,
    }
