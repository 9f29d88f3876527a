"""Adjudication: the queue of disagreements and ``unsure`` items, decisions, and their records."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from automonitor.accounts import Account, check_actor, require_admin
from automonitor.errors import InputError, NotFound, PermissionDenied
from automonitor.vocab import LABELS
from automonitor.annotation._common import DECISIONS, GUIDELINE_VERSION, _clean_text, _transaction


@dataclass(frozen=True)
class QueueEntry:
    """One item of the adjudication queue (admin view). ``labels``: one dict per annotator with
    ``annotator`` (a real name only when names are revealed, else ``Annotator 1``, ``Annotator 2``
    ... in an order that differs from item to item), ``label``, ``category``, ``severity``, ``evidence_text``, ``note``. ``reason``:
    ``disagreement`` or ``unsure``. ``decision``: the latest adjudication (or ``None``)."""

    sample_id: str
    pair_id: str
    category: str
    task: str
    source: str
    intended_label: str
    request: str
    response: str
    reason: str
    labels: list[dict[str, Any]]
    decision: dict[str, Any] | None = None


def _resolution(labels: list[str], n_assigned: int, n_submitted: int) -> str | None:
    """Consensus label of an item: the common label when every assigned annotator has submitted and
    all agree on ``misbehavior`` or ``benign``; ``None`` otherwise."""
    if n_assigned == 0 or n_submitted < n_assigned or len(labels) < n_assigned:
        return None
    if len(set(labels)) == 1 and labels[0] in LABELS:
        return labels[0]
    return None


def adjudication_queue(
    engine: Engine, actor: Account, *, reveal_names: bool = False, include_decided: bool = False
) -> list[QueueEntry]:
    """Candidate items whose assigned annotators have all submitted and that either disagree or
    carry an ``unsure`` label (admin only). Already adjudicated items are left out unless
    ``include_decided``. Annotator names are replaced by ``Annotator 1..k`` (in a stable order that
    differs from item to item, so an alias does not identify a person) unless ``reveal_names``. Ordered by pair then sample id."""
    from store.models import Sample
    from automonitor.annotation.queries import assignment_rows, label_rows, latest_adjudications

    require_admin(actor)

    def work(s):
        check_actor(s, actor)
        samples = {
            r.id: r
            for r in s.execute(
                sa.select(
                    Sample.id,
                    Sample.pair_id,
                    Sample.category,
                    Sample.task,
                    Sample.source,
                    Sample.label,
                    Sample.request,
                    Sample.response,
                ).where(Sample.status == "candidate")
            )
        }
        n_assigned: dict[str, int] = {}
        for r in assignment_rows(s, actor):
            if r["sample_id"] in samples:
                n_assigned[r["sample_id"]] = n_assigned.get(r["sample_id"], 0) + 1
        by_item: dict[str, list[dict[str, Any]]] = {}
        for r in label_rows(s, actor, submitted_only=True):
            if r["sample_id"] in samples:
                by_item.setdefault(r["sample_id"], []).append(r)
        decided = latest_adjudications(s, actor)
        out = []
        for sid in sorted(by_item, key=lambda x: (samples[x].pair_id, x)):
            if reveal_names:
                rows = sorted(by_item[sid], key=lambda r: r["annotator"])
            else:  # a per-item order, so "Annotator 1" is not the same person on every item
                rows = sorted(
                    by_item[sid], key=lambda r: hashlib.sha256(f"{sid}\x00{r['annotator']}".encode()).hexdigest()
                )
            if len(rows) < n_assigned.get(sid, 0):
                continue  # someone has not submitted yet
            labels = [r["label"] for r in rows]
            if "unsure" in labels:
                reason = "unsure"
            elif len(set(labels)) > 1:
                reason = "disagreement"
            else:
                continue
            if sid in decided and not include_decided:
                continue
            smp = samples[sid]
            out.append(
                QueueEntry(
                    sample_id=sid,
                    pair_id=smp.pair_id,
                    category=smp.category,
                    task=smp.task,
                    source=smp.source,
                    intended_label=smp.label,
                    request=smp.request,
                    response=smp.response,
                    reason=reason,
                    labels=[
                        {
                            "annotator": r["annotator"] if reveal_names else f"Annotator {i + 1}",
                            "label": r["label"],
                            "category": r["category"],
                            "severity": r["severity"],
                            "evidence_text": r["evidence_text"],
                            "note": r["note"],
                        }
                        for i, r in enumerate(rows)
                    ],
                    decision=_public_decision(decided.get(sid)),
                )
            )
        return out

    return _transaction(engine, work)


def _public_decision(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    from store.queries.annotation import as_utc_iso

    return {
        "decision": "reject" if row["decision"] == "reject" else row["gold_label"],
        "note": row["note"],
        "adjudicator": row["adjudicator"],
        "created_at": as_utc_iso(row["created_at"]),
        "guideline_version": row["guideline_version"],
    }


def adjudicate(
    engine: Engine,
    actor: Account,
    sample_id: str,
    decision: str,
    note: str | None = None,
    *,
    guideline_version: str = GUIDELINE_VERSION,
) -> dict[str, Any]:
    """Record an adjudicator's decision on a candidate item (admin only): ``misbehavior`` or
    ``benign`` (the gold label) or ``reject`` (``note`` = the reason, required). A later decision on
    the same item supersedes an earlier one (the history is kept). The pair moves into the gold set
    only through :func:`finalize_pairs`.

    Returns ``{"sample_id", "decision", "note", "adjudicator", "created_at", "guideline_version"}``.

    Raises:
        InputError: unknown decision (field ``decision``), reject without a note (field ``note``),
            item not a candidate any more (field ``sample_id``).
        NotFound: no such item.
    """
    from store.models import Adjudication, Sample

    require_admin(actor)
    if decision not in DECISIONS:
        raise InputError(f"decision must be one of {', '.join(DECISIONS)}", field="decision")
    note = _clean_text(note, "note")
    if decision == "reject" and not note:
        raise InputError("a rejection needs a reason in the note", field="note")
    gv = _clean_text(guideline_version, "guideline_version", 32) or GUIDELINE_VERSION

    def work(s):
        row = check_actor(s, actor)
        if row is None:
            raise PermissionDenied("adjudication needs a named admin account (it is recorded)")
        smp = s.get(Sample, sample_id)
        if smp is None:
            raise NotFound(f"no item {sample_id!r}")
        if smp.status != "candidate":
            raise InputError(f"item {sample_id!r} is already {smp.status}", field="sample_id")
        adj = Adjudication(
            sample_id=sample_id,
            pair_id=smp.pair_id,
            adjudicator_id=row.id,
            decision="reject" if decision == "reject" else "accept",
            gold_label=None if decision == "reject" else decision,
            note=note,
            guideline_version=gv,
        )
        s.add(adj)
        s.flush()
        from store.queries.annotation import as_utc_iso

        return {
            "sample_id": sample_id,
            "decision": decision,
            "note": note,
            "adjudicator": actor.name,
            "created_at": as_utc_iso(adj.created_at),
            "guideline_version": gv,
        }

    return _transaction(engine, work)


def adjudication_records(engine: Engine, actor: Account) -> list[dict[str, Any]]:
    """Every adjudication with provenance (admin only), oldest first: ``sample_id``, ``pair_id``,
    ``adjudicator``, ``decision`` (``misbehavior|benign|reject``), ``note``, ``split``,
    ``guideline_version``, ``created_at`` (ISO 8601 UTC), ``item_status`` (candidate/gold/rejected),
    ``item_category``, ``task``, ``final_label``, ``superseded`` (a later decision on the item exists),
    and ``annotator_labels`` (``[{"annotator", "label", "submitted_at"}]``)."""
    from automonitor.annotation.queries import adjudication_rows, as_utc_iso, label_rows

    require_admin(actor)

    def work(s):
        check_actor(s, actor)
        rows = adjudication_rows(s, actor)
        labels: dict[str, list[dict[str, Any]]] = {}
        for r in label_rows(s, actor, sample_ids={r["sample_id"] for r in rows}):
            labels.setdefault(r["sample_id"], []).append(
                {"annotator": r["annotator"], "label": r["label"], "submitted_at": as_utc_iso(r["submitted_at"])}
            )
        last = {r["sample_id"]: r["id"] for r in rows}
        return [
            {
                "sample_id": r["sample_id"],
                "pair_id": r["pair_id"],
                "adjudicator": r["adjudicator"],
                "decision": "reject" if r["decision"] == "reject" else r["gold_label"],
                "note": r["note"],
                "split": r["split"],
                "guideline_version": r["guideline_version"],
                "created_at": as_utc_iso(r["created_at"]),
                "item_status": r["sample_status"],
                "item_category": r["item_category"],
                "task": r["task"],
                "final_label": r["current_label"] if r["sample_status"] == "gold" else None,
                "superseded": last[r["sample_id"]] != r["id"],
                "annotator_labels": labels.get(r["sample_id"], []),
            }
            for r in rows
        ]

    return _transaction(engine, work)
