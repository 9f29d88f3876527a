"""``run --batch``: judge a run through a provider's batch API (about half the price, results within
hours) instead of one request per sample.

Providers (one module each, official SDK calls only):
- :mod:`automonitor.batch.openai`: OpenAI Batch API (``files.create(purpose="batch")`` with the request
  JSONL, ``batches.create``, ``batches.retrieve`` polling ``validating -> in_progress -> finalizing ->
  completed``, ``files.content`` of the output and error files);
- :mod:`automonitor.batch.anthropic`: Anthropic Message Batches (``messages.batches.create``,
  ``retrieve`` polling ``in_progress -> ended``, ``results`` JSONL).

Life of a batch run
-------------------
:func:`enable` marks a run created by :func:`automonitor.runner.create_run` for batch execution
(``Run.params["batch"]``); :func:`automonitor.runner.execute_run` then hands it to :func:`execute_batch`:

1. cache: pending samples whose verdict is in the judge cache are written at once (no request);
2. submit: the other pending predictions are sent in parts of at most ``size`` requests
   (``custom_id = "am-<prediction id>"``). Before each submission the part (its prediction ids, and for
   OpenAI the uploaded file id) is committed to ``Run.params["batch"]["parts"]``, and right after it the
   provider's batch id. A prediction in a recorded part is never submitted again: ``run --resume``
   polls the recorded batches instead of resubmitting. If the process died between the provider's
   "create" and the commit of its id, resume first looks the batch up (OpenAI: by the run id and part
   in the batch ``metadata``; Anthropic: a batch created after the recorded intent with the same
   request count) and adopts it.
3. poll every ``poll_s`` seconds (progress: the provider's request counts) until every part ends;
   stopping (Ctrl-C, ``cancel``, ``should_cancel``) leaves the provider's batch running and the run
   resumable;
4. collect: each result line is parsed by the monitor's own backend into the same outcomes as a
   live call (``misbehavior``/``benign``/``invalid``/``refusal``, score from log-probabilities);
   failed, errored, expired or cancelled items and items missing from the results become ``error``
   outcomes (``meta.error_kind`` = ``batch_failed``/``batch_expired``/``batch_canceled``/
   ``batch_missing``) that ``--retry-errors`` can resend. Cost = tokens x list price x 0.5 (the batch
   discount, ``meta.batch_discount``). Verdicts (not errors) go to the judge cache like live ones.

Memory: requests are written to the upload file and results parsed part by part, chunk by chunk.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Protocol, TypeVar

from sqlalchemy.engine import Engine

from automonitor.errors import InputError, NotFound
from automonitor.monitors import Backend, Judgement, create_backend
from automonitor.prompts import FewShotExample, PromptBuilder, Template, load_template
from store import session_scope
from store.models import Run, utcnow
from store.queries import runs as q

T = TypeVar("T")

PROVIDERS = ("openai", "anthropic")
DEFAULT_POLL_S = 30.0
DEFAULT_SIZE = 10_000
CHUNK = 2000
BATCH_DISCOUNT = 0.5


def enable(engine: Engine, run_id: str, *, poll_s: float = DEFAULT_POLL_S, size: int = DEFAULT_SIZE) -> None:
    """Mark ``run_id`` (an ``openai`` or ``anthropic`` run) for batch execution.

    Raises:
        NotFound: no such run. InputError: another backend, a bad poll interval or part size.
    """
    if not (poll_s >= 0) or int(size) < 1:
        raise InputError("batch_poll must be >= 0 and batch_size >= 1", field="batch")
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        backend = (run.params or {}).get("backend") or run.monitor.split(":", 1)[0]
        if backend not in PROVIDERS:
            raise InputError(f"--batch needs an openai or anthropic monitor, not {backend}", field="batch")
        p = dict(run.params or {})
        p["batch"] = {"provider": backend, "poll_s": float(poll_s), "size": int(size), "parts": []}
        run.params = p
        s.add(run)


def is_batch(params: dict[str, Any] | None) -> bool:
    """Whether a run's params mark it for batch execution."""
    return bool((params or {}).get("batch"))


