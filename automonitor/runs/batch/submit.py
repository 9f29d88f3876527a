"""Steps 1 and 2 of a batch run: the judge-cache pass over the pending predictions, then submitting the
rest in recorded parts (adopting a part whose batch was created but not committed)."""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any, Sequence

from sqlalchemy.engine import Engine

from automonitor.runs.batch.provider import BatchProvider, custom_id
from automonitor.runs.batch.state import (
    CHUNK,
    DEFAULT_SIZE,
    KeyFor,
    recorded_ids,
    prediction_sample_ids,
    save_state,
    texts_of_samples,
)
from automonitor.vocab import DEFAULT_VIEW
from store import session_scope
from store.queries import chunks
from store.models import utcnow
from store.queries import runs as q


def cache_pass_pending(
    engine: Engine,
    run_id: str,
    state: dict[str, Any],
    pending: list[tuple[int, str, int]],
    key_for: KeyFor,
    view: str = DEFAULT_VIEW,
) -> tuple[int, list[tuple[int, str]]]:
    """Step 1: write cached verdicts for the pending predictions no recorded part covers (keyed on each
    sample's ``view`` rendering); returns (cache hits, ``[(prediction id, sample id)]`` still to submit)."""
    recorded = recorded_ids(state)
    todo = [(pid, sid) for pid, sid, *_ in pending if pid not in recorded]
    hits = _cache_pass(engine, todo, key_for, view)
    if hits:
        with session_scope(engine) as s:
            todo = [(pid, sid) for pid, sid, *_ in q.pending_predictions(s, run_id) if pid not in recorded]
    return hits, todo


def _cache_pass(engine: Engine, todo: list[tuple[int, str]], key_for: KeyFor, view: str) -> int:
    """Write cached verdicts for ``todo`` predictions (their texts under ``view``); returns the number of hits."""
    from automonitor.runs.verdicts import cached_prediction

    hits = 0
    for chunk in chunks(todo, CHUNK):
        texts = texts_of_samples(engine, [sid for _, sid in chunk], view)
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


def submit_open_parts(
    engine: Engine, run_id: str, state: dict[str, Any], provider: BatchProvider, view: str = DEFAULT_VIEW
) -> int:
    """Step 2a: a recorded part without a batch id (the process died between "create" and its commit)
    is adopted when the provider has it, else submitted again (under ``view``). Returns requests submitted."""
    api_calls = 0
    for part in state.get("parts", []):
        if part.get("batch_id") is None:
            found = provider.find(run_id, part)
            if found:
                part["batch_id"] = found
                part["adopted"] = True
            else:
                _submit_part(engine, run_id, state, provider, part, None, view)
                api_calls += len(part["ids"])
            save_state(engine, run_id, state)
    return api_calls


def submit_new_parts(
    engine: Engine,
    run_id: str,
    state: dict[str, Any],
    provider: BatchProvider,
    todo: list[tuple[int, str]],
    view: str = DEFAULT_VIEW,
) -> int:
    """Step 2b: submit ``todo`` in new parts of at most ``state["size"]`` requests, each request made of
    the sample's ``view`` rendering; returns requests submitted."""
    api_calls = 0
    for chunk in chunks(todo, int(state.get("size", DEFAULT_SIZE))):
        part = {
            "k": len(state.get("parts", [])),
            "ids": [pid for pid, _ in chunk],
            "batch_id": None,
            "intent_at": time.time(),
            "collected": False,
        }
        _submit_part(engine, run_id, state, provider, part, chunk, view)
        api_calls += len(chunk)
    return api_calls


def _submit_part(
    engine: Engine,
    run_id: str,
    state: dict[str, Any],
    provider: BatchProvider,
    part: dict[str, Any],
    chunk: Sequence[tuple[int, str]] | None,
    view: str,
) -> None:
    """Record the part (intent), submit it (the texts under ``view``), record its batch id. ``chunk`` None:
    rebuild from ids."""
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
                texts = texts_of_samples(engine, [sid for _, sid in sub], view)
                for pid, sid in sub:
                    f.write(provider.request_line(custom_id(pid), texts[sid]) + "\n")
        prep = provider.prepare(path, run_id, part)  # OpenAI: upload the file (id kept in the part)
        part.update(prep)
        save_state(engine, run_id, state)  # intent committed before "create"
        part["batch_id"] = provider.create(path, run_id, part)
    part["submitted_at"] = time.time()
    save_state(engine, run_id, state)
