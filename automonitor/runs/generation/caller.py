"""One generator call with the judge cache, retries and accounting (:class:`GeneratorCaller`).

Calls go through the judge cache ``CacheEntry`` keyed by backend (``gen:<backend>``), model, base URL,
the prompt version, the messages' hash and the sampling parameters (max tokens, temperature, seed, the
backend's ``cache_params``). Transient failures are retried with exponential back-off (1, 2, 4 ... s,
at most 30 s, plus up to 1 s of jitter; at least the server's ``Retry-After`` up to 60 s) through
tenacity, ``job['max_attempts']`` attempts (default 4). Tokens and cost are summed per call.

A failure that every further call would meet too stops the whole run (:class:`GenerationStopped`, raised out
of the call: the run ends ``failed`` with its line, ``automonitor generate`` exits 1), instead of dropping
every item as ``generation_error`` in a run that then "finishes": a run-wide refusal (HTTP 401/402/403/404, a
quota or billing error), a ``Retry-After`` longer than a generation waits (:data:`RETRY_AFTER_MAX` s: waiting
that cap and sending again would meet the same refusal), and a call that failed after its retries (timeouts,
HTTP 5xx, rate limits, connections dropped) while no call of the run has been answered yet (a generator that
answers nothing). A connection never made (refused, DNS, TLS) while no call has been answered is not retried:
the run stops at its first such failure, and a refused one says so ("refused the connection"), as the judge's
runner stops a judge never reached within a few calls, instead of after 1 + 2 + 4 s of back-off. Once the
generator has answered, such a call is retried and then drops its item as before (``generation_error``), as does a
refusal of one call alone (HTTP 400).

A call's outcome is a :class:`CallOutcome` ``{"text", "finish_reason", "stop", "tokens_in", "tokens_out",
"cost_usd", "cached", "error"}``; ``text`` is ``None`` when the call failed after retries (``error`` says why,
at most 500 characters); ``stop`` is what the generator's backend declares its finish reason to be
(:attr:`~automonitor.runs.monitors.backend.Backend.stop_reasons`: ``normal``, ``truncated``, ``refusal``,
``filtered``), ``None`` for a reason its table does not declare (or a failed call).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import TYPE_CHECKING, Mapping, TypedDict

from sqlalchemy.engine import Engine

from automonitor.errors import AutomonitorError
from automonitor.runs.generation.job import PROMPT_VERSION, GenerationJob
from automonitor.runs.monitors import PermanentError, TransientError
from automonitor.runs.monitors.backend import Backend
from automonitor.runs.monitors.judgement import Generation, StopKind
from store import session_scope
from store.models import utcnow

if TYPE_CHECKING:
    from store.queries.rowtypes import CachedVerdict


#: the longest ``Retry-After`` (seconds) a generation call waits before it is sent again; a longer one stops the
#: run (:class:`GenerationStopped`)
RETRY_AFTER_MAX = 60.0
#: what the stop line tells the user to do once the cause is fixed (the answered calls are in the cache)
_AGAIN = "then give the same generate command again (the calls already answered come from the cache)"


class GenerationStopped(AutomonitorError):
    """A generation run stopped because its generator cannot answer any further call (module docstring): the
    one line says what the generator answered, where (the base URL, redacted) and the fix."""

    @classmethod
    def of(cls, exc: TransientError | PermanentError, url: str | None, sent: int) -> GenerationStopped:
        """The stop for ``exc``: a :class:`~automonitor.runs.runner.retries.WaitTooLong`, another run-wide
        :class:`PermanentError`, or a :class:`TransientError` after retries while no call has been answered
        (``sent``: the requests sent so far, retries included)."""
        from automonitor.runs.params import redact_url
        from automonitor.runs.runner.retries import WaitTooLong

        at = f"the generator at {redact_url(url) or 'the default endpoint'}"
        if isinstance(exc, WaitTooLong):
            ra, until = exc.retry_after, exc.until.strftime("%Y-%m-%d %H:%M:%S UTC")
            status = f" (HTTP {exc.status})" if exc.status else ""
            return cls(
                f"stopped: {at} asked{status} to wait {ra:g} s (Retry-After), longer than a generation waits "
                f"({exc.retry_after_max:g} s): {exc}; fix: wait until {until}, {_AGAIN}"
            )
        if isinstance(exc, PermanentError):
            return cls(
                f"stopped: {at} refused the call, as it would refuse every call: {exc}; fix: check --generator, "
                f"--base-url and the generator's key variable, {_AGAIN}"
            )
        if exc.kind == "connection" and exc.refused:
            return cls(
                f"stopped: {at} refused the connection ({exc}): nothing accepts connections at that address, none "
                f"of the {sent} request(s) sent so far was answered; fix: start the generator server or correct "
                f"--base-url, {_AGAIN}"
            )
        return cls(
            f"stopped: {at} gave no answer ({exc}, after its retries): none of the {sent} request(s) "
            f"sent so far was answered; fix: check that the generator server runs and serves "
            f"the model, {_AGAIN}"
        )


class CallOutcome(TypedDict):
    """One generator call's outcome (module docstring)."""

    text: str | None
    finish_reason: str | None
    stop: StopKind | None
    tokens_in: int
    tokens_out: int
    cost_usd: float
    cached: bool
    error: str | None