def custom_id(prediction_id: int) -> str:
    """The request's custom_id (``am-<prediction id>``: unique in the run, [A-Za-z0-9_-]{1,64})."""
    return f"am-{prediction_id}"


def prediction_id(cid: str) -> int | None:
    """Inverse of :func:`custom_id` (None for a foreign id)."""
    try:
        return int(cid[3:]) if cid.startswith("am-") else None
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------------
# state in Run.params["batch"]


class BatchProvider(Protocol):
    """What :func:`execute_batch` needs of a provider module's class (:mod:`.openai`, :mod:`.anthropic`)."""

    def request_line(self, cid: str, text: dict[str, Any]) -> str: ...
    def prepare(self, path: str, run_id: str, part: dict[str, Any]) -> dict[str, Any]: ...
    def create(self, path: str, run_id: str, part: dict[str, Any]) -> str: ...
    def find(self, run_id: str, part: dict[str, Any]) -> str | None: ...
    def retrieve(self, batch_id: str) -> dict[str, Any]: ...
    def results(self, part: dict[str, Any]) -> Iterator[tuple[str, Any]]: ...
    def parse(self, result: Any, sample_id: str, text: dict[str, Any]) -> dict[str, Any]: ...
    def close(self) -> None: ...


KeyFor = Callable[[Mapping[str, Any]], str]  # a sample's text -> its cache key (CacheKeys, repeat 0)


def _save_state(engine: Engine, run_id: str, state: dict[str, Any], *, heartbeat: bool = True) -> None:
    """Commit ``state`` as ``Run.params["batch"]`` (and refresh the lease heartbeat).

    Raises:
        NotFound: the run was deleted meanwhile.
    """
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        p = dict(run.params or {})
        p["batch"] = state
        if heartbeat and p.get("lease"):
            p["lease"] = {**p["lease"], "heartbeat": time.time()}
        run.params = p
        s.add(run)


def _recorded_ids(state: dict[str, Any]) -> set[int]:
    return {i for part in state.get("parts", []) for i in part["ids"]}


def _chunks(seq: list[T], n: int) -> Iterator[list[T]]:
    for i in range(0, len(seq), n):
        yield seq[i : i + n]


# --------------------------------------------------------------------------------------------------
# execution


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


class _Progress:
    """``tick(extra)`` reports ``progress(judged + extra, total)`` (judged read from the store; a
    broken callback is ignored)."""

    def __init__(self, engine: Engine, run_id: str, total: int, progress: Callable[[int, int], None] | None):
        self.engine, self.run_id, self.total, self.progress = engine, run_id, total, progress

    def __call__(self, extra: int = 0) -> None:
        if self.progress is None:
            return
        with session_scope(self.engine) as s:
            c = q.outcome_counts(s, self.run_id)
        try:
            self.progress(self.total - c["pending"] + extra, self.total)
        except Exception:  # noqa: BLE001
            pass


