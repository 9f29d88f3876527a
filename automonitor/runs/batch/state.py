"""The batch state of a run (``Run.params["batch"]``: provider, poll interval, part size and the recorded
parts), marking a run for batch execution, and the chunked store reads the steps share."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from sqlalchemy.engine import Engine

from automonitor.runs.batch.provider import BatchProvider, batch_api_of, batch_backends
from automonitor.errors import InputError
from automonitor.runs.cache import view_text
from automonitor.runs.params import DEFAULT_BATCH_POLL_S, DEFAULT_BATCH_SIZE, BatchSettings, batch_settings
from automonitor.vocab import DEFAULT_VIEW
from store import session_scope
from store.queries import runs as q
from store.queries.rowtypes import JudgedText, SampleText

DEFAULT_POLL_S = DEFAULT_BATCH_POLL_S  # the batch options' defaults (automonitor.runs.params.BatchSettings)
DEFAULT_SIZE = DEFAULT_BATCH_SIZE
CHUNK = 2000

KeyFor = Callable[[JudgedText], str]  # a sample's text -> its cache key (CacheKeys, repeat 0)


@dataclass(frozen=True)
class BatchJob:
    """The batch run the steps work on: its store and id, its batch ``state`` (``Run.params["batch"]``,
    changed in place and committed by :func:`save_state`), the ``provider``, ``key_for`` (a sample's text ->
    its cache key) and the run's monitor ``view`` (what each request shows of a sample)."""

    engine: Engine
    run_id: str
    state: dict[str, Any]
    provider: BatchProvider
    key_for: KeyFor
    view: str


def enable(
    engine: Engine, run_id: str, *, poll_s: object = DEFAULT_POLL_S, size: object = DEFAULT_SIZE
) -> BatchSettings:
    """Mark ``run_id`` (a run of a backend with a ``batch_api``: :func:`batch_backends`) for batch execution,
    polling every ``poll_s`` seconds and submitting parts of at most ``size`` requests (the batch options
    ``batch_poll`` and ``batch_size``, validated by :func:`automonitor.runs.params.batch_settings` before
    anything is written). Returns the validated options.

    Raises:
        NotFound: no such run. InputError: another backend (field ``batch``), a poll interval that is not
            a finite number of seconds in (0, 86400] (field ``batch_poll``) or a part size that is not a
            whole number >= 1 within the provider's limit (field ``batch_size``:
            :data:`automonitor.runs.params.BATCH_SIZE_LIMITS`).
    """
    batch_settings({"batch_poll": poll_s, "batch_size": size})  # the declared rule, before the store is read
    with session_scope(engine) as s:
        run = q.get_run(s, run_id)
        backend = (run.params or {}).get("backend") or run.monitor.split(":", 1)[0]
        provider = batch_api_of(backend)
        if provider is None:
            raise InputError(
                f"--batch needs a monitor whose backend has a batch API ({', '.join(batch_backends())}), not {backend}",
                field="batch",
            )
        opts = batch_settings({"batch_poll": poll_s, "batch_size": size}, provider)  # and the provider's limit
        p = dict(run.params or {})
        p["batch"] = {"provider": provider, "poll_s": opts.batch_poll, "size": opts.batch_size, "parts": []}
        run.params = p
        s.add(run)
    return opts


def is_batch(params: dict[str, Any] | None) -> bool:
    """Whether a run's params mark it for batch execution."""
    return bool((params or {}).get("batch"))


def save_state(engine: Engine, run_id: str, state: dict[str, Any]) -> None:
    """Commit ``state`` as ``Run.params["batch"]`` (and refresh the lease heartbeat).

    Raises:
        NotFound: the run was deleted meanwhile.
    """
    with session_scope(engine) as s:
        run = q.get_run(s, run_id)
        p = dict(run.params or {})
        p["batch"] = state
        if p.get("lease"):
            p["lease"] = {**p["lease"], "heartbeat": time.time()}
        run.params = p
        s.add(run)


def recorded_ids(state: dict[str, Any]) -> set[int]:
    """Prediction ids of every part recorded in ``state`` (submitted or about to be)."""
    return {i for part in state.get("parts", []) for i in part["ids"]}


def texts_of_samples(engine: Engine, sample_ids: list[str], view: str = DEFAULT_VIEW) -> dict[str, SampleText]:
    """Sample id -> its text fields (request, response, ...) for ``sample_ids``, the response as the monitor
    is shown it under ``view`` (:func:`automonitor.runs.cache.view_text`, as the live runner does).

    Raises:
        InputError: a sample has no such view (changed since the run was created).
    """
    with session_scope(engine) as s:
        texts = q.sample_texts(s, sample_ids)
    return {sid: view_text(t, view) for sid, t in texts.items()}


def prediction_sample_ids(engine: Engine, prediction_ids: list[int]) -> dict[int, str]:
    """Prediction id -> its sample id for ``prediction_ids``."""
    with session_scope(engine) as s:
        return q.prediction_samples(s, prediction_ids)