def failed_outcome(error: str) -> CallOutcome:
    """The outcome of a call that failed after retries (``text`` None, ``error`` cut to 500 characters)."""
    return {
        "text": None,
        "finish_reason": None,
        "stop": None,
        "tokens_in": 0,
        "tokens_out": 0,
        "cost_usd": 0.0,
        "cached": False,
        "error": error[:500],
    }


def stop_kind(stop_reasons: Mapping[str, StopKind], reason: object) -> StopKind | None:
    """What a backend's table ``stop_reasons`` declares the finish reason ``reason`` to be; ``None`` for a reason
    it does not declare or none given."""
    return stop_reasons.get(reason) if isinstance(reason, str) else None


def cached_outcome(hit: CachedVerdict, stop_reasons: Mapping[str, StopKind]) -> CallOutcome:
    """The outcome of a cache hit (a ``cache_lookup`` row): its text and tokens, no cost; its finish reason read
    with the backend's ``stop_reasons``."""
    meta, text, t_in, t_out = hit.get("meta"), hit["raw"], hit["tokens_in"], hit["tokens_out"]
    reason = meta.get("finish_reason") if isinstance(meta, dict) else None
    return {  # the cache row's columns: raw text or NULL, integer tokens
        "text": text if isinstance(text, str) else None,
        "finish_reason": reason if isinstance(reason, str) else None,
        "stop": stop_kind(stop_reasons, reason),
        "tokens_in": t_in if isinstance(t_in, int) else 0,
        "tokens_out": t_out if isinstance(t_out, int) else 0,
        "cost_usd": 0.0,
        "cached": True,
        "error": None,
    }


def cache_row(key: str, g: Generation) -> dict[str, object]:
    """The judge-cache row of a fresh generation (outcome ``generated``, the text in ``raw``)."""
    return {
        "key": key,
        "outcome": "generated",
        "score": None,
        "raw": g.text,
        "reason": None,
        "evidence": [],
        "pred_category": None,
        "severity": None,
        "tokens_in": g.tokens_in,
        "tokens_out": g.tokens_out,
        "cost_usd": g.cost_usd,
        "meta": {"finish_reason": g.finish_reason, **g.meta},
        "created_at": utcnow(),
    }


