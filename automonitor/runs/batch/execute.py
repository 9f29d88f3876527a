"""Run a batch run end to end (:func:`execute_batch`): take the lease, then the cache pass, submit, poll
and collect, and finalize the run like :func:`automonitor.runs.runner.execute_run`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from sqlalchemy.engine import Engine

from automonitor.data.monitor_views import view_of_run
from automonitor.jsontypes import JSONObject
from automonitor.runs.batch.collect import poll_and_collect, Progress
from automonitor.runs.batch.provider import provider_for
from automonitor.runs.batch.state import BatchJob
from automonitor.runs.batch.submit import cache_pass_pending, submit_new_parts, submit_open_parts
from automonitor.runs.cache import CacheKeys
from automonitor.runs.fewshot import run_prompt
from automonitor.runs.lease import check_lease, released_on_failure, take_lease
from automonitor.runs.monitors import create_backend
from automonitor.runs.params import backend_params, stored_batch_settings, stored_runner_settings
from automonitor.runs.status import finalize, summary
from automonitor.runs.prompts import FewShotExample, PromptBuilder, Template
from store import session_scope
from store.queries import runs as q


@dataclass
class _Claim:
    """What :func:`execute_batch` read from the run when it took the lease."""

    template: Template
    examples: list[FewShotExample]
    pending: list[tuple[int, str, int]]
    total: int
    monitor: str
    base_url: str | None
    judge: dict[str, Any]
    state: dict[str, Any]
    view: str  # the run's monitor view (``Run.params["view"]``): what each request shows of a sample


def execute_batch(
    engine: Engine,
    run_id: str,
    *,
    progress: Callable[[int, int], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
) -> JSONObject:
    """Submit (or resume polling) the run's batch parts and collect their results.

    Args:
        progress: ``progress(done, total)`` after the cache pass, each poll and each collected part
            (done = predictions with an outcome + requests the provider reports finished).
        should_cancel: polled between polls; True stops (the provider's batches keep running).
    Returns:
        The contract's run summary (``automonitor.runs.status.summary``): ``api_calls`` = requests submitted
        for the run by every invocation, ``api_calls_this_process`` by this one.
    Raises:
        NotFound / InputError like :func:`automonitor.runs.runner.execute_run`.
    """
    claim = _claim(engine, run_id)
    backend = create_backend(
        claim.monitor,
        base_url=claim.base_url,
        params=backend_params(claim.judge),
        prompt=PromptBuilder(claim.template, examples=claim.examples),
    )
    provider = provider_for(claim.state["provider"], backend)
    key_for = CacheKeys(backend, claim.template.sha256, claim.view)  # the live runner's key, view included
    job = BatchJob(engine, run_id, claim.state, provider, key_for, claim.view)
    tick = Progress(engine, run_id, claim.total, progress)
    try:
        with released_on_failure(engine, run_id):
            hits, todo = cache_pass_pending(job, claim.pending)
            tick()
            api_calls = submit_open_parts(job) + submit_new_parts(job, todo)
            cancelled = poll_and_collect(job, tick, should_cancel)
    finally:
        provider.close()
    with session_scope(engine) as s:
        q.add_run_counters(s, run_id, api_calls=api_calls, cache_hits=hits)
    finalize(
        engine, run_id, cancelled=cancelled, last_execution={"api_calls": api_calls, "cache_hits": hits, "batch": True}
    )
    return summary(engine, run_id, api_calls=api_calls, cache_hits=hits)


def _claim(engine: Engine, run_id: str) -> _Claim:
    """Check the run, take the lease (status ``running`` when something is pending), in one
    transaction.

    Raises:
        NotFound: no such run. InputError: a lease held by another process, a stored runner parameter or
            batch option the rule refuses (:func:`automonitor.runs.params.stored_runner_settings`,
            :func:`~automonitor.runs.params.stored_batch_settings`), a changed template, missing few-shot samples.
    """
    with session_scope(engine) as s:
        run = q.get_run(s, run_id)
        params = dict(run.params or {})
        check_lease(run_id, params, field="resume")
        # a stored value the rule refuses (parameter or batch option): refused before anything changes
        stored_runner_settings(run_id, dict(params.get("judge") or {}))
        stored_batch_settings(run_id, dict(params["batch"]))
        tpl, examples = run_prompt(s, run)
        pending = q.pending_predictions(s, run_id)
        take_lease(s, run, params, running=bool(pending))
        return _Claim(
            template=tpl,
            examples=examples,
            pending=pending,
            total=run.n,
            monitor=run.monitor,
            base_url=params.get("base_url"),
            judge=dict(params.get("judge") or {}),
            state=dict(params["batch"]),
            view=view_of_run(params),
        )
