"""Execute a run: judge its pending predictions with bounded, adaptive concurrency and retries."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from typing import Any, Callable

from sqlalchemy.engine import Engine

from automonitor.errors import InputError, NotFound
from automonitor.monitors import Backend, Item, Judgement, PermanentError, TransientError, create_backend
from automonitor.prompts import FewShotExample, PromptBuilder, load_template
from automonitor.runner.cache import cache_key, sample_hash
from automonitor.runner.lease import _lease_held_by_other, _lock_run, _release
from automonitor.runner.limiter import AIMDLimiter
from automonitor.runner.params import _backend_params
from automonitor.runner.status import _finalize, summary
from automonitor.runner.writer import WRITER_BACKLOG, _Writer
from store import session_scope
from store.models import Run, Sample, utcnow
from store.queries import runs as q
from store.queries import stream as stream_q


DEFAULT_MAX_ATTEMPTS = 6


def _load_examples(session, ids: list[str]) -> list[FewShotExample]:
    if not ids:
        return []
    import sqlalchemy as sa

    rows = {
        r.id: r
        for r in session.execute(
            sa.select(Sample.id, Sample.request, Sample.response, Sample.label, Sample.category).where(
                Sample.id.in_(ids)
            )
        ).all()
    }  # type: ignore[attr-defined]
    missing = [i for i in ids if i not in rows]
    if missing:
        raise InputError(f"few-shot example samples missing from the store: {', '.join(missing[:3])}", field="template")
    return [
        FewShotExample(
            sample_id=i,
            request=rows[i].request,
            response=rows[i].response,
            label=rows[i].label,
            category=rows[i].category,
        )
        for i in ids
    ]


def execute_run(
    engine: Engine,
    run_id: str,
    *,
    concurrency: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Judge every pending prediction of ``run_id``; returns the contract's JSON summary.

    Args:
        concurrency: override the run's stored concurrency (maximum concurrent calls).
        progress: ``progress(done, total)`` after each judged sample (done includes earlier sessions).
        should_cancel: polled before each new sample; returning True stops like :func:`cancel_run`.

    Returns:
        ``{"run_id", "n", "counts": {misbehavior, benign, invalid, refusal, error}, "api_calls",
        "cache_hits"}``; ``api_calls`` and ``cache_hits`` are those of this invocation (0 calls for a
        run whose samples are all cached or already judged).

    Raises:
        NotFound: no such run. InputError: an imported run, a run executing in another live process,
        a template file changed since the run was created, or a backend that cannot be built.
    """
    from automonitor import batch as batch_mod

    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is not None and run.kind == "measured" and batch_mod.is_batch(run.params):
            return batch_mod.execute_batch(engine, run_id, progress=progress, should_cancel=should_cancel)
    with session_scope(engine) as s:
        run = _lock_run(s, run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        if run.kind == "imported":
            raise InputError(f"run {run_id} holds imported predictions; there is nothing to execute", field="resume")
        if run.kind == "derived":
            raise InputError(
                f"run {run_id} is a derived run (no API call); there is nothing to execute", field="resume"
            )
        params = dict(run.params or {})
        if _lease_held_by_other(params.get("lease")):
            lease = params["lease"]
            raise InputError(
                f"run {run_id} is being executed by pid {lease.get('pid')} on {lease.get('host')}", field="resume"
            )
        tpl = load_template(run.template)
        if run.template_hash and tpl.sha256 != run.template_hash:
            raise InputError(
                f"template {run.template!r} changed since run {run_id} was created "
                f"(hash {tpl.sha256[:12]} != {run.template_hash[:12]}); start a new run",
                field="template",
            )
        examples = _load_examples(s, list(params.get("fewshot") or []))
        n_pending = stream_q.count_pending(s, run_id)
        history = q.pending_history(s, run_id)
        repeats = int((params.get("judge") or {}).get("repeat", 1) or 1)
        done_before = run.n * repeats - n_pending
        if n_pending:
            params["lease"] = {"pid": os.getpid(), "host": socket.gethostname(), "heartbeat": time.time()}
            run.params = params
            run.status = "running"
            run.started_at = run.started_at or utcnow()
            run.finished_at = None
            s.add(run)
        monitor = run.monitor
        base_url = params.get("base_url")
        judge_params = dict(params.get("judge") or {})
        max_conc = int(concurrency or params.get("concurrency") or 8)

    if progress is not None:
        try:
            progress(done_before, done_before + n_pending)
        except Exception:  # noqa: BLE001
            pass
    if not n_pending:
        _finalize(engine, run_id, cancelled=False)
        return summary(engine, run_id)

    prompt = PromptBuilder(tpl, examples=examples)
    try:
        backend = create_backend(monitor, base_url=base_url, params=_backend_params(judge_params), prompt=prompt)
    except Exception:
        _release(engine, run_id, status="failed", error="could not build the backend")
        raise
    state = _ExecState(
        engine,
        run_id,
        backend,
        tpl.sha256,
        judge_params,
        max_conc,
        done_before,
        done_before + n_pending,
        progress,
        should_cancel,
    )
    try:
        state.history = history
        _run_async(state.run(stream_q.pending_pages(engine, run_id)))
    except KeyboardInterrupt:
        _release(engine, run_id, status="cancelled", error="interrupted")
        raise
    except BaseException as exc:
        _release(engine, run_id, status="failed", error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    _finalize(
        engine,
        run_id,
        cancelled=state.cancelled,
        last_execution={
            "api_calls": state.api_calls,
            "cache_hits": state.cache_hits,
            "limiter": getattr(state, "limiter_stats", None),
            "concurrency": max_conc,
            "stream": {"pages": state.pages_read, "max_page": state.max_page, "queue_max": state.queue_max},
        },
    )
    return summary(engine, run_id, api_calls=state.api_calls, cache_hits=state.cache_hits)


def _run_async(coro) -> Any:
    """``asyncio.run`` that also works when the calling thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    result: dict[str, Any] = {}

    def target():
        try:
            result["v"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001
            result["e"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "e" in result:
        raise result["e"]
    return result.get("v")


class _ExecState:
    """One execution of a run (the asyncio part)."""

    def __init__(
        self,
        engine,
        run_id,
        backend: Backend,
        template_hash,
        judge_params,
        max_conc,
        done,
        total,
        progress,
        should_cancel,
    ):
        self.engine, self.run_id, self.backend = engine, run_id, backend
        self.template_hash = template_hash
        cap = backend.max_concurrency or max_conc
        self.limiter = AIMDLimiter(min(max_conc, cap))
        self.max_attempts = int(judge_params.get("max_attempts", DEFAULT_MAX_ATTEMPTS))
        self.backoff_initial = float(judge_params.get("backoff_initial", 0.5))
        self.backoff_max = float(judge_params.get("backoff_max", 30.0))
        self.retry_after_max = float(judge_params.get("retry_after_max", 120.0))
        self.done, self.total = done, total
        self.progress, self.should_cancel = progress, should_cancel
        self.api_calls = 0
        self.cache_hits = 0
        self.cancelled = False
        self._stop = False
        self.key_params = {**backend.cache_params(), "prompt": backend.prompt.fingerprint()}
        self.history: dict[int, list] = {}

    def key_for(self, text: dict[str, Any], repeat: int = 0) -> str:
        """Cache key of one judgement; repeat k > 0 adds ``{"repeat": k}`` to the parameters (repeat 0
        keeps the plain key)."""
        params = self.key_params if not repeat else {**self.key_params, "repeat": int(repeat)}
        return cache_key(
            self.backend.name,
            self.backend.model,
            self.backend.base_url,
            self.template_hash,
            sample_hash(text["request"], text["response"]),
            params,
        )

    def _tick(self, n: int = 1) -> None:
        self.done += n
        if self.progress is not None:
            try:
                self.progress(self.done, self.total)
            except Exception:  # noqa: BLE001 - a broken progress callback must not lose results
                pass

    async def run(self, pages) -> None:
        """Judge the pending predictions delivered by ``pages`` (an iterator of ``[(prediction id,
        sample id, repeat)]`` lists, :func:`store.queries.stream.pending_pages`). A producer task reads one
        page at a time (texts, cache lookup; hits go straight to the writer) and feeds the misses through a
        bounded queue to the workers, so memory stays flat in the number of samples."""
        writer = _Writer(self.engine, self.run_id)
        writer.start()
        self.writer = writer
        n_workers = self.limiter.max_limit
        queue: asyncio.Queue = asyncio.Queue(maxsize=max(2 * n_workers, 512))
        self.queue_max = queue.maxsize
        self.pages_read = 0
        self.max_page = 0
        producer = asyncio.create_task(self._produce(pages, queue, writer, n_workers))
        watcher = asyncio.create_task(self._watch_cancel())
        try:
            await asyncio.gather(*(self._worker(queue, writer) for _ in range(n_workers)))
        finally:
            self._stop = True
            watcher.cancel()
            producer.cancel()
            try:
                await producer
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - re-raised below
                pass
            try:
                await self.backend.aclose()
            except Exception:  # noqa: BLE001
                pass
            await asyncio.to_thread(writer.close)
        if self._producer_error is not None:
            raise self._producer_error
        self.limiter_stats = {"decreases": self.limiter.decreases, "min_limit": self.limiter.min_seen}

    _producer_error: BaseException | None = None

    async def _produce(self, pages, queue: asyncio.Queue, writer: _Writer, n_workers: int) -> None:
        it = iter(pages)
        try:
            while not (self.cancelled or self._stop):
                page = await asyncio.to_thread(next, it, None)
                if page is None:
                    break
                while writer.q.qsize() > WRITER_BACKLOG and not (self.cancelled or self._stop):
                    await asyncio.sleep(0.01)  # backpressure: the store writer bounds what is held in memory
                self.pages_read += 1
                self.max_page = max(self.max_page, len(page))
                texts = await asyncio.to_thread(stream_q.texts_for, self.engine, list({sid for _, sid, _r in page}))
                keys = {pid: self.key_for(texts[sid], r) for pid, sid, r in page}

                def lookup() -> dict[str, Any]:
                    with session_scope(self.engine) as s:
                        return q.cache_lookup(s, list(set(keys.values())))  # noqa: B023 - awaited at once

                cached = await asyncio.to_thread(lookup)
                hits = 0
                now = utcnow()
                for pid, sid, r in page:
                    c = cached.get(keys[pid])
                    if c is None:
                        await queue.put((pid, sid, keys[pid], texts[sid], r))
                        continue
                    meta = dict(c.get("meta") or {})
                    if pid in self.history:
                        meta["history"] = self.history[pid]
                    meta.update(
                        {
                            "cache_key": keys[pid],
                            "cached_tokens_in": c.get("tokens_in", 0),
                            "cached_tokens_out": c.get("tokens_out", 0),
                            "cached_cost_usd": c.get("cost_usd", 0.0),
                        }
                    )
                    writer.put(
                        {
                            "id": pid,
                            "outcome": c["outcome"],
                            "score": c["score"],
                            "raw": c["raw"],
                            "reason": c["reason"],
                            "evidence": c["evidence"] or [],
                            "pred_category": c["pred_category"],
                            "severity": c["severity"],
                            "tokens_in": 0,
                            "tokens_out": 0,
                            "cost_usd": 0.0,
                            "latency_ms": 0.0,
                            "cached": True,
                            "meta": meta,
                            "judged_at": now,
                        },
                        None,
                        0,
                        True,
                    )
                    hits += 1
                if hits:
                    self.cache_hits += hits
                    self._tick(hits)
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

    async def _watch_cancel(self) -> None:
        while not self._stop:
            await asyncio.sleep(1.0)
            try:
                status = await asyncio.to_thread(self._db_status)
            except Exception:  # noqa: BLE001
                continue
            if status == "cancelled":
                self.cancelled = True
                return

    def _db_status(self) -> str | None:
        with session_scope(self.engine) as s:
            run = s.get(Run, self.run_id)
            return run.status if run else None

    async def _worker(self, queue: asyncio.Queue, writer: _Writer) -> None:
        while True:
            if self.cancelled:
                return
            if self.should_cancel is not None:
                try:
                    if self.should_cancel():
                        self.cancelled = True
                        return
                except Exception:  # noqa: BLE001
                    pass
            job = await queue.get()
            if job is None:
                return
            if self.cancelled:
                return
            pid, sid, key, t, rep = job
            item = Item(
                sample_id=sid, request=t["request"], response=t["response"], content_hash=t["content_hash"], repeat=rep
            )
            t0 = time.perf_counter()
            j, calls = await self._judge_with_retries(item)
            latency = (time.perf_counter() - t0) * 1000.0
            meta = dict(j.meta)
            meta.update({"attempts": calls, "cache_key": key})
            if pid in self.history:
                meta["history"] = self.history[pid]
            row = {
                "id": pid,
                "outcome": j.outcome,
                "score": j.score,
                "raw": j.raw,
                "reason": j.reason,
                "evidence": list(j.evidence or []),
                "pred_category": j.pred_category,
                "severity": j.severity,
                "tokens_in": j.tokens_in,
                "tokens_out": j.tokens_out,
                "cost_usd": j.cost_usd,
                "latency_ms": round(latency, 3),
                "cached": False,
                "meta": meta,
                "judged_at": utcnow(),
            }
            cache_row = None
            if j.outcome != "error":
                cache_row = {
                    "key": key,
                    "outcome": j.outcome,
                    "score": j.score,
                    "raw": j.raw,
                    "reason": j.reason,
                    "evidence": list(j.evidence or []),
                    "pred_category": j.pred_category,
                    "severity": j.severity,
                    "tokens_in": j.tokens_in,
                    "tokens_out": j.tokens_out,
                    "cost_usd": j.cost_usd,
                    "meta": {k: v for k, v in j.meta.items()},
                    "created_at": utcnow(),
                }
            writer.put(row, cache_row, 0, False)  # its calls were counted when sent
            self._tick()

    async def _judge_with_retries(self, item: Item) -> tuple[Judgement, int]:
        """Judge with bounded retries; returns (judgement, requests sent). Never raises for backend
        failures: they become the ``error`` outcome."""
        import random

        from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

        calls = 0

        def count_call() -> None:
            # counted at send time (committed by the writer at once), not when the answer comes back
            nonlocal calls
            calls += 1
            self.api_calls += 1
            self.writer.put_calls(1)

        def wait_after(exc: BaseException | None, attempt_number: int) -> float:
            # exponential back-off with jitter: initial * 2^(attempt-1), capped, + uniform(0, initial),
            # and never less than the server's Retry-After (capped at retry_after_max)
            base = min(self.backoff_max, self.backoff_initial * 2 ** (attempt_number - 1)) + random.uniform(
                0, self.backoff_initial
            )
            ra = getattr(exc, "retry_after", None)
            if ra is not None:
                return max(base, min(float(ra), self.retry_after_max))
            return base

        def wait(rs) -> float:
            # tenacity numbers its own attempts from 1; ours started one earlier (the fast path)
            return wait_after(rs.outcome.exception() if rs.outcome else None, rs.attempt_number + 1)

        kinds: list[str] = []

        def failed(exc: BaseException) -> tuple[Judgement, int]:
            if isinstance(exc, TransientError):
                return Judgement(
                    "error",
                    raw=str(exc),
                    reason=f"failed after {len(kinds)} attempts: {exc}",
                    meta={"error_kind": exc.kind, "status": exc.status, "retried_after": kinds},
                ), calls
            if isinstance(exc, PermanentError):
                return Judgement(
                    "error",
                    raw=str(exc),
                    reason=f"permanent failure: {exc}",
                    meta={"error_kind": "permanent", "status": exc.status, "retried_after": kinds},
                ), calls
            # a backend bug must not lose the sample either
            return Judgement(
                "error",
                raw=f"{type(exc).__name__}: {exc}"[:2000],
                reason=f"unexpected {type(exc).__name__} in the backend",
                meta={"error_kind": "internal", "retried_after": kinds},
            ), calls

        async def attempt_once() -> Judgement:
            try:
                async with self.limiter:
                    j = await self.backend.judge(item, count_call)
            except TransientError as exc:
                kinds.append(exc.kind)
                if exc.rate_limited:
                    self.limiter.on_rate_limit()
                raise
            self.limiter.on_success()
            if kinds:
                j.meta = {**j.meta, "retried_after": list(kinds)}
            return j

        # the first attempt runs outside tenacity: the common case costs no retry machinery
        try:
            return await attempt_once(), calls
        except asyncio.CancelledError:
            raise
        except TransientError as exc:
            if self.max_attempts <= 1:
                return failed(exc)
            await asyncio.sleep(wait_after(exc, 1))
        except Exception as exc:  # noqa: BLE001
            return failed(exc)
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(self.max_attempts - 1),
                wait=wait,
                retry=retry_if_exception_type(TransientError),
                reraise=True,
            ):
                with attempt:
                    return await attempt_once(), calls
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            return failed(exc)
        raise AssertionError("unreachable")  # pragma: no cover

