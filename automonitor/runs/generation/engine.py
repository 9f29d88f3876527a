"""Generation runs: a generator model answers prompts; the filters turn kept items into candidate pairs.

:func:`create_generation` validates the job and inserts a ``Run`` (``kind='generation'``, status
``pending``, the job in ``params['job']``); :func:`execute_generation` answers the items one after
another (an item's calls concurrently, at most ``concurrency``), runs the filter and inserts a kept
item's two candidate samples, saving progress, statistics and transcripts in ``Run.params`` after every
item. The recipes, provenance, lease and app: docs/how-to/generating-pairs.md. The other modules of the
package: :mod:`.job` (options, items, estimate), :mod:`.caller` (one cached, retried call),
:mod:`.recipes`, :mod:`.candidates`, :mod:`.summary`; this one re-exports what the CLI and the pages read.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Callable, cast

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import col

from automonitor.errors import InputError, NotFound
from automonitor.timestamps import stamped_id
from automonitor.runs.generation import tasks
from automonitor.runs.generation.caller import GeneratorCaller
from automonitor.runs.generation.candidates import Item, candidate_rows, insert_pair
from automonitor.runs.generation.filters import Decision
from automonitor.runs.generation.job import (
    PROMPT_VERSION,
    GenerationJob,
    GenerationSpec,
    build_job,
    estimate_generation,
    job_backend,
    job_items,
)
from automonitor.runs.generation.recipes import (
    MAX_KEPT_TEXT,
    ItemRecord,
    Outputs,
    Transcript,
    answer_gaming,
    answer_sycophancy,
    screen_code,
)
from automonitor.runs.generation.sandbox import sweep_stale_dirs
from automonitor.runs.generation.summary import (
    GenerationSummary,
    empty_stats,
    generation_items,
    generation_summary,
    list_generations,
)
from automonitor.runs.lease import check_lease, lock_run, new_lease
from automonitor.runs.runner.execute import run_async
from automonitor.runs.runner.launch import spawn_detached
from automonitor.vocab import RunStatus
from store import session_scope
from store.models import Run, Sample
from store.queries import generation as queries
from store.queries.rowtypes import GenerationStats

__all__ = [
    "create_generation",
    "estimate_generation",
    "execute_generation",
    "generation_items",
    "launch_generation_detached",
    "list_generations",
    "screen_code",
]


def create_generation(engine: Engine, spec: GenerationSpec) -> str:
    """Validate a generation job (:class:`~automonitor.runs.generation.job.GenerationSpec`) and insert its
    pending ``Run`` (``kind='generation'``); returns its id.

    Raises:
        InputError: bad option, unknown source/cue/incentive, missing raw files or API key, no items.
            Nothing is written then.
    """
    job = build_job(spec)
    items = job_items(job)
    if not items:
        raise InputError(f"the source {spec.source!r} gave no items", field="source")
    job_backend(job)  # validates the key / model file without a network call
    return _insert_run(engine, job, len(items))


def _insert_run(engine: Engine, job: GenerationJob, n_items: int) -> str:
    """Insert the pending run of a validated job (its generator as the run's monitor, created when
    missing; ``template`` ``gen-<kind>``, the hash of :data:`PROMPT_VERSION`); returns the new run id."""
    from store.queries.runs import add_run, get_or_create_monitor

    run_id = stamped_id("gen", "-")  # gen-YYYYmmdd-HHMMSS-<6 hex> (UTC)
    with session_scope(engine) as s:
        add_run(
            s,
            get_or_create_monitor(s, job["generator"], job["backend"], job["model"], job["base_url"]),
            run_id=run_id,
            template=f"gen-{job['kind']}",
            template_hash=hashlib.sha256(PROMPT_VERSION.encode()).hexdigest(),
            kind="generation",
            status="pending",
            n=n_items,
            params={
                "job": job,
                "base_url": job["base_url"],
                "limit": job["limit"],
                "progress": {"done": 0, "total": n_items},
                "stats": empty_stats(),
                "items": [],
            },
        )
    return run_id


# --------------------------------------------------------------------------------------------------
HEARTBEAT_S = 5.0  # seconds between lease heartbeats of an executing generation run
_Totals = tuple[int, int, int, int, float]
"""A run's call totals: calls, cache hits, tokens in, tokens out, cost in USD."""


@dataclass
class _Claim:
    """What :func:`_claim` hands the executor: the job and, on a take-over, where the dead run stopped
    (``done`` items with their ``transcripts`` and ``stats``)."""

    job: GenerationJob
    done: int = 0
    transcripts: list[ItemRecord] = dc_field(default_factory=list)
    stats: GenerationStats | None = None
    took_over: dict[str, object] | None = None


