"""Monitor runs: create, execute (asyncio, bounded and adaptive concurrency, retries), resume, cancel.

Life of a run
-------------
:func:`create_run` validates the monitor (``BACKEND[:MODEL]``) and template, picks the samples (the
whole ``test`` split or a stratified subset, :mod:`automonitor.sampling`), picks few-shot examples from
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
whatever is queued, at most ~50 ms after it arrives), in the same transaction as its cache entry and the
run's call counters. A
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
others feed :mod:`automonitor.stability`.

Cancellation: :func:`cancel_run` marks the run ``cancelled``; an executing runner notices within about
a second, lets the calls in flight finish and commits them, and leaves the rest pending (resumable).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
import queue as queue_mod
from pathlib import Path
from typing import Any, Callable

from sqlalchemy.engine import Engine

from automonitor.errors import InputError, NotFound
from automonitor.hashing import sha256_text
from automonitor.monitors import (
    Backend,
    Item,
    Judgement,
    PermanentError,
    TransientError,
    backend_class,
    create_backend,
    parse_monitor_spec,
    price_for,
)
from automonitor.prompts import FewShotExample, PromptBuilder, choose_fewshot, load_template
from automonitor.sampling import seeded_shuffle, stratified_sample, stratum_counts
from automonitor.vocab import OUTCOMES
from store import session_scope
from store.models import Run, Sample, utcnow
from store.queries import runs as q
from store.queries import stream as stream_q

DEFAULT_MAX_ATTEMPTS = 6
WRITER_BACKLOG = 4000  # results queued for the store writer before the page reader waits
LEASE_STALE_S = 30.0
_FORBIDDEN_PARAM_WORDS = ("api_key", "apikey", "secret", "password", "token_key", "authorization")
# runner-level params (not sent to the backend's cache key)
RUNNER_PARAMS = (
    "max_attempts",
    "backoff_initial",
    "backoff_max",
    "retry_after_max",
    "timeout",
    "fewshot_k",
    "fewshot_seed",
    "repeat",
)
MAX_REPEAT = 50


# --------------------------------------------------------------------------------------------------
# cache key


def sample_hash(request: str, response: str) -> str:
    """Hex sha256 identifying what a judge sees of a sample: the normalised request and response
    hashes (the gold label is not part of it)."""
    return hashlib.sha256(f"{sha256_text(request)}:{sha256_text(response)}".encode()).hexdigest()


def cache_key(
    backend: str, model: str | None, base_url: str | None, template_hash: str, sample_h: str, params: dict[str, Any]
) -> str:
    """Hex sha256 of the canonical JSON of (backend, model, base URL, template hash, sample hash,
    answer-changing parameters). Base URLs are compared without a trailing slash."""
    payload = {
        "backend": backend,
        "model": model,
        "base_url": (base_url or "").rstrip("/") or None,
        "template_hash": template_hash,
        "sample": sample_h,
        "params": params,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


# --------------------------------------------------------------------------------------------------
# AIMD concurrency limiter


class AIMDLimiter:
    """An async concurrency limit that backs off multiplicatively on rate limits and recovers additively.

    ``limit`` starts at ``max_limit``. :meth:`on_rate_limit` halves it (not below ``min_limit``; at most
    once per ``cooldown`` seconds, so one burst of 429s counts once); :meth:`on_success` adds
    ``1/limit``. ``async with limiter:`` waits while ``in_flight >= floor(limit)``.
    """

    def __init__(self, max_limit: int, min_limit: int = 1, cooldown: float = 1.0):
        self.max_limit = max(1, int(max_limit))
        self.min_limit = max(1, min(int(min_limit), self.max_limit))
        self.limit = float(self.max_limit)
        self.in_flight = 0
        self.cooldown = cooldown
        self.decreases = 0
        self.min_seen = self.limit
        self._last_decrease = -1e9
        self._cond: asyncio.Condition | None = None
        self._waiting = 0

    def _c(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    async def __aenter__(self):
        cond = self._c()
        if self.in_flight < int(self.limit):
            self.in_flight += 1
            return self
        self._waiting += 1
        try:
            async with cond:
                await cond.wait_for(lambda: self.in_flight < int(self.limit))
                self.in_flight += 1
        finally:
            self._waiting -= 1
        return self

    async def __aexit__(self, *exc):
        self.in_flight -= 1
        if self._waiting:
            cond = self._c()
            async with cond:
                cond.notify(max(1, int(self.limit) - self.in_flight))
        return False

    def on_success(self) -> None:
        """Additive increase: +1/limit, capped at ``max_limit``."""
        if self.limit < self.max_limit:
            self.limit = min(float(self.max_limit), self.limit + 1.0 / self.limit)

    def on_rate_limit(self) -> None:
        """Multiplicative decrease: halve the limit (once per cooldown)."""
        now = time.monotonic()
        if now - self._last_decrease >= self.cooldown:
            self.limit = max(float(self.min_limit), self.limit / 2.0)
            self._last_decrease = now
            self.decreases += 1
            self.min_seen = min(self.min_seen, self.limit)


# --------------------------------------------------------------------------------------------------
# helpers


def _check_params(params: dict[str, Any]) -> dict[str, Any]:
    for k in params:
        if any(w in str(k).lower() for w in _FORBIDDEN_PARAM_WORDS):
            raise InputError(f"parameter {k!r} looks like a secret; keys come only from the environment", field="param")
    return params


def _new_run_id() -> str:
    return time.strftime("run_%Y%m%d_%H%M%S_", time.gmtime()) + secrets.token_hex(3)


def _prompt_for(template_name: str, examples: list[FewShotExample]) -> PromptBuilder:
    return PromptBuilder(load_template(template_name), examples=examples)


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


def _backend_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters a backend sees (runner-only ones removed; ``timeout`` is shared)."""
    return {k: v for k, v in params.items() if k not in RUNNER_PARAMS or k == "timeout"}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child (killed, not yet reaped) still answers kill(0): look at its state
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="ignore") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _lease_held_by_other(lease: dict[str, Any] | None) -> bool:
    if not lease:
        return False
    if lease.get("host") == socket.gethostname() and lease.get("pid") == os.getpid():
        return False
    if time.time() - float(lease.get("heartbeat", 0)) > LEASE_STALE_S:
        return False
    if lease.get("host") == socket.gethostname():
        return _pid_alive(int(lease.get("pid", 0)))
    return True


