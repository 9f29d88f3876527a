"""The asyncio part of an execution: a page producer (texts, cache lookup; hits go straight to the
writer), ``concurrency`` judge workers fed through a bounded queue, and a cancel watcher."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import Counter
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Tuple

from sqlalchemy.engine import Engine

from automonitor.runs.monitors import Backend, Item, Judgement
from automonitor.runs.cache import CacheKeys, view_text
from automonitor.runs.runner.limiter import AIMDLimiter
from automonitor.runs.monitors.judgement import QUOTA_CODES
from automonitor.vocab import DEFAULT_VIEW
from automonitor.runs.params import redact_url, scrub, url_secrets
from automonitor.runs.runner.retries import (
    JUDGE_DROPPED,
    JUDGE_LOST,
    NEVER_REACHED,
    SERVER_FAILING,
    WAIT_TOO_LONG,
    Circuit,
    RetryPolicy,
    judge_with_retries,
)
from automonitor.runs.verdicts import cache_entry, cacheable, cached_prediction, judged_prediction
from automonitor.runs.runner.writer import WRITER_BACKLOG, ResultWriter
from store import session_scope
from store.models import utcnow
from store.queries import runs as q
from store.queries.generation import run_status
from store.queries import stream as stream_q
from store.queries.rowtypes import CachedVerdict, JudgedText

Page = list[Tuple[int, str, int]]  # [(prediction id, sample id, repeat)]
# a miss handed to a worker: (prediction id, sample id, cache key, sample text, repeat)
Job = Tuple[int, str, str, JudgedText, int]
# identical run-wide permanent failures (401/403/404) after which the run stops ``failed`` (fail-fast)
FAIL_FAST_AFTER = 3
#: the end of a fail-fast line (:func:`fail_fast_message`); ``RUN_ID`` stands for the run's id
RESUME_HINT = "then continue with: automonitor run --resume RUN_ID"
_FIXES = {
    401: "the API key was refused: set a valid {key}",
    403: "the API key has no access to this model: use a key with access, or another model",
    404: "the model or endpoint does not exist: check the model name and --base-url",
}


def _clip(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters with " …" when longer (a
    server's message in a fail-fast line)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


def fail_fast_message(
    status: int | None,
    code: str | None,
    detail: str,
    n: int,
    key_env: str | None,
    url: str | None = None,
    stopped: bool = True,
    wait: Mapping[str, float | str] | None = None,
) -> str:
    """The one line a fail-fast run ends with: the cause (HTTP status, provider code, ``n`` identical
    failures, the server's message cut at a word boundary, :func:`_clip`), the judge's URL (redacted) and the fix.
    ``stopped=False``: the run ran out of samples before :data:`FAIL_FAST_AFTER` identical failures
    stopped it, so the line says how many samples those failures left pending instead. ``wait``: for code
    :data:`~automonitor.runs.runner.retries.WAIT_TOO_LONG`, the ``Retry-After`` asked, the cap and the time the
    server named (:meth:`~automonitor.runs.runner.retries.WaitTooLong.meta`; :func:`wait_too_long_message`)."""
    if code == WAIT_TOO_LONG:
        return wait_too_long_message(status, detail, wait or {}, url)
    at = f" at {redact_url(url) or 'the default endpoint'}"
    lead = (
        f"stopped after {n} identical permanent failures"
        if stopped
        else f"{n} sample(s) left pending by permanent failures"
    )
    resume = RESUME_HINT
    if code == NEVER_REACHED:
        return (
            f"{'stopped: ' if stopped else ''}no call reached the judge{at} ({_clip(detail)}); fix: start the server or correct "
            f"--base-url, {resume}"
        )
    if code == JUDGE_DROPPED:
        return (
            f"{'stopped: ' if stopped else ''}the judge{at} was reached but answered no call: it dropped the "
            f"connection before a complete answer ({_clip(detail)}); fix: check the judge server and its log, "
            f"{resume}"
        )
    if code == JUDGE_LOST:
        return (
            f"{'stopped: ' if stopped else ''}the judge stopped answering{at} ({_clip(detail)}); the samples not "
            f"judged stay pending; fix: restart the server, {resume}"
        )
    if code == SERVER_FAILING:
        what = (
            f"answered only server errors (HTTP {status})"
            if status
            else "gave no usable answer (timeouts or unreadable bodies)"
        )
        return (
            f"{'stopped: ' if stopped else ''}the judge {what}{at} "
            f"({_clip(detail)}); the samples not judged stay pending; fix: check the judge server and its log, "
            f"{resume}"
        )
    if code in QUOTA_CODES:
        return (
            f"{lead} (HTTP {status} {code}){at}: {_clip(detail)}; "
            f"fix: the account has no quota or credit left: add credit or use another key in "
            f"{key_env or 'the key variable'}, {resume}"
        )
    fix = _FIXES.get(status or 0, "fix the request").format(key=key_env or "the API key")
    code_s = f" {code}" if code else ""
    return f"{lead} (HTTP {status}{code_s}){at}: {_clip(detail)}; fix: {fix}, {resume}"


def _seconds(s: object) -> str:
    """``s`` seconds in words: ``3600 s (1 h)``, ``90 s``."""
    n = float(s) if isinstance(s, (int, float)) else 0.0
    text = f"{n:g} s"
    if n >= 3600:
        text += f" ({n / 3600:.3g} h)"
    elif n >= 120:
        text += f" ({n / 60:.3g} min)"
    return text


def wait_too_long_message(status: int | None, detail: str, wait: Mapping[str, float | str], url: str | None) -> str:
    """The line a run ends with when the judge answered a transient failure (429 rate limit, 529, 503) asking,
    with ``Retry-After``, to wait longer than the run waits (``--param retry_after_max``): the status, the
    wait asked, the cap, the judge's URL (redacted), the server's message (:func:`_clip`) and the fix (wait
    until the time the server named, then ``--resume``; or a new run with a ``retry_after_max`` that high: a
    resumed run keeps its parameters). ``RUN_ID`` stands for the run's id."""
    at = f" at {redact_url(url) or 'the default endpoint'}"
    what = "rate limited the run" if status in (429, None) else f"could not take the calls (HTTP {status})"
    if status == 429:
        what += " (HTTP 429)"
    ra, cap = wait.get("retry_after"), wait.get("retry_after_max")
    longer = f", longer than this run waits (--param retry_after_max: {float(cap):g} s)" if cap is not None else ""
    higher = f"retry_after_max={math.ceil(float(ra))}" if isinstance(ra, (int, float)) else "a higher retry_after_max"
    until = wait.get("retry_until") or "the time the server named"
    return (
        f"stopped: the judge{at} {what} and asked to wait {_seconds(ra)} (Retry-After){longer}: {_clip(detail)}; "
        f"the samples not judged stay pending; fix: wait until {until}, then automonitor run --resume RUN_ID "
        f"(or a new run with --param {higher} waits that long)"
    )


def no_answer_message(calls: int, detail: str, url: str | None, rate_limited: bool = False) -> str:
    """The one line a run ends with when none of the ``calls`` it sent got an answer (each ended in a timeout,
    an HTTP 5xx, a malformed body, a rate limit or a transport failure, its retries run out) although nothing
    stopped it early (too few calls for a streak, :class:`~automonitor.runs.runner.retries.Circuit`): the
    count, the judge's URL (redacted), the last failure (``detail``, :func:`_clip`) and the fix, which follows
    that failure: ``rate_limited`` (a 429 or 529: the judge is there but refuses the pace) names rate limiting
    (wait, fewer calls at once, then ``--retry-errors`` / ``--resume``), else a server that does not answer in
    time (``--param timeout``); ``RUN_ID`` stands for the run's id."""
    at = f" at {redact_url(url) or 'the default endpoint'}"
    head = f"none of the {calls} call(s) sent got an answer from the judge{at} (the last: {_clip(detail)}); every sample judged ended in error; "
    if rate_limited:
        return head + (
            "fix: the judge is rate limiting this run: wait until its limit resets, then re-send them with fewer "
            "calls at once: automonitor run --retry-errors RUN_ID --concurrency 1 (samples still pending: "
            "automonitor run --resume RUN_ID --concurrency 1)"
        )
    return head + (
        "fix: check that the judge server runs and answers the model within "
        "--param timeout, then re-send them: automonitor run --retry-errors RUN_ID"
    )


class PermanentFailure(NamedTuple):
    """A run-wide permanent failure as counted (:meth:`Execution._permanent_failure`); its line is made from it
    when the execution ends (:meth:`Execution.failure`, :func:`fail_fast_message`)."""

    sig: tuple[int | None, str | None]  # (HTTP status, error code)
    detail: str  # the failure text (the judgement's raw error)
    n: int  # how many identical failures so far
    stopped: bool  # whether this one stopped the execution
    circuit: bool  # the circuit's own "never answered" error (code JUDGE_DROPPED / NEVER_REACHED): recounted at the end
    wait: Mapping[str, float | str] | None = None  # code WAIT_TOO_LONG: the Retry-After asked, the cap, the time named


class Execution:
    """One execution of a run (the asyncio part).

    Counters for ``Run.params["last_execution"]``: ``api_calls`` (requests sent), ``cache_hits``,
    ``cancelled``, ``pages_read``, ``max_page``, ``queue_max`` and ``limiter_stats`` (after :meth:`run`).
    ``history`` maps prediction ids to their earlier attempts (``run --retry-errors``), kept in the new
    verdict's ``meta.history``.
    """

    def __init__(
        self,
        engine: Engine,
        run_id: str,
        backend: Backend,
        template_hash: str,
        judge_params: dict[str, Any],
        max_conc: int,
        done: int,
        total: int,
        progress: Callable[[int, int], None] | None,
        should_cancel: Callable[[], bool] | None,
        view: str = "full",
    ) -> None:
        self.engine, self.run_id, self.backend = engine, run_id, backend
        self.template_hash = template_hash
        cap = backend.max_concurrency or max_conc
        self.limiter = AIMDLimiter(min(max_conc, cap))
        self.policy = RetryPolicy.from_params(judge_params)
        self.done, self.total = done, total
        self.progress, self.should_cancel = progress, should_cancel
        self.api_calls = 0
        self.cache_hits = 0
        self.cancelled = False
        self.vanished = False  # the run row disappeared while executing
        self._stop = False
        self.view = view  # the monitor view: each sample's response is replaced by its rendering
        self.keys = CacheKeys(backend, template_hash, view)
        self.history: dict[int, list[dict[str, Any]]] = {}
        self.pages_read = 0
        self.max_page = 0
        self.queue_max = 0
        self.limiter_stats: dict[str, Any] | None = None
        self._producer_error: BaseException | None = None
        # fail-fast: run-wide permanent failures by (status, code); the run's failure line once stopped
        self.permanent: Counter[tuple[int | None, str | None]] = Counter()
        self.fatal: PermanentFailure | None = None  # the failure that stopped the execution
        self.last_permanent: PermanentFailure | None = None  # the latest run-wide permanent failure
        self.circuit = Circuit(lost_after=3 * self.limiter.max_limit)  # every call in flight failing 3 times
        self.secrets = url_secrets(backend.base_url)  # scrubbed from error texts that echo the URL
        # requests counted in this turn of the event loop, not yet queued for the writer (_count_send)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._unqueued_calls = 0
        self._room = asyncio.Event()  # set by a worker when the queue is down to _low_water (run() sets both)
        self._low_water = 0

    def _tick(self, n: int = 1) -> None:
        self.done += n
        if self.progress is not None:
            try:
                self.progress(self.done, self.total)
            except Exception:  # noqa: BLE001 - a broken progress callback must not lose results
                pass

    async def run(self, pages: Iterable[Page]) -> None:
        """Judge the pending predictions delivered by ``pages`` (an iterator of ``[(prediction id,
        sample id, repeat)]`` lists, :func:`store.queries.stream.pending_pages`). A producer task reads one
        page at a time (texts, cache lookup; hits go straight to the writer) and feeds the misses through a
        bounded queue to the workers, so memory stays flat in the number of samples.

        Raises:
            whatever the page reader or the store writer raised (after the workers stopped).
        """
        writer = ResultWriter(self.engine, self.run_id)
        writer.start()
        self.writer = writer
        self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
        n_workers = self.limiter.max_limit
        queue: asyncio.Queue[Job | None] = asyncio.Queue(maxsize=max(2 * n_workers, 512))
        self.queue_max = queue.maxsize
        # the producer refills a full queue once the workers took it down to half (_room_for): one wake-up
        # of the producer per half a queue of samples, not one per sample taken
        self._room, self._low_water = asyncio.Event(), queue.maxsize // 2
        producer = asyncio.create_task(self._produce(pages, queue, writer, n_workers))
        watcher = asyncio.create_task(self._watch_cancel())
        try:
            await asyncio.gather(*(self._worker(queue, writer) for _ in range(n_workers)))
        finally:
            await self._shut_down(producer, watcher, writer)
        if self._producer_error is not None:
            raise self._producer_error
        self.limiter_stats = {"decreases": self.limiter.decreases, "min_limit": self.limiter.min_seen}

    async def _shut_down(self, producer: asyncio.Task[None], watcher: asyncio.Task[None], writer: ResultWriter) -> None:
        """Stop the producer and the watcher, close the backend, and drain and close the writer
        (which raises if it failed)."""
        self._stop = True
        watcher.cancel()
        producer.cancel()
        try:
            await producer
        except (asyncio.CancelledError, Exception):  # noqa: BLE001 - re-raised by run()
            pass
        try:
            await self.backend.aclose()
        except Exception:  # noqa: BLE001
            pass
        self._queue_calls()  # calls counted in this turn of the loop
        await asyncio.to_thread(writer.close)

    # -- producer -----------------------------------------------------------------------------------

    async def _produce(
        self, pages: Iterable[Page], queue: asyncio.Queue[Job | None], writer: ResultWriter, n_workers: int
    ) -> None:
        """Read pages until the end, a cancel or a stop; an error is kept for :meth:`run` and cancels
        the workers. Always ends with one ``None`` per worker in ``queue``."""
        it = iter(pages)
        try:
            while not (self.cancelled or self._stop):
                page = await self._next_page(it, writer)
                if page is None:
                    break
                await self._dispatch(page, queue, writer)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - surfaced by run()
            self._producer_error = exc
            self.cancelled = True
        for _ in range(n_workers):  # end of input: one sentinel per worker (workers also watch `cancelled`)
            try:
                queue.put_nowait(None)
            except asyncio.QueueFull:
                await queue.put(None)

    async def _next_page(self, it: Iterator[Page], writer: ResultWriter) -> Page | None:
        """The next page (None at the end), read once the writer's backlog is under
        :data:`WRITER_BACKLOG` (backpressure: the store writer bounds what is held in memory)."""
        page = await asyncio.to_thread(next, it, None)
        if page is None:
            return None
        while writer.q.qsize() > WRITER_BACKLOG and not (self.cancelled or self._stop):
            await asyncio.sleep(0.01)
        self.pages_read += 1
        self.max_page = max(self.max_page, len(page))
        return page

    async def _dispatch(self, page: Page, queue: asyncio.Queue[Job | None], writer: ResultWriter) -> None:
        """Look the page up in the cache: hits are written at once, misses queued for the workers."""
        sids = list({sid for _, sid, _r in page})
        texts: Mapping[str, JudgedText]
        if self.view == DEFAULT_VIEW:  # shown in full: no view to cut, so no source or meta to read
            texts = await asyncio.to_thread(stream_q.judged_texts, self.engine, sids)
        else:
            read = await asyncio.to_thread(stream_q.texts_for, self.engine, sids)
            texts = {sid: view_text(t, self.view) for sid, t in read.items()}
        keys = {pid: self.keys(texts[sid], r) for pid, sid, r in page}  # repeat r > 0: its own key
        cached = await asyncio.to_thread(self._cache_lookup, list(set(keys.values())))
        hits = 0
        now = utcnow()
        for pid, sid, r in page:
            entry = cached.get(keys[pid])
            if entry is None:
                if queue.full():
                    await self._room_for(queue)
                queue.put_nowait((pid, sid, keys[pid], texts[sid], r))
                continue
            row = cached_prediction(pid, keys[pid], entry, judged_at=now, history=self.history.get(pid))
            writer.put(row, None, 0, True)
            hits += 1
        if hits:
            self.cache_hits += hits
            self._tick(hits)

    async def _room_for(self, queue: asyncio.Queue[Job | None]) -> None:
        """Wait until ``queue`` has room again, woken when the workers have taken it down to
        :attr:`_low_water` (half its size; :meth:`_worker` sets :attr:`_room`)."""
        while queue.full():
            self._room.clear()
            await self._room.wait()

    def _cache_lookup(self, keys: list[str]) -> dict[str, CachedVerdict]:
        with session_scope(self.engine) as s:
            return q.cache_lookup(s, keys)

    # -- cancel watcher -----------------------------------------------------------------------------

    async def _watch_cancel(self) -> None:
        """Poll the run's status every second; ``cancelled`` in the store, or the run row gone (deleted
        under the runner), stops the execution (``vanished`` then says which)."""
        while not self._stop:
            await asyncio.sleep(1.0)
            try:
                status = await asyncio.to_thread(self._db_status)
            except Exception:  # noqa: BLE001
                continue
            if status in ("cancelled", None):
                self.vanished = status is None
                self.cancelled = True
                return

    def _db_status(self) -> str | None:
        """The run's status in the store (``None``: the row is gone), read as one column on a connection of
        its own: no ORM session and no ``Run`` object with its JSON decoded, once a second."""
        with self.engine.connect() as c:
            return run_status(c, self.run_id)

    # -- workers ------------------------------------------------------------------------------------

    def _cancel_requested(self) -> bool:
        """Whether to stop taking samples: cancelled already, or ``should_cancel()`` says so (a broken
        callback is ignored)."""
        if self.cancelled or self.fatal is not None:
            return True
        if self.should_cancel is not None:
            try:
                if self.should_cancel():
                    self.cancelled = True
                    return True
            except Exception:  # noqa: BLE001
                pass
        return False

    async def _worker(self, queue: asyncio.Queue[Job | None], writer: ResultWriter) -> None:
        """Judge queued jobs until the end-of-input ``None`` or a cancel."""
        while True:
            if self._cancel_requested():
                return
            job = await queue.get()
            if queue.qsize() <= self._low_water and not self._room.is_set():
                self._room.set()  # the producer may refill (it waits on a full queue: _room_for)
            if job is None or self.cancelled or self.fatal is not None:
                return
            if await self._judge(job, writer):
                self._tick()

    def _count_send(self) -> None:
        """Count one request as it is sent. Requests sent in one turn of the event loop reach the
        writer as one entry at the end of that turn (committed at once, before any of their answers can
        be read), not one entry and one writer wake-up each; a call from another thread goes at once."""
        self.api_calls += 1
        if self._loop is None or threading.get_ident() != self._loop_thread:
            self.writer.put_calls(1)
            return
        self._unqueued_calls += 1
        if self._unqueued_calls == 1:
            self._loop.call_soon(self._queue_calls)

    def _queue_calls(self) -> None:
        n, self._unqueued_calls = self._unqueued_calls, 0
        if n:
            self.writer.put_calls(n)

    async def _judge(self, job: Job, writer: ResultWriter) -> bool:
        """Judge one sample (with retries) and queue its prediction row, and its cache row unless it is
        not cacheable (``error``, empty or filtered answers). Its requests were counted when sent.

        A run-wide permanent failure (401/403/404, quota, a judge never reached) and a transport failure
        before any call was answered are not written: the sample stays pending, and after
        :data:`FAIL_FAST_AFTER` identical ones the execution stops with :attr:`fatal` set (fail-fast). A
        sample re-sent by ``--retry-errors`` (one in :attr:`history`) is the exception: it was an error and,
        once a request was sent for it, is written as ``error`` with this attempt (it still counts towards the
        fail-fast).
        Returns whether a row was queued."""
        pid, sid, key, text, rep = job
        item = Item(
            sample_id=sid,
            request=text["request"],
            response=text["response"],
            content_hash=text["content_hash"],
            repeat=rep,
        )
        t0, started = time.perf_counter(), time.monotonic()
        j, calls = await judge_with_retries(
            self.backend, item, self.limiter, self.policy, self._count_send, self.circuit
        )
        latency = (time.perf_counter() - t0) * 1000.0
        if self.secrets and j.outcome == "error":
            j.raw, j.reason = scrub(j.raw, self.secrets), scrub(j.reason, self.secrets)
        unreached = j.outcome == "error" and self._unreached(j, started)
        if j.outcome == "error" and (j.meta.get("run_wide") or unreached):
            self._permanent_failure(j, unreached)
            if pid not in self.history or not calls:
                return False
            # a sample re-sent by --retry-errors was an error before and is one again: this attempt is
            # recorded (its earlier ones in meta.history), never left pending with its error count gone (one
            # not sent at all stays pending here and is restored: execute_run, restore_unsent)
        row = judged_prediction(pid, key, j, attempts=calls, latency_ms=latency, history=self.history.get(pid))
        cache_row = cache_entry(key, row, j.meta, created_at=row["judged_at"]) if cacheable(row) else None
        if self._unqueued_calls:  # requests sent earlier in this turn go first (never a verdict before its call)
            self._queue_calls()
        writer.put(row, cache_row, 0, False)
        return True

    def _unreached(self, j: Judgement, started: float) -> bool:
        """Whether ``j`` is a transport failure (connection refused, reset, DNS, TLS: no HTTP status) while the
        judge was unreachable: no call of the execution answered yet, or none since before the sample's first
        attempt (``started``, :func:`time.monotonic`), or :attr:`Circuit.lost_after` calls in a row failed to
        connect (the judge stopped answering mid-run; a sample in flight at that moment retries into it). Such
        a sample stays pending like a run-wide failure, not ``error``."""
        if j.meta.get("error_kind") != "connection" or j.meta.get("status") is not None:
            return False
        return self.circuit.unreachable_for(started)

    def _permanent_failure(self, j: Judgement, unreached: bool = False) -> None:
        """Count a run-wide permanent failure; the :data:`FAIL_FAST_AFTER`-th identical one stops the
        execution (``fatal``; its line, the cause and the fix, is :meth:`failure`)."""
        lost = JUDGE_LOST if self.circuit.answered else (JUDGE_DROPPED if self.circuit.reached else NEVER_REACHED)
        unreached_code = lost if unreached else None
        sig = (j.meta.get("status"), j.meta.get("code") or unreached_code)
        self.permanent[sig] += 1
        n = self.permanent[sig]
        # a server asking to wait longer than the run waits (WAIT_TOO_LONG) stops it at the first such answer
        stops = self.fatal is None and (n >= FAIL_FAST_AFTER or sig[1] == WAIT_TOO_LONG)
        wait: dict[str, float | str] = {
            k: j.meta[k] for k in ("retry_after", "retry_after_max", "retry_until") if k in j.meta
        }
        failure = PermanentFailure(
            sig, str(j.raw or ""), n, stops, j.meta.get("code") in (JUDGE_DROPPED, NEVER_REACHED), wait or None
        )
        if stops:
            self.fatal = failure
            self._stop = True
        self.last_permanent = failure

    def failure(self) -> str | None:
        """The line the execution ends with once it has ended (``fatal``, else ``last_permanent``; ``None``
        without a run-wide permanent failure). When that failure is the circuit's own "never answered" error
        (code :data:`JUDGE_DROPPED` or :data:`NEVER_REACHED`), its counts are read again from
        :meth:`Circuit.unreachable`: the calls in flight when the run stopped have failed since, and the line's
        "R of F calls" then counts every call sent, as the run's ``api_calls`` does."""
        f = self.fatal or self.last_permanent
        if f is None:
            return None
        (status, code), detail = f.sig, f.detail
        now = self.circuit.unreachable() if f.circuit else None
        if now is not None and now.code == code:
            detail = scrub(str(now), self.secrets) or str(now)
        return fail_fast_message(
            status, code, detail, f.n, self.backend.key_env, self.backend.base_url, stopped=f.stopped, wait=f.wait
        )
