"""The prediction rows a provider module builds from one batch result: a backend ``Judgement`` at the
batch price (:func:`judgement_row`) or a failed item (:func:`error_row`)."""

from __future__ import annotations

from typing import Any

from automonitor.runs.monitors import Judgement
from automonitor.runs.verdicts import judgement_fields
from automonitor.vocab import BatchErrorKind

BATCH_DISCOUNT = 0.5


def error_row(kind: BatchErrorKind, reason: str, raw: str | None = None, **meta: Any) -> dict[str, Any]:
    """A prediction row for a failed batch item: outcome ``error`` with ``meta.error_kind`` = ``kind``."""
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
    fields = judgement_fields(j)  # first: it may flag raw_truncated / tokens_clamped / not_cached
    return {
        **fields,
        "cost_usd": round(fields["cost_usd"] * BATCH_DISCOUNT, 10),
        "latency_ms": None,
        "meta": {**j.meta, "batch_discount": BATCH_DISCOUNT},
    }
