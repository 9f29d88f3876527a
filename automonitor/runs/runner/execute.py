"""Execute a run: judge its pending predictions with bounded, adaptive concurrency and retries.

:func:`execute_run` claims the run (checks, lease, status ``running``), builds the backend, runs the
asyncio :class:`~automonitor.runs.runner.workers.Execution` over the pending predictions page by page, and
finalises the run (status, totals, ``last_execution``).
"""

from __future__ import annotations

import contextlib
import asyncio
import gc
import threading
from dataclasses import dataclass
from typing import Any, Callable, Coroutine, Iterator, TypeVar, cast

from sqlalchemy.engine import Engine

from automonitor.data.monitor_views import view_of_run
from automonitor.errors import InputError, NotFound, RunInterrupted
from automonitor.jsontypes import JSONObject
from automonitor.runs.monitors import Backend, create_backend
from automonitor.runs import batch as batch_mod
from automonitor.runs.fewshot import run_prompt
from automonitor.runs.prompts import FewShotExample, PromptBuilder, Template
from automonitor.runs.lease import check_lease, lock_run, release, released_on_failure, take_lease
from automonitor.runs.params import backend_params, redact_url, stored_runner_settings
from automonitor.runs.status import finalize, summary
from automonitor.runs.runner.workers import RESUME_HINT, Execution, no_answer_message
from store import session_scope
from store.models import Run
from store.queries import runs as q
from store.queries import stream as stream_q

T = TypeVar("T")

__all__ = ["JOB_GC_THRESHOLD", "execute_run", "run_async", "young_gc_spaced"]

#: the cyclic garbage collector's youngest-generation threshold while a judge job executes (CPython's default
#: is 700): see :func:`young_gc_spaced`
JOB_GC_THRESHOLD = 20_000
_gc_lock = threading.Lock()
_gc_jobs = 0  # blocks of young_gc_spaced open now, in any thread
_gc_saved: tuple[int, int, int] | None = None  # the thresholds to restore, when the first block raised them


@contextlib.contextmanager
def young_gc_spaced() -> Iterator[None]:
    """Run the block with the collector's youngest threshold raised to :data:`JOB_GC_THRESHOLD` (from a lower,
    non-zero one; the older generations' thresholds as they are). A job keeps many answers, rows and
    connections' objects alive at once, so at the default threshold the collector's young passes went over
    them some 120 times per 3,010 requests and promoted them to the middle generation, traversed again: about
    3% of a job's CPU (``benchmarks/bench_scale.py``; 35-75 ms a job, against ~1.5 ms for the one young pass
    left at 20,000). Every object is still freed: acyclic ones by reference counting as before, cycles (a job
    makes a few hundred, none per request: its connections' transports) by the spaced passes or after the
    block. The thresholds are the process's: blocks open at once in several threads raise them once and the
    last to end restores them, unless something else changed them meanwhile."""
    global _gc_jobs, _gc_saved
    with _gc_lock:
        if _gc_jobs == 0:
            now = gc.get_threshold()
            if 0 < now[0] < JOB_GC_THRESHOLD:  # 0: automatic collection switched off by its threshold
                _gc_saved = (now[0], now[1], now[2])
                gc.set_threshold(JOB_GC_THRESHOLD, now[1], now[2])
        _gc_jobs += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_jobs -= 1
            if _gc_jobs == 0 and _gc_saved is not None:
                if gc.get_threshold() == (JOB_GC_THRESHOLD, _gc_saved[1], _gc_saved[2]):  # still ours
                    gc.set_threshold(*_gc_saved)
                _gc_saved = None


@dataclass
class _Claim:
    """What :func:`execute_run` read from the run when it claimed it (under the row lock)."""

    template: Template
    examples: list[FewShotExample]
    n_pending: int
    history: dict[int, list[dict[str, Any]]]
    done_before: int
    monitor: str
    base_url: str | None
    judge_params: JSONObject
    max_conc: int
    view: str = "full"
    status: str = "pending"
    errors: int = 0

    @property
    def total(self) -> int:
        """Judgements of the whole run (samples x repeats)."""
        return self.done_before + self.n_pending


