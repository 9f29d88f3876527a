"""Monitor runs: create, execute (asyncio, bounded and adaptive concurrency, retries), resume, cancel.

Modules (one job each): :mod:`.limiter` (AIMD limiter), :mod:`.create`, :mod:`.estimate`,
:mod:`.launch` (detached process), :mod:`.execute` (claim, build, judge, finalise), :mod:`.workers`
(producer, judge workers, cancel watcher), :mod:`.retries` (back-off), :mod:`.writer` (group-commit writer
thread). Beside the package in :mod:`automonitor.runs`: :mod:`~automonitor.runs.cache` (cache key),
:mod:`~automonitor.runs.params` (runner vs backend parameters), :mod:`~automonitor.runs.lease` (lock the
run row, take and release its lease; the lease itself, ``{pid, host, heartbeat}``, is
:mod:`automonitor.leases`), :mod:`~automonitor.runs.verdicts` (prediction and cache rows),
:mod:`~automonitor.runs.status` (summary, cancel, retry errors, finalize).

Life of a run
-------------
:func:`create_run` validates the monitor (``BACKEND[:MODEL]``) and template, picks the samples (the
whole ``test`` split or a stratified subset, :mod:`automonitor.runs.sampling`), picks few-shot examples from
the ``train`` split for few-shot templates, and inserts the ``Run`` (status ``pending``, the template's
sha256 in ``template_hash``) with one pending ``Prediction`` (outcome NULL) per sample, in one
transaction.

:func:`execute_run` judges the run's pending predictions. Each sample first looks up the
content-addressed cache (``CacheEntry``; key = sha256 of backend, model, base URL, template hash, the
sample's request/response hashes and the answer-changing parameters): a hit is copied without any API
call. Misses are judged by ``concurrency`` asyncio workers through an AIMD limiter: every rate-limit
answer (429, 529) halves the allowed concurrency (at most once per second), every success adds
1/limit (so +1 per window of successes), up to the configured maximum. Transient failures (429, 5xx,
529, timeouts, malformed bodies) are retried with exponential back-off plus jitter (tenacity's
``AsyncRetrying``: initial x 2^(k-1) capped, plus uniform jitter), waiting at least the server's ``Retry-After``; at most ``max_attempts``
(6) attempts, each counted in ``api_calls`` when it is sent (committed at once, so requests in flight
at a kill are counted too). A failure after retries, or a permanent failure, is the
outcome ``error`` with its reason: never ``benign``.

Streaming: the pending predictions are read page by page (1,000 at a time, keyset pagination,
:mod:`store.queries.stream`) with their texts and cache entries, and handed to the workers through a
bounded queue, so a run of 100,000 samples holds about one page of samples in memory
(``last_execution.stream`` records pages read, largest page and queue bound).

Every judged sample is committed as soon as it completes by a single writer thread (group commit of
whatever is queued, at most ~0.1 s plus one commit after it arrives), in the same transaction as its cache
entry and the run's hit counter; requests are counted in the run's ``api_calls`` as they are sent, by a
commit of their own when rows are waiting for the group commit, never after their answers. A
prediction is only ever updated while still pending, so nothing is judged twice; a run killed at any
moment (SIGKILL included) keeps every committed verdict, and ``automonitor run --resume RUN_ID``
judges exactly the predictions still pending. A lease (pid, host, heartbeat in ``Run.params``) stops
two processes from executing the same run at once; a dead process's lease is taken over at once. The
lease is checked and taken while the run row is write-locked (``SELECT ... FOR UPDATE`` on PostgreSQL,
``BEGIN IMMEDIATE`` on SQLite), so of two ``--resume`` started together exactly one executes and the
other fails with :class:`InputError` naming the holder (CLI exit 2).

Retrying errors: :func:`retry_errors` (``run --retry-errors RUN_ID``) makes exactly the ``error``
predictions pending again, keeping each earlier attempt in ``meta["history"]``; ``--resume`` alone
never re-sends an ``error`` sample. Repeats: ``params["repeat"] = K`` gives K predictions per sample
(repeat 0..K-1, distinct seeds, per-repeat cache keys); repeat 0 is the run's verdict (MR/FAR), the
others feed :mod:`automonitor.analysis.stability`.

Fail-fast: a run-wide permanent failure (HTTP 401/402/403/404, quota or billing codes,
:attr:`PermanentError.run_wide`) and a transport failure before the execution's first answer
(:class:`~automonitor.runs.runner.retries.Circuit`: at most 3 calls in flight until then) are not
written: their sample stays pending, and after ``FAIL_FAST_AFTER`` (3) identical ones the execution stops,
the run ends ``failed`` with one line naming the cause and the fix in ``run.error``, and ``--resume``
judges everything once the cause is fixed. Not cached: errors, and judgements a backend marks
``cacheable=False`` (empty answers, content-filtered answers, unknown stop reasons). ``Run.params["sent"]``
records what the backend actually sent (:meth:`Backend.sent_params`).

Cancellation: :func:`cancel_run` marks the run ``cancelled``; an executing runner notices within about
a second, lets the calls in flight finish and commits them, and leaves the rest pending (resumable).
"""

from __future__ import annotations

from automonitor.runs.cache import cache_key
from automonitor.runs.runner.create import create_run
from automonitor.runs.runner.estimate import estimate_run
from automonitor.runs.runner.execute import execute_run
from automonitor.runs.runner.launch import launch_detached
from automonitor.runs.runner.options import RunOptions
from automonitor.runs.status import cancel_run, retry_errors, run_info

__all__ = [
    "create_run",
    "execute_run",
    "retry_errors",
    "estimate_run",
    "RunOptions",
    "cancel_run",
    "launch_detached",
    "cache_key",
    "run_info",
]