# --------------------------------------------------------------------------------------------------
# public API


def create_run(
    engine: Engine,
    monitor: str,
    template: str,
    *,
    limit: int | None = None,
    sample_seed: int = 0,
    base_url: str | None = None,
    concurrency: int = 8,
    params: dict | None = None,
    reuse: bool = False,
    edition: str = "paper",
    controls: bool = True,
) -> str:
    """Create a run with one pending prediction per selected test sample; returns the run id.

    Args:
        monitor: ``BACKEND[:MODEL]`` (``rules``, ``llamacpp``, ``openai``, ``anthropic``).
        template: ``direct`` | ``evidence`` | ``direct-fewshot`` | ``evidence-fewshot``.
        limit: stratified subset size (category x task x label, pairs kept together), ``None`` = all.
        sample_seed: seed of the subset choice.
        base_url: server URL for ``openai``/``anthropic`` (OpenAI-compatible servers, replay servers).
        concurrency: maximum concurrent judge calls (>= 1).
        params: backend/runner parameters (e.g. ``structured``, ``max_tokens``, ``max_attempts``,
            ``timeout``, ``fewshot_k``, ``repeat``); never API keys. ``repeat`` K (1..50, default 1)
            judges each sample K times: predictions with repeat index 0..K-1, repeat k sent with seed
            ``seed + k`` (backends with a seed) and cached under its own key (repeat 0 has the plain
            key, so a K-repeat run reuses a single run's verdicts and vice versa).
        reuse: return the id of an existing run with the same monitor, template (same hash), base URL,
            parameters, few-shot examples and exactly the same samples, if there is one (any status:
            an unfinished one is then resumed by ``execute_run``), instead of creating a new run.
        edition: test-set edition judged (``paper`` | ``verified``), recorded as ``run.edition``.
        controls: also judge the benign-only ``controls`` slice when the store has one (with ``limit``,
            a seeded subset of the same share); reports give FAR on controls separately.

    Raises:
        InputError: unknown backend/template, bad limit/concurrency, empty test split, missing API key,
            too few train samples for a few-shot template. Nothing is written in that case.
    """
    spec = parse_monitor_spec(monitor)
    tpl = load_template(template)
    params = _check_params(dict(params or {}))
    if limit is not None and int(limit) < 1:
        raise InputError("--limit must be at least 1", field="limit")
    if int(concurrency) < 1:
        raise InputError("--concurrency must be at least 1", field="concurrency")
    try:
        repeat = int(params.get("repeat", 1))
    except (TypeError, ValueError):
        repeat = 0
    if not 1 <= repeat <= MAX_REPEAT:
        raise InputError(f"--repeat must be between 1 and {MAX_REPEAT}, got {params.get('repeat')!r}", field="repeat")
    if repeat == 1:
        params.pop("repeat", None)  # a single judgement is the plain run (same as older runs)
    else:
        params["repeat"] = repeat
    if base_url is not None and not str(base_url).startswith(("http://", "https://")):
        raise InputError(f"--base-url must be an http(s) URL, got {base_url!r}", field="base-url")
    if base_url and not backend_class(spec.backend).takes_base_url:
        raise InputError(f"--base-url does not apply to the {spec.backend} backend", field="base-url")
    from store.queries.samples import check_edition, control_samples

    check_edition(edition)
    with session_scope(engine) as s:
        samples = q.test_samples(s, edition=edition)
        if not samples:
            raise InputError(
                f"the store has no test samples in edition {edition!r}; run `automonitor build` "
                f"or `automonitor import` first",
                field="--edition",
            )
        ids = stratified_sample(samples, limit, sample_seed)
        ctrl_ids: list[str] = []
        if controls:
            ctrl_ids = [c["id"] for c in control_samples(s)]
            if limit is not None and ctrl_ids:
                share = max(1, round(len(ctrl_ids) * len(ids) / max(1, len(samples))))
                ctrl_ids = sorted(seeded_shuffle(ctrl_ids, sample_seed)[:share])
        ids = ids + ctrl_ids
        examples: list[FewShotExample] = []
        if tpl.fewshot:
            examples = choose_fewshot(
                q.train_examples(s), k=int(params.get("fewshot_k", 4)), seed=int(params.get("fewshot_seed", 0))
            )
        # validates the backend (key present, model file found) without any network call
        backend = create_backend(
            spec, base_url=base_url, params=_backend_params(params), prompt=_prompt_for(template, examples)
        )
        if reuse:
            same = q.find_equivalent_run(
                s,
                monitor=spec.name,
                template=tpl.name,
                template_hash=tpl.sha256,
                base_url=base_url,
                judge=params,
                config=backend.cache_params(),
                fewshot=[e.sample_id for e in examples],
                sample_ids=ids,
            )
            if same is not None:
                return same
        mon = q.get_or_create_monitor(s, spec.name, spec.backend, spec.model, base_url)
        run_id = _new_run_id()
        s.add(
            Run(
                id=run_id,
                monitor_id=mon.id,
                monitor=spec.name,
                template=tpl.name,
                template_hash=tpl.sha256,
                status="pending",
                kind="measured",
                n=len(ids),
                edition=edition,
                params={
                    "backend": spec.backend,
                    "model": backend.model,
                    "base_url": base_url,
                    "limit": limit,
                    "sample_seed": sample_seed,
                    "concurrency": int(concurrency),
                    "template_version": tpl.version,
                    "fewshot": [e.sample_id for e in examples],
                    "judge": params,
                    "config": backend.cache_params(),
                    "max_tokens": getattr(backend, "max_tokens", None),
                    "strata": stratum_counts(samples, ids),
                    "controls": len(ctrl_ids),
                },
            )
        )
        s.flush()
        q.insert_pending(s, run_id, ids, repeats=repeat)
    return run_id