def _claim(engine: Engine, run_id: str) -> _Claim:
    """Take the lease of a generation run and mark it running, atomically across processes (the run row
    is locked: ``SELECT ... FOR UPDATE`` / ``BEGIN IMMEDIATE``, :func:`automonitor.runs.lease.lock_run`).

    A ``pending`` run starts from its first item. A ``running`` run whose lease is dead (its pid is gone
    on this host, e.g. after ``kill -9``, or its heartbeat is older than 30 s) is taken over and
    continues after its last saved item.

    Raises:
        NotFound: no such generation run. InputError: the run is finished, failed or cancelled, or a live
            process executes it (:class:`~automonitor.errors.RunBusy`: exit 1).
    """
    with session_scope(engine) as s:
        run = lock_run(s, run_id)
        if run is None or run.kind != "generation":
            raise NotFound(f"no generation run {run_id!r}")
        params = dict(run.params or {})
        claim = _Claim(job=cast(GenerationJob, dict(params["job"])))  # as build_job stored it
        if run.status == "running":
            lease = params.get("lease")
            check_lease(run_id, params, field="run")
            items = list(params.get("items") or [])
            claim.done = int((params.get("progress") or {}).get("done") or 0)
            stats = cast(GenerationStats, dict(params.get("stats") or empty_stats()))  # as _save stored it
            claim.transcripts, claim.stats = items[: claim.done], stats
            claim.took_over = lease
        elif run.status != "pending":
            raise InputError(f"generation run {run_id} is {run.status}; start a new one", field="run")
        params["lease"] = new_lease()
        if claim.took_over:
            params["took_over"] = {**claim.took_over, "at_item": claim.done}
        run.params = params
        queries.mark_running(s, run, os.getpid())
    return claim


class _Heartbeat:
    """Refresh this process's lease on a run every :data:`HEARTBEAT_S` seconds from a daemon thread; the
    writes of the lease and of the progress are serialised by :attr:`lock` (one writer at a time)."""

    def __init__(self, engine: Engine, run_id: str):
        self.engine, self.run_id = engine, run_id
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"lease-{run_id}", daemon=True)

    def start(self) -> _Heartbeat:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                with self.lock, session_scope(self.engine) as s:
                    run = s.get(Run, self.run_id)
                    if run is None or (run.params or {}).get("lease", {}).get("pid") != os.getpid():
                        return
                    run.params = {**run.params, "lease": new_lease()}
                    s.add(run)
            except Exception:  # noqa: BLE001 - a missed heartbeat is retried; a store outage ends the run elsewhere
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=HEARTBEAT_S + 1)


def _pair_exists(engine: Engine, run_id: str, job: GenerationJob, item: Item, dec: Decision, tr: Transcript) -> bool:
    """Whether this run already inserted the candidate pair of ``item`` (same pair id)."""
    pair_id = candidate_rows(run_id, job, item, dec, tr)[0]["pair_id"]
    with session_scope(engine) as s:
        return s.execute(sa.select(col(Sample.id)).where(col(Sample.pair_id) == pair_id).limit(1)).first() is not None


def _drop_lease(engine: Engine, run_id: str) -> None:
    """Remove this process's lease from the run's params (a missing run is ignored)."""
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is not None and (run.params or {}).get("lease", {}).get("pid") == os.getpid():
            p = dict(run.params)
            p.pop("lease", None)
            run.params = p
            s.add(run)


def _cut(t: str | None) -> str | None:
    return None if t is None else t[:MAX_KEPT_TEXT]


def _cut_outputs(outputs: Outputs) -> Outputs:
    """The transcript's outputs with every text cut to :data:`MAX_KEPT_TEXT` characters."""
    return {
        k: ([{**o, "text": _cut(o["text"])} for o in v] if isinstance(v, list) else {**v, "text": _cut(v["text"])})
        for k, v in outputs.items()
    }


def _item_record(item: Item, dec: Decision, added: bool, transcript: Transcript) -> ItemRecord:
    """One entry of ``Run.params['items']``: item id, kept, drop reason, filter details, prompts and
    outputs (texts cut)."""
    return {
        "item_id": getattr(item, "item_id", None) or getattr(item, "task_id", None),
        "kept": dec.kept and added,
        "reason": dec.reason if not dec.kept else (None if added else "duplicate_candidate"),
        "details": dec.details,
        "prompts": transcript["prompts"],
        "outputs": _cut_outputs(transcript["outputs"]),
    }


def _tally(
    stats: GenerationStats, dec: Decision, added: bool, call: GeneratorCaller, base: _Totals = (0, 0, 0, 0, 0.0)
) -> None:
    """Count one processed item in ``stats`` (kept / drop reason, candidates) and set the call totals to
    ``base`` (the totals of a dead process whose run this one took over) plus this process's calls."""
    stats["prompts"] += 1
    if dec.kept and added:
        stats["kept"] += 1
        stats["candidates_added"] += 1
    else:
        reason = "duplicate_candidate" if dec.kept else str(dec.reason)
        stats["dropped"][reason] = stats["dropped"].get(reason, 0) + 1
    calls, hits, tokens_in, tokens_out, cost = base
    stats["calls"], stats["cache_hits"] = calls + call.calls, hits + call.cache_hits
    stats["tokens_in"], stats["tokens_out"] = tokens_in + call.tokens_in, tokens_out + call.tokens_out
    stats["cost_usd"] = round(cost + call.cost, 6)


