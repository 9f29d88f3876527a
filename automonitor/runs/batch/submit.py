"""Steps 1 and 2 of a batch run: the judge-cache pass over the pending predictions, then submitting the
rest in recorded parts (adopting a part whose batch was created but not committed)."""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any, Sequence

from automonitor.runs.batch.provider import custom_id
from automonitor.runs.batch.state import (
    CHUNK,
    BatchJob,
    recorded_ids,
    prediction_sample_ids,
    save_state,
    texts_of_samples,
)
from automonitor.runs.params import stored_batch_settings
from store import session_scope
from store.queries import chunks
from store.models import utcnow
from store.queries import runs as q


def cache_pass_pending(job: BatchJob, pending: list[tuple[int, str, int]]) -> tuple[int, list[tuple[int, str]]]:
    """Step 1: write cached verdicts for the pending predictions no recorded part covers (keyed on each
    sample's ``job.view`` rendering); returns (cache hits, ``[(prediction id, sample id)]`` still to submit)."""
    recorded = recorded_ids(job.state)
    todo = [(pid, sid) for pid, sid, *_ in pending if pid not in recorded]
    hits = _cache_pass(job, todo)
    if hits:
        with session_scope(job.engine) as s:
            todo = [(pid, sid) for pid, sid, *_ in q.pending_predictions(s, job.run_id) if pid not in recorded]
    return hits, todo


def _cache_pass(job: BatchJob, todo: list[tuple[int, str]]) -> int:
    """Write cached verdicts for ``todo`` predictions (texts under ``job.view``); returns the number of hits."""
    from automonitor.runs.verdicts import cached_prediction

    hits = 0
    for chunk in chunks(todo, CHUNK):
        texts = texts_of_samples(job.engine, [sid for _, sid in chunk], job.view)
        keys = {pid: job.key_for(texts[sid]) for pid, sid in chunk}
        with session_scope(job.engine) as s:
            cached = q.cache_lookup(s, list(set(keys.values())))
            rows = [
                cached_prediction(pid, keys[pid], cached[keys[pid]], judged_at=utcnow())
                for pid, _ in chunk
                if keys[pid] in cached
            ]
            q.update_predictions(s, rows)
            hits += len(rows)
    return hits


def submit_open_parts(job: BatchJob) -> int:
    """Step 2a: a recorded part without a batch id (the process died between "create" and its commit)
    is adopted when the provider has it, else submitted again (under ``job.view``). Returns requests submitted."""
    api_calls = 0
    for part in job.state.get("parts", []):
        if part.get("batch_id") is None:
            found = job.provider.find(job.run_id, part)
            if found:
                part["batch_id"] = found
                part["adopted"] = True
            else:
                _submit_part(job, part, None)
                api_calls += len(part["ids"])
            save_state(job.engine, job.run_id, job.state)
    return api_calls


def submit_new_parts(job: BatchJob, todo: list[tuple[int, str]]) -> int:
    """Step 2b: submit ``todo`` in new parts of at most ``state["size"]`` requests, each request made of
    the sample's ``job.view`` rendering; returns requests submitted."""
    api_calls = 0
    for chunk in chunks(todo, stored_batch_settings(job.run_id, job.state).batch_size):
        part = {
            "k": len(job.state.get("parts", [])),
            "ids": [pid for pid, _ in chunk],
            "batch_id": None,
            "intent_at": time.time(),
            "collected": False,
        }
        _submit_part(job, part, chunk)
        api_calls += len(chunk)
    return api_calls


def _submit_part(job: BatchJob, part: dict[str, Any], chunk: Sequence[tuple[int, str]] | None) -> None:
    """Record the part (intent), submit it (the texts under ``job.view``), record its batch id. ``chunk`` None:
    rebuild from ids."""
    engine, run_id, state, provider = job.engine, job.run_id, job.state, job.provider
    if chunk is None:
        sid_of = prediction_sample_ids(engine, part["ids"])
        chunk = [(pid, sid_of[pid]) for pid in part["ids"]]
    if part not in state.setdefault("parts", []):
        state["parts"].append(part)
    part["intent_at"] = time.time()
    with tempfile.TemporaryDirectory(prefix="automonitor-batch-") as tmp:
        path = os.path.join(tmp, f"{run_id}-{part['k']}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for sub in chunks(chunk, CHUNK):
                texts = texts_of_samples(engine, [sid for _, sid in sub], job.view)
                f.writelines(provider.request_line(custom_id(pid), texts[sid]) + "\n" for pid, sid in sub)
        prep = provider.prepare(path, run_id, part)  # OpenAI: upload the file (id kept in the part)
        part.update(prep)
        save_state(engine, run_id, state)  # intent committed before "create"
        part["batch_id"] = provider.create(path, run_id, part)
    part["submitted_at"] = time.time()
    save_state(engine, run_id, state)