def execute_run(
    engine: Engine,
    run_id: str,
    *,
    concurrency: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
    base_url: str | None = None,
) -> JSONObject:
    """Judge every pending prediction of ``run_id``; returns the contract's JSON summary.

    Args:
        concurrency: override the run's stored concurrency (maximum concurrent calls).
        progress: ``progress(done, total)`` after each judged sample (done includes earlier sessions).
        should_cancel: polled before each new sample; returning True stops like :func:`cancel_run`.
        base_url: the run's base URL with its secrets, when the stored one was redacted
            (:func:`automonitor.runs.params.redact_url`; it must redact to the stored value). Without it
            the stored URL is used.

    Returns:
        ``{"run_id", "n", "counts": {misbehavior, benign, invalid, refusal, error}, "api_calls",
        "cache_hits", "api_calls_this_process", "cache_hits_this_process"}``
        (:func:`automonitor.runs.status.summary`): ``api_calls`` and ``cache_hits`` are the whole run's,
        as ``counts`` are; the ``_this_process`` pair those of this invocation (0 calls for a run whose
        samples are all cached or already judged).

    Raises:
        RunInterrupted: (a ``KeyboardInterrupt``) Ctrl-C or SIGTERM while judging; the run is released as
            ``cancelled`` and the exception carries this invocation's ``api_calls`` and ``cache_hits``.
        NotFound: no such run. InputError: an imported run, a run executing in another live process,
        a template file changed since the run was created, or a backend that cannot be built.

    A run with nothing pending (a ``--resume`` of a complete run) sends nothing: it is finalised
    ``finished`` unless it is ``failed`` with ``error`` samples (a judge that was never reached, a
    ``--retry-errors`` whose samples all failed again), which stays ``failed`` with its line: a resume that
    sent nothing has reached no judge either, and ``--retry-errors`` is what re-sends them.
    """
    if _is_batch_run(engine, run_id):
        return batch_mod.execute_batch(engine, run_id, progress=progress, should_cancel=should_cancel)
    claim = _claim(engine, run_id, concurrency)
    if base_url is not None:
        claim.base_url = _unredacted(base_url, claim.base_url, run_id)
    if progress is not None:
        with contextlib.suppress(Exception):  # a broken callback is ignored
            progress(claim.done_before, claim.total)
    if not claim.n_pending:  # nothing to send (a --resume of a complete run): the status stays what it says
        if not (claim.status == "failed" and claim.errors):
            finalize(engine, run_id, cancelled=False)  # a run stopped after its last write is finished
        return summary(engine, run_id)
    backend = _build_backend(engine, run_id, claim)
    state = Execution(
        engine,
        run_id,
        backend,
        claim.template.sha256,
        claim.judge_params,
        claim.max_conc,
        claim.done_before,
        claim.total,
        progress,
        should_cancel,
        view=claim.view,
    )
    state.history = claim.history
    try:
        with released_on_failure(engine, run_id), young_gc_spaced():  # Ctrl-C: cancelled; any other error: failed
            run_async(state.run(stream_q.pending_pages(engine, run_id)))
    except KeyboardInterrupt as exc:  # the caller's summary still counts this invocation's calls
        raise RunInterrupted(state.api_calls, state.cache_hits) from exc
    if state.vanished:
        raise NotFound(f"run {run_id} was deleted while it executed; stopped sending requests")
    if claim.history and not state.cancelled:  # --retry-errors: a retry never sent leaves its sample as it was
        with session_scope(engine) as s:
            q.restore_unsent(s, run_id, claim.history)
    failure = state.failure()  # samples left pending by run-wide permanent failures (counts as they ended)
    c = state.circuit
    no_answer = None
    if failure is None and not state.cancelled and state.api_calls and c.answers == 0:
        # the fix follows the last failure: a rate limit is no server that fails to answer in time
        detail = c.last_error if c.last_rate_limited else (c.last_failing or c.last or c.last_error)
        no_answer = no_answer_message(state.api_calls, detail, backend.base_url, rate_limited=c.last_rate_limited)
    finalize(
        engine,
        run_id,
        cancelled=state.cancelled,
        last_execution={  # calls, hits, limiter stats, concurrency, stream stats
            "api_calls": state.api_calls,
            "cache_hits": state.cache_hits,
            "limiter": state.limiter_stats,
            "concurrency": claim.max_conc,
            "stream": {"pages": state.pages_read, "max_page": state.max_page, "queue_max": state.queue_max},
        },
        failure=_with_retry_errors(engine, run_id, failure.replace("RUN_ID", run_id)) if failure else None,
        no_answer=no_answer.replace("RUN_ID", run_id) if no_answer else None,
        sent=backend.sent_params(),
    )
    return summary(engine, run_id, api_calls=state.api_calls, cache_hits=state.cache_hits)


