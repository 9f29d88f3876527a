"""The rows the runner writes: a prediction from a cache entry or a fresh judgement, and the cache
entry of a judgement (the dicts ``store.queries.runs.update_predictions`` / ``cache_insert`` take)."""

from __future__ import annotations

from datetime import datetime
from typing import Mapping

from automonitor.jsontypes import JSONObject, JSONValue
from automonitor.runs.monitors import Judgement
from automonitor.runs.monitors.judgement import bounded_raw, token_count
from store.models import utcnow
from store.queries.rowtypes import CachedVerdict, VerdictFields


class ResultRow(VerdictFields):
    """A prediction's verdict as a batch provider parses it (``automonitor.runs.batch.result_rows``): the
    verdict fields, no latency (``None``: a batch has none per item) and its ``meta``."""

    latency_ms: float | None
    meta: JSONObject


class PredictionRow(VerdictFields):
    """A judged prediction as the runner writes it (``store.queries.runs.update_predictions``): the verdict
    fields, the prediction's id, its latency in ms (``None`` for batch results), whether it came from the
    cache, its ``meta`` and when it was judged."""

    id: int
    latency_ms: float | None
    cached: bool
    meta: JSONObject
    judged_at: datetime


class CacheRow(VerdictFields):
    """A judge-cache entry as the runner writes it (``store.queries.runs.cache_insert``)."""

    key: str
    meta: JSONObject
    created_at: datetime


def judgement_fields(j: Judgement) -> VerdictFields:
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


def cacheable(row: Mapping[str, object]) -> bool:
    """Whether a prediction row may become a cache entry: not ``error`` and not marked
    ``meta.not_cached`` (empty answers, content-filtered answers, unknown stop reasons: a rerun asks
    again)."""
    meta = row.get("meta")
    return row["outcome"] != "error" and not (isinstance(meta, Mapping) and meta.get("not_cached"))


def cached_prediction(
    pid: int,
    key: str,
    entry: CachedVerdict,
    *,
    judged_at: datetime,
    history: list[JSONObject] | None = None,
) -> PredictionRow:
    """A prediction row copied from the cache ``entry`` (a ``cache_lookup`` value) with no cost of its
    own: tokens and cost 0, ``cached`` True; the entry's tokens and cost go to ``meta.cached_*`` beside
    ``meta.cache_key`` (and ``meta.history``, the earlier attempts, when given)."""
    meta: JSONObject = dict(entry.get("meta") or {})
    if history is not None:
        meta["history"] = list(history)
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
    pid: int, key: str, j: Judgement, *, attempts: int, latency_ms: float, history: list[JSONObject] | None
) -> PredictionRow:
    """A prediction row from a fresh judgement: its fields, ``latency_ms`` (rounded to µs),
    ``meta.attempts`` (requests sent), ``meta.cache_key`` and ``meta.history`` when given."""
    fields = judgement_fields(j)  # first: it may flag raw_truncated / tokens_clamped in j.meta
    meta: JSONObject = dict(j.meta)
    meta.update({"attempts": attempts, "cache_key": key})
    if history is not None:
        meta["history"] = list(history)
    return {
        "id": pid,
        **fields,
        "latency_ms": round(latency_ms, 3),
        "cached": False,
        "meta": meta,
        "judged_at": utcnow(),
    }


def cache_entry(key: str, fields: VerdictFields, meta: Mapping[str, JSONValue]) -> CacheRow:
    """The cache row under ``key`` of a verdict: the :data:`~automonitor.vocab.VERDICT_FIELDS` of ``fields``
    (a judgement's fields or a prediction row), ``meta`` (copied) and ``created_at`` now. Never used for ``error``."""
    return {
        "key": key,
        "outcome": fields["outcome"],
        "score": fields["score"],
        "raw": fields["raw"],
        "reason": fields["reason"],
        "evidence": fields["evidence"],
        "pred_category": fields["pred_category"],
        "severity": fields["severity"],
        "tokens_in": fields["tokens_in"],
        "tokens_out": fields["tokens_out"],
        "cost_usd": fields["cost_usd"],
        "meta": dict(meta),
        "created_at": utcnow(),
    }
