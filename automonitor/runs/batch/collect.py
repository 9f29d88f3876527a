"""Steps 3 and 4 of a batch run: poll the open parts until they end (or a cancel), and parse each
ended part's results into prediction outcomes and judge-cache entries."""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable

from sqlalchemy.engine import Engine

from automonitor.runs.batch.provider import prediction_id
from automonitor.runs.batch.state import (
    CHUNK,
    BatchJob,
    prediction_sample_ids,
    save_state,
    texts_of_samples,
)
from automonitor.runs.params import stored_batch_settings
from store import session_scope
from store.queries import chunks
from store.models import Run, utcnow
from store.queries import runs as q


class Progress:
    """``tick(extra)`` reports ``progress(judged + extra, total)`` (judged read from the store; a
    broken callback is ignored)."""

    def __init__(self, engine: Engine, run_id: str, total: int, progress: Callable[[int, int], None] | None):
        self.engine, self.run_id, self.total, self.progress = engine, run_id, total, progress

    def __call__(self, extra: int = 0) -> None:
        if self.progress is None:
            return
        with session_scope(self.engine) as s:
            c = q.outcome_counts(s, self.run_id)
        with contextlib.suppress(Exception):
            self.progress(self.total - c["pending"] + extra, self.total)


def poll_and_collect(job: BatchJob, tick: Progress, should_cancel: Callable[[], bool] | None) -> bool:
    """Steps 3 and 4: poll the open parts every ``poll_s`` seconds, collecting each as it ends (results
    parsed and cached against the samples' ``job.view`` texts), until all are collected (returns False) or a
    cancel is requested (returns True)."""
    state = job.state
    poll_s = stored_batch_settings(job.run_id, state).batch_poll
    while True:
        open_parts = [p for p in state.get("parts", []) if not p.get("collected")]
        if not open_parts:
            return False
        finished_reqs = 0
        for part in open_parts:
            info = job.provider.retrieve(part["batch_id"])
            part["status"] = info["status"]
            part["counts"] = info["counts"]
            if info["ended"]:
                _collect(job, part)
                part["collected"] = True
            else:
                finished_reqs += info["done"]
        save_state(job.engine, job.run_id, state)
        tick(finished_reqs)
        if all(p.get("collected") for p in state["parts"]):
            return False
        if _cancel_requested(job.engine, job.run_id, should_cancel):
            return True
        time.sleep(poll_s)


def _cancel_requested(engine: Engine, run_id: str, should_cancel: Callable[[], bool] | None) -> bool:
    """Whether ``should_cancel()`` says stop (a broken callback is ignored) or the run was cancelled in
    the store."""
    if should_cancel is not None:
        with contextlib.suppress(Exception):
            if should_cancel():
                return True
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        return run is not None and run.status == "cancelled"


def _collect(job: BatchJob, part: dict[str, Any]) -> None:
    """Parse the part's results into outcomes (pending predictions only); missing items -> error."""
    ids = set(part["ids"])
    seen: set[int] = set()
    buf: list[tuple[int, Any]] = []
    for cid, result in job.provider.results(part):
        pid = prediction_id(cid)
        if pid is None or pid not in ids or pid in seen:
            continue
        seen.add(pid)
        buf.append((pid, result))
        if len(buf) >= CHUNK:
            _write_results(job, part, buf)
            buf = []
    _write_results(job, part, buf)
    _write_missing(job.engine, part, [pid for pid in part["ids"] if pid not in seen])


def _write_results(job: BatchJob, part: dict[str, Any], buf: list[tuple[int, Any]]) -> None:
    """Parse one chunk of ``(prediction id, provider result)`` and commit the predictions and the cache
    entries of their verdicts (not of errors)."""
    from automonitor.runs.verdicts import cache_entry, cacheable

    if not buf:
        return
    sid_of = prediction_sample_ids(job.engine, [pid for pid, _ in buf])
    texts = texts_of_samples(job.engine, list(set(sid_of.values())), job.view)
    rows, caches = [], []
    for pid, result in buf:
        sid = sid_of[pid]
        row = job.provider.parse(result, sid, texts[sid])
        key = job.key_for(texts[sid])
        row["meta"] = {**row.get("meta", {}), "cache_key": key, "batch_id": part["batch_id"]}
        rows.append({"id": pid, **row, "cached": False, "judged_at": utcnow()})
        if cacheable(row):
            caches.append(cache_entry(key, row, row["meta"]))
    with session_scope(job.engine) as s:
        q.update_predictions(s, rows)
        q.cache_insert(s, caches)


def _write_missing(engine: Engine, part: dict[str, Any], missing: list[int]) -> None:
    """Predictions of the part the results left out become ``error`` (``batch_missing``)."""
    for sub in chunks(missing, CHUNK):
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
