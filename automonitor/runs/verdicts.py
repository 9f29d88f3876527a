"""The rows the runner writes: a prediction from a cache entry or a fresh judgement, and the cache
entry of a judgement (the dicts ``store.queries.runs.update_predictions`` / ``cache_insert`` take)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping

from automonitor.runs.monitors import Judgement
from automonitor.runs.monitors.judgement import bounded_raw, token_count
from automonitor.vocab import VERDICT_FIELDS
from store.models import utcnow


def judgement_fields(j: Judgement) -> dict[str, Any]:
    """The :data:`~automonitor.vocab.VERDICT_FIELDS` of a backend's judgement (``evidence`` as a list),
    whatever the backend did: ``raw`` bounded to its first ``RAW_STORE_CHARS`` characters and negative token counts
    clamped to 0, both flagged in ``j.meta`` (``raw_truncated``, ``tokens_clamped``); a judgement that
    must not be cached (``j.cacheable`` False) gets ``meta.not_cached`` True."""
    if not j.cacheable:
        j.meta["not_cached"] = True
    return {
        "outcome": j.outcome,
        "score": j.score,
        "raw": bounded_raw(j.raw, j.meta),
        "reason": j.reason,
        "evidence": list(j.evidence or []),
        "pred_category": j.pred_category,
        "severity": j.severity,
        "tokens_in": token_count(j.tokens_in, j.meta, "tokens_in"),
        "tokens_out": token_count(j.tokens_out, j.meta, "tokens_out"),
        "cost_usd": max(0.0, float(j.cost_usd or 0.0)),
    }


def cacheable(row: Mapping[str, Any]) -> bool:
    """Whether a prediction row may become a cache entry: not ``error`` and not marked
    ``meta.not_cached`` (empty answers, content-filtered answers, unknown stop reasons: a rerun asks
    again)."""
    return row["outcome"] != "error" and not (row.get("meta") or {}).get("not_cached")


def cached_prediction(
    pid: int,
    key: str,
    entry: Mapping[str, Any],
    *,
    judged_at: datetime,
    history: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A prediction row copied from the cache ``entry`` (a ``cache_lookup`` value) with no cost of its
    own: tokens and cost 0, ``cached`` True; the entry's tokens and cost go to ``meta.cached_*`` beside
    ``meta.cache_key`` (and ``meta.history``, the earlier attempts, when given)."""
    meta = dict(entry.get("meta") or {})
    if history is not None:
        meta["history"] = history
    meta.update(
        {
            "cache_key": key,
            "cached_tokens_in": entry.get("tokens_in", 0),
            "cached_tokens_out": entry.get("tokens_out", 0),
            "cached_cost_usd": entry.get("cost_usd", 0.0),
        }
    )
    return {
        "id": pid,
        "outcome": entry["outcome"],
        "score": entry["score"],
        "raw": entry["raw"],
        "reason": entry["reason"],
        "evidence": entry["evidence"] or [],
        "pred_category": entry["pred_category"],
        "severity": entry["severity"],
        "tokens_in": 0,
        "tokens_out": 0,
        "cost_usd": 0.0,
        "latency_ms": 0.0,
        "cached": True,
        "meta": meta,
        "judged_at": judged_at,
    }


def judged_prediction(
    pid: int, key: str, j: Judgement, *, attempts: int, latency_ms: float, history: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """A prediction row from a fresh judgement: its fields, ``latency_ms`` (rounded to µs),
    ``meta.attempts`` (requests sent), ``meta.cache_key`` and ``meta.history`` when given."""
    fields = judgement_fields(j)  # first: it may flag raw_truncated / tokens_clamped in j.meta
    meta = {**j.meta, "attempts": attempts, "cache_key": key}
    if history is not None:
        meta["history"] = history
    return {
        "id": pid,
        **fields,
        "latency_ms": round(latency_ms, 3),
        "cached": False,
        "meta": meta,
        "judged_at": utcnow(),
    }


def cache_entry(
    key: str, fields: Mapping[str, Any], meta: Mapping[str, Any], *, created_at: datetime | None = None
) -> dict[str, Any]:
    """The cache row under ``key`` of a verdict: the :data:`~automonitor.vocab.VERDICT_FIELDS` of ``fields``
    (a judgement's fields or a prediction row), ``meta`` (copied) and ``created_at`` (default now; the runner
    passes its prediction's ``judged_at``: one clock reading for both rows). Never used for ``error``."""
    return {
        "key": key,
        **{f: fields[f] for f in VERDICT_FIELDS},
        "meta": dict(meta),
        "created_at": utcnow() if created_at is None else created_at,
    }