def execute_batch(
    engine: Engine,
    run_id: str,
    *,
    progress: Callable[[int, int], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
    client: Any = None,
) -> dict[str, Any]:
    """Submit (or resume polling) the run's batch parts and collect their results.

    Args:
        progress: ``progress(done, total)`` after the cache pass, each poll and each collected part
            (done = predictions with an outcome + requests the provider reports finished).
        should_cancel: polled between polls; True stops (the provider's batches keep running).
        client: an SDK client to use instead of building one (tests).
    Returns:
        The contract's run summary (``automonitor.runner.summary``): ``api_calls`` = requests submitted
        by this invocation.
    Raises:
        NotFound / InputError like :func:`automonitor.runner.execute_run`.
    """
    from automonitor import runner

    claim = _claim(engine, run_id)
    state = claim.state
    backend = create_backend(
        claim.monitor,
        base_url=claim.base_url,
        params=runner.backend_params(claim.judge),
        prompt=PromptBuilder(claim.template, examples=claim.examples),
    )
    provider = _provider(state["provider"], backend, client)
    key_for = runner.CacheKeys(backend, claim.template.sha256)
    tick = _Progress(engine, run_id, claim.total, progress)
    try:
        hits, todo = _cache_pass_pending(engine, run_id, state, claim.pending, key_for)
        tick()
        api_calls = _submit_open_parts(engine, run_id, state, provider)
        api_calls += _submit_new_parts(engine, run_id, state, provider, todo)
        cancelled = _poll_and_collect(engine, run_id, state, provider, key_for, tick, should_cancel)
    except KeyboardInterrupt:
        runner.release(engine, run_id, status="cancelled", error="interrupted")
        raise
    except BaseException as exc:
        runner.release(engine, run_id, status="failed", error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    finally:
        provider.close()
    with session_scope(engine) as s:
        q.add_run_counters(s, run_id, api_calls=api_calls, cache_hits=hits)
    runner.finalize(
        engine, run_id, cancelled=cancelled, last_execution={"api_calls": api_calls, "cache_hits": hits, "batch": True}
    )
    return runner.summary(engine, run_id, api_calls=api_calls, cache_hits=hits)


def _claim(engine: Engine, run_id: str) -> _Claim:
    """Check the run, take the lease (status ``running`` when something is pending), in one
    transaction.

    Raises:
        NotFound: no such run. InputError: a lease held by another process, a changed template,
            missing few-shot samples.
    """
    from automonitor import runner

    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        params = dict(run.params or {})
        runner.check_lease(run_id, params, field="resume")
        tpl = load_template(run.template)
        if run.template_hash and tpl.sha256 != run.template_hash:
            raise InputError(f"template {run.template!r} changed since run {run_id} was created", field="template")
        examples = runner.load_examples(s, list(params.get("fewshot") or []))
        pending = q.pending_predictions(s, run_id)
        params["lease"] = runner.new_lease()
        run.params = params
        if pending:
            runner.mark_running(run)
        s.add(run)
        return _Claim(
            template=tpl,
            examples=examples,
            pending=pending,
            total=run.n,
            monitor=run.monitor,
            base_url=params.get("base_url"),
            judge=dict(params.get("judge") or {}),
            state=dict(params["batch"]),
        )


def _cache_pass_pending(
    engine: Engine, run_id: str, state: dict[str, Any], pending: list[tuple[int, str, int]], key_for: KeyFor
) -> tuple[int, list[tuple[int, str]]]:
    """Step 1: write cached verdicts for the pending predictions no recorded part covers; returns
    (cache hits, ``[(prediction id, sample id)]`` still to submit)."""
    recorded = _recorded_ids(state)
    todo = [(pid, sid) for pid, sid, *_ in pending if pid not in recorded]
    hits = _cache_pass(engine, todo, key_for)
    if hits:
        with session_scope(engine) as s:
            todo = [(pid, sid) for pid, sid, *_ in q.pending_predictions(s, run_id) if pid not in recorded]
    return hits, todo


def _submit_open_parts(engine: Engine, run_id: str, state: dict[str, Any], provider: BatchProvider) -> int:
    """Step 2a: a recorded part without a batch id (the process died between "create" and its commit)
    is adopted when the provider has it, else submitted again. Returns requests submitted."""
    api_calls = 0
    for part in state.get("parts", []):
        if part.get("batch_id") is None:
            found = provider.find(run_id, part)
            if found:
                part["batch_id"] = found
                part["adopted"] = True
            else:
                _submit_part(engine, run_id, state, provider, part, None)
                api_calls += len(part["ids"])
            _save_state(engine, run_id, state)
    return api_calls


def _submit_new_parts(
    engine: Engine, run_id: str, state: dict[str, Any], provider: BatchProvider, todo: list[tuple[int, str]]
) -> int:
    """Step 2b: submit ``todo`` in new parts of at most ``state["size"]`` requests; returns requests
    submitted."""
    api_calls = 0
    for chunk in _chunks(todo, int(state.get("size", DEFAULT_SIZE))):
        part = {
            "k": len(state.get("parts", [])),
            "ids": [pid for pid, _ in chunk],
            "batch_id": None,
            "intent_at": time.time(),
            "collected": False,
        }
        _submit_part(engine, run_id, state, provider, part, chunk)
        api_calls += len(chunk)
    return api_calls


def _poll_and_collect(
    engine: Engine,
    run_id: str,
    state: dict[str, Any],
    provider: BatchProvider,
    key_for: KeyFor,
    tick: _Progress,
    should_cancel: Callable[[], bool] | None,
) -> bool:
    """Steps 3 and 4: poll the open parts every ``poll_s`` seconds, collecting each as it ends, until
    all are collected (returns False) or a cancel is requested (returns True)."""
    poll_s = float(state.get("poll_s", DEFAULT_POLL_S))
    while True:
        open_parts = [p for p in state.get("parts", []) if not p.get("collected")]
        if not open_parts:
            return False
        finished_reqs = 0
        for part in open_parts:
            info = provider.retrieve(part["batch_id"])
            part["status"] = info["status"]
            part["counts"] = info["counts"]
            if info["ended"]:
                _collect(engine, provider, part, key_for)
                part["collected"] = True
            else:
                finished_reqs += info["done"]
        _save_state(engine, run_id, state)
        tick(finished_reqs)
        if all(p.get("collected") for p in state["parts"]):
            return False
        if _cancel_requested(engine, run_id, should_cancel):
            return True
        time.sleep(poll_s)


def _cancel_requested(engine: Engine, run_id: str, should_cancel: Callable[[], bool] | None) -> bool:
    if should_cancel is not None:
        try:
            if should_cancel():
                return True
        except Exception:  # noqa: BLE001
            pass
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        return run is not None and run.status == "cancelled"


def _provider(name: str, backend: Backend, client: Any) -> BatchProvider:
    """The provider class for ``name`` around ``backend``.

    Raises:
        InputError: unknown provider.
    """
    if name == "openai":
        from automonitor.batch.openai import OpenAIBatch

        return OpenAIBatch(backend, client)
    if name == "anthropic":
        from automonitor.batch.anthropic import AnthropicBatch

        return AnthropicBatch(backend, client)
    raise InputError(f"unknown batch provider {name!r}", field="batch")


def _texts(engine: Engine, sample_ids: list[str]) -> dict[str, dict[str, Any]]:
    with session_scope(engine) as s:
        return q.sample_texts(s, sample_ids)


def _sample_ids(engine: Engine, prediction_ids: list[int]) -> dict[int, str]:
    with session_scope(engine) as s:
        return q.prediction_samples(s, prediction_ids)


def _cache_pass(engine: Engine, todo: list[tuple[int, str]], key_for: KeyFor) -> int:
    """Write cached verdicts for ``todo`` predictions; returns the number of hits."""
    from automonitor.runner.rows import cached_prediction

    hits = 0
    for chunk in _chunks(todo, CHUNK):
        texts = _texts(engine, [sid for _, sid in chunk])
        keys = {pid: key_for(texts[sid]) for pid, sid in chunk}
        with session_scope(engine) as s:
            cached = q.cache_lookup(s, list(set(keys.values())))
            rows = [
                cached_prediction(pid, keys[pid], cached[keys[pid]], judged_at=utcnow())
                for pid, _ in chunk
                if keys[pid] in cached
            ]
            q.update_predictions(s, rows)
            hits += len(rows)
    return hits


def _submit_part(
    engine: Engine,
    run_id: str,
    state: dict[str, Any],
    provider: BatchProvider,
    part: dict[str, Any],
    chunk: list[tuple[int, str]] | None,
) -> None:
    """Record the part (intent), submit it, record its batch id. ``chunk`` None: rebuild from ids."""
    if chunk is None:
        sid_of = _sample_ids(engine, part["ids"])
        chunk = [(pid, sid_of[pid]) for pid in part["ids"]]
    if part not in state.setdefault("parts", []):
        state["parts"].append(part)
    part["intent_at"] = time.time()
    with tempfile.TemporaryDirectory(prefix="automonitor-batch-") as tmp:
        path = os.path.join(tmp, f"{run_id}-{part['k']}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for sub in _chunks(chunk, CHUNK):
                texts = _texts(engine, [sid for _, sid in sub])
                for pid, sid in sub:
                    f.write(provider.request_line(custom_id(pid), texts[sid]) + "\n")
        prep = provider.prepare(path, run_id, part)  # OpenAI: upload the file (id kept in the part)
        part.update(prep)
        _save_state(engine, run_id, state)  # intent committed before "create"
        part["batch_id"] = provider.create(path, run_id, part)
    part["submitted_at"] = time.time()
    _save_state(engine, run_id, state)


def _collect(engine: Engine, provider: BatchProvider, part: dict[str, Any], key_for: KeyFor) -> None:
    """Parse the part's results into outcomes (pending predictions only); missing items -> error."""
    ids = set(part["ids"])
    seen: set[int] = set()
    buf: list[tuple[int, Any]] = []
    for cid, result in provider.results(part):
        pid = prediction_id(cid)
        if pid is None or pid not in ids or pid in seen:
            continue
        seen.add(pid)
        buf.append((pid, result))
        if len(buf) >= CHUNK:
            _write_results(engine, provider, part, key_for, buf)
            buf = []
    _write_results(engine, provider, part, key_for, buf)
    _write_missing(engine, part, [pid for pid in part["ids"] if pid not in seen])


def _write_results(
    engine: Engine, provider: BatchProvider, part: dict[str, Any], key_for: KeyFor, buf: list[tuple[int, Any]]
) -> None:
    """Parse one chunk of ``(prediction id, provider result)`` and commit the predictions and the cache
    entries of their verdicts (not of errors)."""
    from automonitor.runner.rows import cache_entry

    if not buf:
        return
    sid_of = _sample_ids(engine, [pid for pid, _ in buf])
    texts = _texts(engine, list(set(sid_of.values())))
    rows, caches = [], []
    for pid, result in buf:
        sid = sid_of[pid]
        row = provider.parse(result, sid, texts[sid])
        key = key_for(texts[sid])
        row["meta"] = {**row.get("meta", {}), "cache_key": key, "batch_id": part["batch_id"]}
        rows.append({"id": pid, **row, "cached": False, "judged_at": utcnow()})
        if row["outcome"] != "error":
            caches.append(cache_entry(key, row, row["meta"]))
    with session_scope(engine) as s:
        q.update_predictions(s, rows)
        q.cache_insert(s, caches)


def _write_missing(engine: Engine, part: dict[str, Any], missing: list[int]) -> None:
    """Predictions of the part the results left out become ``error`` (``batch_missing``)."""
    for sub in _chunks(missing, CHUNK):
        with session_scope(engine) as s:
            q.update_predictions(
                s,
                [
                    {
                        "id": pid,
                        "outcome": "error",
                        "raw": None,
                        "reason": f"no result for this request in batch {part['batch_id']} "
                        f"(status {part.get('status')})",
                        "meta": {"error_kind": "batch_missing", "batch_id": part["batch_id"]},
                        "judged_at": utcnow(),
                    }
                    for pid in sub
                ],
            )


def error_row(kind: str, reason: str, raw: str | None = None, **meta: Any) -> dict[str, Any]:
    """A prediction row for a failed batch item: outcome ``error`` with ``meta.error_kind``."""
    return {
        "outcome": "error",
        "score": None,
        "raw": raw,
        "reason": reason,
        "evidence": [],
        "pred_category": None,
        "severity": None,
        "tokens_in": 0,
        "tokens_out": 0,
        "cost_usd": 0.0,
        "latency_ms": None,
        "meta": {"error_kind": kind, **meta},
    }


def judgement_row(j: Judgement) -> dict[str, Any]:
    """A prediction row from a backend ``Judgement`` parsed out of a batch result (batch price)."""
    return {
        "outcome": j.outcome,
        "score": j.score,
        "raw": j.raw,
        "reason": j.reason,
        "evidence": list(j.evidence or []),
        "pred_category": j.pred_category,
        "severity": j.severity,
        "tokens_in": j.tokens_in,
        "tokens_out": j.tokens_out,
        "cost_usd": round(j.cost_usd * BATCH_DISCOUNT, 10),
        "latency_ms": None,
        "meta": {**j.meta, "batch_discount": BATCH_DISCOUNT},
    }


__all__ = ["enable", "is_batch", "execute_batch", "custom_id", "prediction_id", "PROVIDERS"]