def _status(engine: Engine, run_id: str) -> str | None:
    with session_scope(engine) as s:
        return queries.run_status(s, run_id)


def _save(
    engine: Engine, run_id: str, stats: GenerationStats, transcripts: list[ItemRecord], done: int, total: int
) -> None:
    with session_scope(engine) as s:
        queries.save_progress(s, run_id, stats, transcripts, done, total)


def _finish(engine: Engine, run_id: str, status: RunStatus, error: str | None = None) -> None:
    with session_scope(engine) as s:
        queries.finish_run(s, run_id, status, error)


async def _process_items(
    engine: Engine,
    run_id: str,
    job: GenerationJob,
    items: list[Item],
    call: GeneratorCaller,
    stats: GenerationStats,
    progress: Callable[[int, int], None] | None,
    claim: _Claim | None = None,
    beat: _Heartbeat | None = None,
) -> bool:
    """Answer, filter and store each item in order, saving statistics and transcripts after each one
    (from item ``claim.done`` on, after a take-over); returns True when the run was cancelled before an
    item."""
    start = claim.done if claim else 0
    transcripts: list[ItemRecord] = list(claim.transcripts) if claim else []
    base: _Totals = (
        stats.get("calls", 0),
        stats.get("cache_hits", 0),
        stats.get("tokens_in", 0),
        stats.get("tokens_out", 0),
        stats.get("cost_usd", 0),
    )
    lock = beat.lock if beat else threading.Lock()
    for i, it in enumerate(items[start:], start):
        if _status(engine, run_id) == "cancelled":
            return True
        if isinstance(it, tasks.SycophancyItem):
            dec, tr = await answer_sycophancy(it, call, job)
        else:
            dec, tr = await answer_gaming(it, call, job)
        added = False
        if dec.kept:
            added = await asyncio.to_thread(insert_pair, engine, run_id, job, it, dec, tr)
            if not added and claim and claim.took_over and i == start:
                added = _pair_exists(engine, run_id, job, it, dec, tr)  # inserted just before the old process died
        _tally(stats, dec, added, call, base)
        transcripts.append(_item_record(it, dec, added, tr))
        with lock:
            _save(engine, run_id, stats, transcripts, i + 1, len(items))
        if progress:
            progress(i + 1, len(items))
    return False


def execute_generation(
    engine: Engine, run_id: str, *, progress: Callable[[int, int], None] | None = None
) -> GenerationSummary:
    """Run a pending generation run to the end (or until cancelled), or take over a ``running`` one whose
    process died (:func:`_claim`); returns :func:`generation_summary`.

    The executing process holds a lease (``params['lease']`` = pid, host, heartbeat every
    :data:`HEARTBEAT_S` s) until the run ends. ``progress(done, total)`` is called after each item. The
    run ends ``finished``, ``cancelled`` or ``failed`` (with the error, at most 2,000 characters, and the
    exception re-raised). Calls already answered before a take-over come from the cache; a candidate
    pair already inserted is not inserted twice.

    Raises:
        NotFound: no such generation run. InputError: the run is finished, failed or cancelled, or
            another live process executes it.
    """
    sweep_stale_dirs()
    claim = _claim(engine, run_id)
    job = claim.job
    beat = _Heartbeat(engine, run_id).start()
    try:
        items = job_items(job)
        backend = job_backend(job)
        stats = claim.stats or empty_stats()

        async def main() -> bool:
            try:
                return await _process_items(
                    engine,
                    run_id,
                    job,
                    list(items),
                    GeneratorCaller(engine, backend, job),
                    stats,
                    progress,
                    claim,
                    beat,
                )
            finally:
                await backend.aclose()

        cancelled = run_async(main())
        beat.stop()
        _finish(engine, run_id, "cancelled" if cancelled else "finished")
    except Exception as exc:
        beat.stop()
        _finish(engine, run_id, "failed", error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    finally:
        beat.stop()
        _drop_lease(engine, run_id)
    return generation_summary(engine, run_id)


def launch_generation_detached(db_url: str, run_id: str) -> int:
    """Start ``automonitor generate resume RUN_ID --json`` in its own session (the app's Runs page;
    :func:`automonitor.runs.runner.launch.spawn_detached`); output in ``<tmp>/automonitor-runs/RUN_ID.log``.
    Returns the child's pid."""
    return spawn_detached(db_url, run_id, "generate", "resume", run_id)[0]