class GeneratorCaller:
    """One generation call with cache, retries (tenacity) and accounting; see the module docstring.

    Attributes:
        calls / cache_hits / tokens_in / tokens_out / cost: running totals over every call (cost in USD).
        sem: at most ``min(job['concurrency'], backend.max_concurrency)`` calls at once.
    """

    def __init__(self, engine: Engine, backend: Backend, job: GenerationJob):
        self.engine, self.backend, self.job = engine, backend, job
        self.calls = self.cache_hits = self.tokens_in = self.tokens_out = 0
        self.answered = 0  # calls the generator answered in this process, cache hits not counted (a failure before any stops the run)
        self.cost = 0.0
        conc = min(int(job.get("concurrency") or 4), backend.max_concurrency or 64)
        self.sem = asyncio.Semaphore(max(1, conc))

    def _key(self, messages: list[dict[str, str]], max_tokens: int, temperature: float, seed: int | None) -> str:
        """The judge-cache key of one call (module docstring)."""
        from automonitor.runs.runner import cache_key

        h = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
        return cache_key(
            f"gen:{self.job['backend']}",
            self.job["model"],
            self.job.get("base_url"),
            PROMPT_VERSION,
            h,
            {"max_tokens": max_tokens, "temperature": temperature, "seed": seed, "config": self.backend.cache_params()},
        )

    def _count(self) -> None:
        self.calls += 1

    def _lookup(self, key: str) -> CachedVerdict | None:
        """The cache row of ``key`` or ``None``."""
        from store.queries.runs import cache_lookup

        with session_scope(self.engine) as s:
            return cache_lookup(s, [key]).get(key)

    def _remember(self, key: str, g: Generation) -> None:
        """Add a fresh generation to the totals and to the cache."""
        from store.queries.runs import cache_insert

        self.tokens_in += g.tokens_in
        self.tokens_out += g.tokens_out
        self.cost += g.cost_usd
        with session_scope(self.engine) as s:
            cache_insert(s, [cache_row(key, g)])

    def _retryable(self, exc: BaseException) -> bool:
        """Whether a failed attempt is sent again: a :class:`TransientError`, except a connection never made (refused,
        DNS, TLS: kind ``connection``, not ``reached``) while the generator has answered no call, which every further
        attempt meets at once (module docstring)."""
        if not isinstance(exc, TransientError):
            return False
        return bool(self.answered) or exc.kind != "connection" or exc.reached

    async def _generate(
        self, messages: list[dict[str, str]], max_tokens: int, temperature: float, seed: int | None
    ) -> Generation:
        """One backend call, retried on TransientError (module docstring), under the semaphore.

        Raises:
            TransientError: still failing after the last attempt. PermanentError: at once, and
                :class:`~automonitor.runs.runner.retries.WaitTooLong` (run-wide) for a ``Retry-After`` over
                :data:`RETRY_AFTER_MAX`.
        """
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

        from automonitor.runs.runner.retries import RetryPolicy

        # the run's back-off (RetryPolicy.wait_s) with its own times: 1, 2, 4 ... s, Retry-After up to 60 s
        policy = RetryPolicy(backoff_initial=1.0, backoff_max=30.0, retry_after_max=RETRY_AFTER_MAX)
        async with self.sem:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(max(1, self.job.get("max_attempts", 4))),
                wait=lambda s: policy.wait_s(s.outcome.exception() if s.outcome else None, s.attempt_number),
                retry=retry_if_exception(self._retryable),
                reraise=True,
            ):
                with attempt:
                    try:
                        return await self.backend.generate(
                            messages, self._count, max_tokens=max_tokens, temperature=temperature, seed=seed
                        )
                    except TransientError as exc:
                        too_long = policy.too_long(exc)  # waiting the cap would meet the same refusal
                        if too_long is not None:
                            raise too_long from exc
                        raise
        raise AssertionError("unreachable: tenacity either returns, retries or re-raises")

    async def __call__(
        self, messages: list[dict[str, str]], *, temperature: float = 0.0, seed: int | None = 0
    ) -> CallOutcome:
        """Answer ``messages`` (from the cache when the same call was made before); returns the call's
        outcome (module docstring). A failed call is reported in the outcome, unless it stops the run.

        Raises:
            GenerationStopped: a failure every further call would meet (module docstring)."""
        max_tokens = self.job["max_tokens"]
        key = self._key(messages, max_tokens, temperature, seed)
        hit = self._lookup(key)
        if hit is not None:
            self.cache_hits += 1
            return cached_outcome(hit, self.backend.stop_reasons)
        try:
            g = await self._generate(messages, max_tokens, temperature, seed)
        except (TransientError, PermanentError) as exc:
            if exc.run_wide if isinstance(exc, PermanentError) else not self.answered:
                raise GenerationStopped.of(exc, self.job.get("base_url"), self.calls) from exc
            return failed_outcome(str(exc))
        self.answered += 1
        self._remember(key, g)
        return {
            "text": g.text,
            "finish_reason": g.finish_reason,
            "stop": stop_kind(self.backend.stop_reasons, g.finish_reason),
            "tokens_in": g.tokens_in,
            "tokens_out": g.tokens_out,
            "cost_usd": g.cost_usd,
            "cached": False,
            "error": None,
        }
