"""``run --batch``: judge a run through a provider's batch API (about half the price, results within
hours) instead of one request per sample.

Providers (one module each, official SDK calls only):
- :mod:`automonitor.runs.batch.openai`: OpenAI Batch API (``files.create(purpose="batch")`` with the request
  JSONL, ``batches.create``, ``batches.retrieve`` polling ``validating -> in_progress -> finalizing ->
  completed``, ``files.content`` of the output and error files);
- :mod:`automonitor.runs.batch.anthropic`: Anthropic Message Batches (``messages.batches.create``,
  ``retrieve`` polling ``in_progress -> ended``, ``results`` JSONL).

Life of a batch run
-------------------
:func:`enable` marks a run created by :func:`automonitor.runs.runner.create_run` for batch execution
(``Run.params["batch"]``); :func:`automonitor.runs.runner.execute_run` then hands it to :func:`execute_batch`:

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
   failed, errored, expired or cancelled items, result lines that cannot be read and items missing from
   the results become ``error`` outcomes (``meta.error_kind`` = ``batch_failed``/``batch_expired``/
   ``batch_canceled``/``batch_malformed``/``batch_missing``: :data:`automonitor.vocab.BatchErrorKind`)
   that ``--retry-errors`` can resend. Cost = tokens x list price x 0.5 (the batch
   discount, ``meta.batch_discount``). Verdicts (not errors) go to the judge cache like live ones.

Memory: requests are written to the upload file and results parsed part by part, chunk by chunk.

Modules: :mod:`~automonitor.runs.batch.state` (``Run.params["batch"]``, :func:`enable`),
:mod:`~automonitor.runs.batch.provider` (protocol, provider by name, request ids), :mod:`~automonitor.runs.batch.submit`
(steps 1-2), :mod:`~automonitor.runs.batch.collect` (steps 3-4), :mod:`~automonitor.runs.batch.execute`
(:func:`execute_batch`) and :mod:`~automonitor.runs.batch.result_rows` (result rows for the provider modules).
"""

from __future__ import annotations

from automonitor.runs.batch.execute import execute_batch
from automonitor.runs.batch.provider import (
    batch_api_of,
    batch_backends,
    custom_id,
)

# the provider modules register their classes when imported
from automonitor.runs.batch import anthropic, openai  # noqa: F401
from automonitor.runs.batch.result_rows import judgement_row
from automonitor.runs.batch.state import DEFAULT_POLL_S, DEFAULT_SIZE, enable, is_batch

__all__ = [
    "enable",
    "is_batch",
    "execute_batch",
    "custom_id",
    "batch_api_of",
    "batch_backends",
    "DEFAULT_POLL_S",
    "DEFAULT_SIZE",
    "judgement_row",
]
