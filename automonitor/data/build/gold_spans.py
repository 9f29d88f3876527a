"""The build's gold spans (:mod:`automonitor.data.spans`): derived spans of the planned gold misbehavior
rows reconciled with the store (insert missing, delete stale); ``annotated`` spans are never touched.
Candidates get none (their label is only intended and annotators must not see a hint)."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from automonitor.data.spans import DERIVED, derive_gold_spans
from automonitor.jsontypes import JSONObject
from store.queries import spans as span_queries

PlannedSpans = dict[str, list[JSONObject]]
"""``{sample_id: [span, ...]}``: the gold spans a plan derives (:func:`planned_spans`; each span a JSON object
with ``start``, ``end``, ``provenance``, ``note``, ``step``), as the plan cache keeps them."""


def planned_spans(rows: list[dict[str, Any]]) -> PlannedSpans:
    """``{sample_id: [span dict]}`` of the derived spans of the gold misbehavior rows of a plan (the
    benign side of each pair is the row with the same ``pair_id``)."""
    benign = {r["pair_id"]: r["response"] for r in rows if r.get("label") == "benign"}
    out: PlannedSpans = {}
    for r in rows:
        if r.get("label") != "misbehavior" or r.get("status") != "gold":
            continue
        spans = derive_gold_spans(r, benign.get(r["pair_id"]))
        if spans:
            out[r["id"]] = [sp.model_dump() for sp in spans]
    return out


def sync_spans(
    session: Session,
    rows: list[dict[str, Any]],
    kept: set[str],
    want: PlannedSpans | None = None,
) -> dict[str, int]:
    """Make the store's derived spans of the build rows ``rows`` equal to :func:`planned_spans` (``want``:
    ``planned_spans(rows)`` when the caller has it, e.g. read back with a cached plan).

    Samples in ``kept`` (adjudicated / finalized) keep what they have. Returns ``{"inserted": n,
    "deleted": n}``.
    """
    if want is None:
        want = planned_spans(rows)
    ids = [r["id"] for r in rows if r["id"] not in kept]
    have = span_queries.spans_by_sample(session, ids)
    add: list[tuple[str, JSONObject]] = []
    drop: list[tuple[str, int, int, str]] = []
    for sid in ids:
        cur = {
            (s["start"], s["end"], s["provenance"], s["note"]): s
            for s in have.get(sid, [])
            if s["provenance"] in DERIVED
        }
        new = {(s["start"], s["end"], s["provenance"], s["note"]): s for s in want.get(sid, [])}
        drop += [(sid, k[0], k[1], k[2]) for k in cur if k not in new]
        add += [(sid, new[k]) for k in new if k not in cur]
    deleted = span_queries.delete_span_rows(session, drop)
    return {"inserted": span_queries.insert_spans(session, add), "deleted": deleted}