def _with_retry_errors(engine: Engine, run_id: str, failure: str) -> str:
    """``failure`` (the one line a stopped run ends with) followed, when the run holds ``error`` samples (their
    retries ran out before the stop: ``--resume`` never re-sends them), by how many and the command that
    does: ``automonitor run --retry-errors RUN_ID``. When nothing is pending (a ``--retry-errors`` whose
    samples are all errors again: there is nothing to resume), the line's ``--resume`` hint
    (:data:`~automonitor.runs.runner.workers.RESUME_HINT`) becomes that command and the count says how
    many are still errors."""
    with session_scope(engine) as s:
        counts = q.outcome_counts(s, run_id)
    errors, pending = int(counts.get("error", 0)), int(counts.get("pending", 0))
    if not errors:
        return failure
    retry = f"automonitor run --retry-errors {run_id}"
    resume = RESUME_HINT.replace("RUN_ID", run_id)
    if not pending and resume in failure:
        return f"{failure.replace(resume, 'then re-send them: ' + retry)}; {errors} sample(s) are still errors"
    return f"{failure}; {errors} sample(s) ended in error before the stop (--resume does not re-send them): {retry}"


def _is_batch_run(engine: Engine, run_id: str) -> bool:
    """Whether ``run_id`` is a measured run marked for the batch API (:mod:`automonitor.runs.batch`)."""
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        return run is not None and run.kind == "measured" and batch_mod.is_batch(run.params)


def _check_executable(run: Run | None, run_id: str) -> Run:
    """``run`` when it is a measured run that may execute here.

    Raises:
        NotFound: no run. InputError: an imported or derived run, or a lease held by another process.
    """
    if run is None:
        raise NotFound(f"no run {run_id!r}")
    if run.kind == "imported":
        raise InputError(f"run {run_id} holds imported predictions; there is nothing to execute", field="resume")
    if run.kind == "derived":
        raise InputError(f"run {run_id} is a derived run (no API call); there is nothing to execute", field="resume")
    check_lease(run_id, dict(run.params or {}), field="resume")
    return run


def _claim(engine: Engine, run_id: str, concurrency: int | None) -> _Claim:
    """Check the run under its row lock and, when something is pending, take the lease and set it
    ``running``, all in one transaction (so of two executors exactly one proceeds).

    Raises:
        NotFound / InputError: see :func:`_check_executable` and :func:`automonitor.runs.fewshot.run_prompt`.
    """
    with session_scope(engine) as s:
        run = _check_executable(lock_run(s, run_id), run_id)
        params = dict(run.params or {})
        tpl, examples = run_prompt(s, run)
        n_pending = stream_q.count_pending(s, run_id)
        history = q.pending_history(s, run_id)
        judge_params = dict(params.get("judge") or {})
        repeats = stored_runner_settings(run_id, judge_params).repeat  # a refused value: nothing changes
        if n_pending:
            take_lease(s, run, params)
        return _Claim(
            template=tpl,
            examples=examples,
            n_pending=n_pending,
            history=history,
            done_before=run.n * repeats - n_pending,
            monitor=run.monitor,
            base_url=params.get("base_url"),
            judge_params=judge_params,
            max_conc=int(concurrency or params.get("concurrency") or 8),
            view=view_of_run(params),
            status=run.status,
            errors=0 if n_pending else int(q.outcome_counts(s, run_id)["error"]),
        )


def _unredacted(given: str, stored: str | None, run_id: str) -> str:
    """``given`` when it is the stored base URL with its secrets (it redacts to ``stored``).

    Raises:
        InputError: another URL (field ``base-url``; the message shows both redacted)."""
    if redact_url(given) != stored and given != stored:
        raise InputError(
            f"run {run_id} was created with --base-url {stored}, not {redact_url(given)}", field="base-url"
        )
    return given


def _build_backend(engine: Engine, run_id: str, claim: _Claim) -> Backend:
    """The run's backend; on failure the run is released as ``failed`` and the error re-raised."""
    prompt = PromptBuilder(claim.template, examples=claim.examples)
    try:
        return create_backend(
            claim.monitor, base_url=claim.base_url, params=backend_params(claim.judge_params), prompt=prompt
        )
    except Exception:
        release(engine, run_id, status="failed", error="could not build the backend")
        raise


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` that also works when the calling thread already runs an event loop (the
    coroutine then runs in a new thread's loop). Re-raises what the coroutine raised."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["v"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001
            result["e"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "e" in result:
        raise result["e"]
    return cast(T, result.get("v"))  # set by target() when nothing was raised