def retry_errors(engine: Engine, run_id: str) -> int:
    """Make the ``error`` predictions of ``run_id`` pending again so that :func:`execute_run` sends
    exactly them again (``automonitor run --retry-errors RUN_ID``). Each earlier attempt is kept in the
    prediction's ``meta["history"]`` (outcome, reason, raw, error kind, attempts, tokens, cost,
    judged_at; oldest first) and stays there after the new verdict. Returns the number of samples reset
    (0: nothing to retry).

    Raises:
        NotFound: no such run. InputError: an imported run, or a run executing in another live process.
    """
    with session_scope(engine) as s:
        run = _lock_run(s, run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        if run.kind == "imported":
            raise InputError(
                f"run {run_id} holds imported predictions; there is nothing to retry", field="retry-errors"
            )
        lease = (run.params or {}).get("lease")
        if _lease_held_by_other(lease):
            raise InputError(
                f"run {run_id} is being executed by pid {lease.get('pid')} on {lease.get('host')}", field="retry-errors"
            )
        n = q.reset_errors(s, run_id)
        if n:
            run.status = "pending"
            run.finished_at = None
            s.add(run)
    return n


def cancel_run(engine: Engine, run_id: str) -> None:
    """Mark the run ``cancelled``. An executing runner stops taking new samples within about a second;
    predictions still pending stay pending (``--resume`` continues). A finished run is left as is.

    Raises:
        NotFound: no such run.
    """
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        if run.status not in ("finished", "imported"):
            run.status = "cancelled"
            s.add(run)


def summary(engine: Engine, run_id: str, *, api_calls: int = 0, cache_hits: int = 0) -> dict[str, Any]:
    """The contract's JSON for a run: ``{"run_id", "n", "counts": {outcome: int}, "api_calls",
    "cache_hits"}`` (api_calls/cache_hits as given: those of the current invocation; counts are the
    run's verdicts, i.e. repeat 0), plus ``"repeat": K`` for a run judged with ``--repeat K`` (K > 1)."""
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        counts = q.outcome_counts(s, run_id)
        out = {
            "run_id": run_id,
            "n": run.n,
            "counts": {o: counts[o] for o in OUTCOMES},
            "api_calls": int(api_calls),
            "cache_hits": int(cache_hits),
        }
        repeat = int(((run.params or {}).get("judge") or {}).get("repeat", 1) or 1)
        if repeat > 1:
            out["repeat"] = repeat
        return out


def estimate_run(
    engine: Engine,
    monitor: str,
    template: str,
    *,
    limit: int | None = None,
    sample_seed: int = 0,
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Estimate a run before starting it (no network, nothing written).

    Returns ``{"n", "prompt_tokens", "max_output_tokens", "est_cost_usd", "price_per_mtok": [in, out],
    "price_known"}``. Token counts come from the backend class's
    :meth:`~automonitor.monitors.base.Backend.estimate_tokens` with ``params`` (the run's ``--param``
    values: ``max_tokens``, truncation budgets, ...): prompt tokens are characters/4 of the rendered prompts
    (0 for ``rules``), output tokens n x the answer budget; cost = tokens x the list price of
    :data:`automonitor.monitors.base.PRICES` (0 for local backends).

    Raises:
        InputError: unknown backend/template, bad limit, empty test split, bad parameter.
    """
    spec = parse_monitor_spec(monitor)
    tpl = load_template(template)
    with session_scope(engine) as s:
        samples = q.test_samples(s)
        if not samples:
            raise InputError("the store has no test samples; run `automonitor build` or `automonitor import` first")
        ids = stratified_sample(samples, limit, sample_seed)
        texts = q.sample_texts(s, ids)
        examples = choose_fewshot(q.train_examples(s)) if tpl.fewshot else []
    builder = PromptBuilder(tpl, examples=examples)
    cls = backend_class(spec.backend)
    local = cls.is_local
    prompt_tokens, max_out = cls.estimate_tokens(
        spec.model, _backend_params(dict(params or {})), builder, [texts[i] for i in ids if i in texts]
    )
    pin, pout = (0.0, 0.0) if local else price_for(spec.model)
    cost = (prompt_tokens * pin + max_out * pout) / 1_000_000
    return {
        "n": len(ids),
        "prompt_tokens": int(prompt_tokens),
        "max_output_tokens": int(max_out),
        "est_cost_usd": round(cost, 6),
        "price_per_mtok": [pin, pout],
        "price_known": local or (pin, pout) != (0.0, 0.0),
    }


def launch_detached(db_url: str, run_id: str) -> int:
    """Start ``automonitor run --resume RUN_ID --json`` as a detached process in its own session, so
    the run continues when the caller (e.g. a browser tab's Streamlit session) goes away.

    Output goes to ``<tmp>/automonitor-runs/RUN_ID.log`` (path kept in ``Run.params["detached"]``).
    Returns the child's pid.
    """
    log_dir = Path(tempfile.gettempdir()) / "automonitor-runs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{run_id}.log"
    env = {**os.environ, "AUTOMONITOR_DB": db_url}
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "automonitor", "run", "--resume", run_id, "--json"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    from store import get_engine

    try:
        with session_scope(get_engine(db_url)) as s:
            run = s.get(Run, run_id)
            if run is not None:
                run.params = {**(run.params or {}), "detached": {"pid": proc.pid, "log": str(log_path)}}
                s.add(run)
    except Exception:  # noqa: BLE001 - the child runs regardless
        pass
    return proc.pid


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


def _lock_run(session, run_id: str) -> Run | None:
    """Read the run row under a write lock held until ``session`` commits, so that checking and taking
    the lease is atomic across processes: ``SELECT ... FOR UPDATE`` on PostgreSQL (a second executor
    waits for the first one's commit, then sees its lease), ``BEGIN IMMEDIATE`` on SQLite (the database
    write lock is taken before the read)."""
    if session.get_bind().dialect.name == "sqlite":
        session.connection().exec_driver_sql("BEGIN IMMEDIATE")
    return session.get(Run, run_id, with_for_update=True)


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


def _release(engine: Engine, run_id: str, *, status: str, error: str | None = None) -> None:
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None:
            return
        p = dict(run.params or {})
        p.pop("lease", None)
        run.params = p
        if status == "failed" or run.status != "cancelled":
            run.status = status
        run.error = error
        s.add(run)


def _finalize(engine: Engine, run_id: str, *, cancelled: bool, last_execution: dict | None = None) -> None:
    """Set totals and the final status: ``finished`` when nothing is pending, else ``cancelled``.
    ``last_execution`` (calls, cache hits, AIMD limiter stats) is kept in ``Run.params``."""
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None:
            return
        counts = q.outcome_counts(s, run_id)
        tot = q.run_totals(s, run_id)
        run.tokens_in, run.tokens_out, run.cost_usd = tot["tokens_in"], tot["tokens_out"], tot["cost_usd"]
        p = dict(run.params or {})
        p.pop("lease", None)
        if last_execution is not None:
            p["last_execution"] = last_execution
        run.params = p
        if counts["pending"] == 0:
            run.status = "finished"
            run.finished_at = run.finished_at or utcnow()
            run.error = None
        elif cancelled or run.status == "cancelled":
            run.status = "cancelled"
        else:
            run.status = "failed"
            run.error = f"{counts['pending']} predictions still pending"
        s.add(run)


class _Writer(threading.Thread):
    """Single writer thread: commits queued results in small transactions (group commit).

    A result is committed at most ``min_interval`` (50 ms) plus one commit after it arrives: the writer
    takes everything queued at that moment into one transaction, which keeps the commit rate (and its
    CPU) bounded at hundreds of results per second.
    """

    STOP = object()

    def __init__(self, engine: Engine, run_id: str, min_interval: float = 0.05):
        super().__init__(daemon=True, name=f"writer-{run_id}")
        self.engine, self.run_id = engine, run_id
        self.q: queue_mod.Queue = queue_mod.Queue()
        self.error: BaseException | None = None
        self.committed = 0
        self.commits = 0
        self.min_interval = min_interval
        self._last_heartbeat = time.time()

    def put(self, pred: dict[str, Any], cache_row: dict[str, Any] | None, calls: int, hit: bool) -> None:
        if self.error is not None:
            raise RuntimeError(f"result writer failed: {self.error}") from self.error
        self.q.put((pred, cache_row, calls, hit))

    def put_calls(self, n: int = 1) -> None:
        """Count ``n`` requests as sent: committed at once (no group-commit wait), before their
        answers can arrive, so calls in flight at a kill are in ``run.api_calls``."""
        self.q.put((None, None, int(n), False))

    def run(self) -> None:
        stop = False
        last = 0.0
        while not stop:
            item = self.q.get()
            wait = self.min_interval - (time.monotonic() - last)
            if wait > 0 and item is not self.STOP and item[0] is not None:
                time.sleep(wait)
            last = time.monotonic()
            batch = []
            if item is self.STOP:
                stop = True
            else:
                batch.append(item)
            while len(batch) < 2000:
                try:
                    nxt = self.q.get_nowait()
                except queue_mod.Empty:
                    break
                if nxt is self.STOP:
                    stop = True
                    break
                batch.append(nxt)
            if batch:
                try:
                    self._write(batch)
                except BaseException as exc:  # noqa: BLE001
                    self.error = exc
                    return

    def _write(self, batch) -> None:
        preds = [b[0] for b in batch if b[0] is not None]
        caches = [b[1] for b in batch if b[1] is not None]
        calls = sum(b[2] for b in batch)
        hits = sum(1 for b in batch if b[3])
        with session_scope(self.engine) as s:
            if preds:
                q.update_predictions(s, preds)
            q.cache_insert(s, caches)
            q.add_run_counters(s, self.run_id, api_calls=calls, cache_hits=hits)
            if time.time() - self._last_heartbeat > 5:
                run = s.get(Run, self.run_id)
                if run is not None and (run.params or {}).get("lease"):
                    p = dict(run.params)
                    p["lease"] = {**p["lease"], "heartbeat": time.time()}
                    run.params = p
                    s.add(run)
                self._last_heartbeat = time.time()
        self.committed += len(preds)
        self.commits += 1

    def close(self) -> None:
        self.q.put(self.STOP)
        self.join()
        if self.error is not None:
            raise RuntimeError(f"result writer failed: {self.error}") from self.error


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


def run_info(engine: Engine, run_id: str) -> dict[str, Any]:
    """One run as in ``automonitor runs --json`` (status, counts, tokens, cost, duration)."""
    with session_scope(engine) as s:
        for r in q.list_runs(s):
            if r["run_id"] == run_id:
                return r
    raise NotFound(f"no run {run_id!r}")


__all__ = [
    "create_run",
    "execute_run",
    "retry_errors",
    "estimate_run",
    "cancel_run",
    "launch_detached",
    "summary",
    "cache_key",
    "sample_hash",
    "AIMDLimiter",
    "run_info",
]
