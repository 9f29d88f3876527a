"""``run --batch``: judge a run through a provider's batch API (about half the price, results within
hours) instead of one request per sample: OpenAI Batch API (:mod:`.openai`) or Anthropic Message Batches
(:mod:`.anthropic`), official SDK calls only.

:func:`enable` marks a run for batch execution (``Run.params["batch"]``);
:func:`automonitor.runs.runner.execute_run` hands it to :func:`execute_batch`, which writes cached
verdicts, submits the rest in parts recorded before and after each ``create`` (so ``--resume`` polls
instead of resubmitting), polls, and collects each result through the monitor's own backend; failed or
missing items become ``error`` outcomes. How and why: docs/how-to/combined-and-batch.md ("Batch runs").
Modules: :mod:`.state`, :mod:`.provider`, :mod:`.submit` (cache, submit), :mod:`.collect` (poll,
collect), :mod:`.execute`, :mod:`.result_rows`.
"""

from __future__ import annotations

from automonitor.runs.batch.execute import execute_batch
from automonitor.runs.batch.provider import batch_api_of, batch_backends

# the provider modules register their classes when imported
from automonitor.runs.batch import anthropic, openai  # noqa: F401
from automonitor.runs.batch.state import DEFAULT_POLL_S, DEFAULT_SIZE, enable, is_batch

__all__ = [
    "enable",
    "is_batch",
    "execute_batch",
    "batch_api_of",
    "batch_backends",
    "DEFAULT_POLL_S",
    "DEFAULT_SIZE",
]
