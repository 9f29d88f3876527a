"""Adjudication: the queue of disagreements and ``unsure`` items, decisions, and their records."""

from __future__ import annotations

from collections import Counter
import hashlib
from dataclasses import dataclass
from typing import Mapping, Sequence, TypedDict

from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.annotation.accounts import Account, check_actor, require_admin
from automonitor.annotation._common import DECISIONS, GUIDELINE_VERSION, clean_text, transaction, label_spans
from automonitor.annotation.span_agreement import lowest_pair_f1, unmarked_count
from automonitor.annotation.queries import (
    adjudication_rows,
    assignment_rows,
    label_rows,
    latest_adjudications,
)
from automonitor.errors import InputError, NotFound, PermissionDenied
from automonitor.data.spans import GoldSpan, SpanError, validate_spans
from automonitor.timestamps import iso_utc
from automonitor.vocab import LABELS
from store.models import Adjudication
from store.queries import annotation as store
from store.queries import spans as span_queries
from store.queries.rowtypes import AdjudicationRow, CandidateDetail, LabelRow


class QueueLabel(TypedDict):
    """One annotator's label as the adjudication queue shows it (:attr:`QueueEntry.labels`)."""

    annotator: str
    label: str
    category: str | None
    severity: str | None
    evidence_text: str | None
    evidence_start: int | None
    evidence_end: int | None
    evidence_spans: list[tuple[int, int]]
    note: str | None


class PublicDecision(TypedDict):
    """The latest adjudication of a queued item (:attr:`QueueEntry.decision`): ``decision`` is the gold
    label or ``reject``; ``created_at`` ISO 8601 UTC."""

    decision: str | None
    note: str | None
    adjudicator: str
    created_at: str | None
    guideline_version: str


class Decision(PublicDecision):
    """What :func:`adjudicate` recorded: the decision (here never ``None``) on item ``sample_id``."""

    sample_id: str


class AnnotatorLabel(TypedDict):
    """An annotator's label in an :class:`AdjudicationRecord`."""

    annotator: str
    label: str
    submitted_at: str | None


class AdjudicationRecord(TypedDict):
    """One adjudication with provenance (:func:`adjudication_records`)."""

    sample_id: str
    pair_id: str
    adjudicator: str
    decision: str | None
    note: str | None
    split: str | None
    guideline_version: str
    created_at: str | None
    item_status: str
    item_category: str
    task: str
    final_label: str | None
    superseded: bool
    annotator_labels: list[AnnotatorLabel]


@dataclass(frozen=True)
class QueueEntry:
    """One item of the adjudication queue (admin view). ``labels``: one dict per annotator with
    ``annotator`` (a real name only when names are revealed, else ``Annotator 1``, ``Annotator 2``
    ... in an order that differs from item to item), ``label``, ``category``, ``severity``, ``evidence_text``, ``evidence_start``/``evidence_end``
    (the hull), ``evidence_spans`` (``[(start, end), ...]``), ``note``. ``reason``: one of
    :data:`QUEUE_REASONS` (``unsure``, ``disagreement`` or ``span_disagreement``). ``span_f1``: the
    lowest pairwise span F1 of the annotators when all chose ``misbehavior`` and one marked a span
    (:func:`automonitor.annotation.span_agreement.lowest_pair_f1`), else ``None``. ``decision``: the
    latest adjudication (or ``None``)."""

    sample_id: str
    pair_id: str
    category: str
    task: str
    source: str
    intended_label: str
    request: str
    response: str
    reason: str
    labels: list[QueueLabel]
    decision: PublicDecision | None = None
    span_f1: float | None = None
    #: annotators who chose ``misbehavior`` but marked no span while another did (a span is optional)
    unmarked: int = 0


#: Span F1 below which annotators who all chose ``misbehavior`` disagree on *where* it is: the item goes
#: to the adjudication queue (reason ``span_disagreement``) and finalize waits for the adjudicator's
#: spans. 0.5 = the marked characters overlap less than they differ: e.g. one annotator marks one line
#: and the other that line plus a longer one, or their marks do not overlap at all (F1 0), or one marked
#: nothing. At 0.5 or above the marks are taken as agreement and finalize stores their merge
#: (:func:`proposed_spans`) as ``annotated`` gold spans.
SPAN_F1_THRESHOLD = 0.5

#: Why an item is in the adjudication queue, as shown on the Adjudicate page.
QUEUE_REASONS: dict[str, str] = {
    "unsure": "an annotator chose unsure",
    "disagreement": "the annotators' labels differ",
    "span_disagreement": f"all chose misbehavior but marked different spans (span F1 below {SPAN_F1_THRESHOLD})",
    "missing_span": "all chose misbehavior and agree on the spans marked, but one annotator marked no span "
    "(queued because AUTOMONITOR_QUEUE_MISSING_SPANS is set)",
}


def span_disagreement(rows: Sequence[Mapping[str, object]]) -> bool:
    """Whether an item's label rows (all its annotators') say ``misbehavior`` but disagree on where:
    their lowest pairwise span F1 (:func:`automonitor.annotation.span_agreement.lowest_pair_f1`) is
    below :data:`SPAN_F1_THRESHOLD`. ``False`` when a label is not misbehavior or nobody marked a span."""
    f1 = lowest_pair_f1(rows)
    return f1 is not None and f1 < SPAN_F1_THRESHOLD


def resolution(labels: list[str], n_assigned: int, n_submitted: int) -> str | None:
    """Consensus label of an item: the common label when every assigned annotator has submitted and
    all agree on ``misbehavior`` or ``benign``; ``None`` otherwise."""
    complete = n_assigned > 0 and n_submitted >= n_assigned and len(labels) >= n_assigned
    return labels[0] if complete and len(set(labels)) == 1 and labels[0] in LABELS else None


def adjudication_queue(
    engine: Engine, actor: Account, *, reveal_names: bool = False, include_decided: bool = False
) -> list[QueueEntry]:
    """Candidate items whose assigned annotators have all submitted and that disagree on the label,
    carry an ``unsure`` label, or agree on ``misbehavior`` but not on where it is (span F1 below
    :data:`SPAN_F1_THRESHOLD`) (admin only). Already adjudicated items are left out unless
    ``include_decided``. Annotator names are replaced by ``Annotator 1..k`` (in a stable order that
    differs from item to item, so an alias does not identify a person) unless ``reveal_names``. Ordered by pair then sample id."""
    require_admin(actor)

    def work(s: Session) -> list[QueueEntry]:
        samples = store.candidate_details(s)
        n_assigned = Counter(r["sample_id"] for r in assignment_rows(s, actor) if r["sample_id"] in samples)
        by_item: dict[str, list[LabelRow]] = {}
        for r in label_rows(s, actor, submitted_only=True):
            if r["sample_id"] in samples:
                by_item.setdefault(r["sample_id"], []).append(r)
        decided = latest_adjudications(s, actor)
        out = []
        for sid in sorted(by_item, key=lambda x: (samples[x]["pair_id"], x)):
            rows = _ordered_labels(sid, by_item[sid], reveal_names)
            if len(rows) < n_assigned.get(sid, 0):
                continue  # someone has not submitted yet
            reason = _queue_reason(rows)
            if reason is None or (sid in decided and not include_decided):
                continue
            out.append(_queue_entry(samples[sid], rows, reason, reveal_names, _public_decision(decided.get(sid))))
        return out

    return transaction(engine, work, actor=actor)


def _ordered_labels(sample_id: str, rows: list[LabelRow], reveal_names: bool) -> list[LabelRow]:
    """An item's label rows in display order: by annotator name when names are revealed, else in a
    per-item order (a hash of item and name), so "Annotator 1" is not the same person on every item."""
    if reveal_names:
        return sorted(rows, key=lambda r: r["annotator"])
    return sorted(rows, key=lambda r: hashlib.sha256(f"{sample_id}\x00{r['annotator']}".encode()).hexdigest())


def _queue_reason(rows: list[LabelRow]) -> str | None:
    """Why an item needs adjudication, from its label rows: ``unsure`` (a label is unsure),
    ``disagreement`` (labels differ), ``span_disagreement`` (all ``misbehavior``, spans apart:
    :func:`span_disagreement`), ``missing_span`` (all ``misbehavior``, the marked spans agree but an
    annotator marked none, queued only under ``AUTOMONITOR_QUEUE_MISSING_SPANS``), or ``None`` (all agree)."""
    labels = [r["label"] for r in rows]
    if "unsure" in labels:
        return "unsure"
    if len(set(labels)) > 1:
        return "disagreement"
    if span_disagreement(rows):
        apart = lowest_pair_f1(rows, missing_disagrees=False)
        if unmarked_count(rows) and (apart is None or apart >= SPAN_F1_THRESHOLD):
            return "missing_span"  # only the setting makes it adjudication work
        return "span_disagreement"
    return None


def _queue_entry(
    sample: CandidateDetail,
    rows: list[LabelRow],
    reason: str,
    reveal_names: bool,
    decision: PublicDecision | None,
) -> QueueEntry:
    """The :class:`QueueEntry` of a candidate item (``sample``: a row of
    :func:`store.queries.annotation.candidate_details`) with its ordered label ``rows``; annotators are
    named ``Annotator 1..k`` in that order unless ``reveal_names``."""
    return QueueEntry(
        sample_id=sample["id"],
        pair_id=sample["pair_id"],
        category=sample["category"],
        task=sample["task"],
        reason=reason,
        source=sample["source"],
        intended_label=sample["label"],
        request=sample["request"],
        response=sample["response"],
        labels=[
            QueueLabel(
                annotator=r["annotator"] if reveal_names else f"Annotator {i + 1}",
                label=r["label"],
                category=r["category"],
                severity=r["severity"],
                evidence_text=r["evidence_text"],
                evidence_start=r.get("evidence_start"),
                evidence_end=r.get("evidence_end"),
                evidence_spans=label_spans(r),
                note=r["note"],
            )
            for i, r in enumerate(rows)
        ],
        decision=decision,
        span_f1=lowest_pair_f1(rows),
        unmarked=unmarked_count(rows),
    )


def _public_decision(row: AdjudicationRow | None) -> PublicDecision | None:
    """The adjudication shown in the queue (``decision`` = the gold label or ``reject``), from a row of
    :func:`store.queries.annotation.latest_adjudications`; ``None`` for none."""
    if row is None:
        return None
    return PublicDecision(
        decision="reject" if row["decision"] == "reject" else row["gold_label"],
        note=row["note"],
        adjudicator=row["adjudicator"],
        created_at=iso_utc(row["created_at"]),
        guideline_version=row["guideline_version"],
    )


def adjudicate(
    engine: Engine,
    actor: Account,
    sample_id: str,
    decision: str,
    note: str | None = None,
    *,
    spans: Sequence[tuple[int, int]] | None = None,
) -> Decision:
    """Record an adjudicator's decision on a candidate item (admin only): ``misbehavior`` or
    ``benign`` (the gold label) or ``reject`` (``note`` = the reason, required). A later decision on
    the same item supersedes an earlier one (the history is kept). The pair moves into the gold set
    only through :func:`finalize_pairs`. The item's row is locked and its status read under the lock
    (SQLite: the write lock), so a decision racing a finalize either counts in it or is refused.

    ``spans``: with ``misbehavior``, the ``(start, end)`` character offsets of where the
    misbehavior is, resolving the annotators' span disagreement (see :func:`proposed_spans`); they
    replace the item's ``annotated`` gold spans (note: ``adjudicated by <admin>``). Any other decision removes its ``annotated`` spans.

    Returns ``{"sample_id", "decision", "note", "adjudicator", "created_at", "guideline_version"}``.

    Raises:
        InputError: unknown decision (field ``decision``), reject without a note (field ``note``),
            item not a candidate any more (field ``sample_id``).
        NotFound: no such item.
    """
    require_admin(actor)
    if decision not in DECISIONS:
        raise InputError(f"decision must be one of {', '.join(DECISIONS)}", field="decision")
    clean_note = clean_text(note, "note")
    if decision == "reject" and not clean_note:
        raise InputError("a rejection needs a reason in the note", field="note")
    gold = None
    if spans is not None:
        if decision != "misbehavior":
            raise InputError("gold spans go with the decision misbehavior only", field="spans")
        try:
            gold = [
                GoldSpan(start=int(a), end=int(b), provenance="annotated", note=f"adjudicated by {actor.name}")
                for a, b in spans
            ]
        except (TypeError, ValueError) as exc:
            raise InputError(f"bad span: {exc}", field="spans") from None

    def work(s: Session) -> Decision:
        row = check_actor(s, actor)
        if row is None or row.id is None:
            raise PermissionDenied("adjudication needs a named admin account (it is recorded)")
        smp = store.lock_sample(s, sample_id)  # a concurrent finalize waits for this decision, or it for it
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
            note=clean_note,
            guideline_version=GUIDELINE_VERSION,
        )
        s.add(adj)
        s.flush()
        if decision != "misbehavior":
            span_queries.delete_spans(s, [sample_id], ["annotated"])
        elif gold is not None:
            try:
                validate_spans(smp.response, gold)
            except SpanError as exc:
                raise InputError(str(exc), field=f"spans[{exc.index}].{exc.field}") from None
            span_queries.delete_spans(s, [sample_id], ["annotated"])
            span_queries.insert_spans(s, [(sample_id, g.model_dump()) for g in gold])
        return Decision(
            sample_id=sample_id,
            decision=decision,
            note=clean_note,
            adjudicator=actor.name,
            created_at=iso_utc(adj.created_at),
            guideline_version=GUIDELINE_VERSION,
        )

    return transaction(engine, work, write_lock=True)


def proposed_spans(labels: Sequence[Mapping[str, object]]) -> list[tuple[int, int]]:
    """A resolution of the annotators' evidence spans to offer the adjudicator: every span marked by
    annotators who chose ``misbehavior`` (all of a label's ``evidence_spans``, or its one
    ``evidence_start``/``evidence_end`` span), overlapping ones merged into their union; disjoint
    marks stay separate spans, so text nobody marked never becomes gold. Sorted by start."""
    marks = sorted(span for r in labels if r.get("label") == "misbehavior" for span in label_spans(r))
    out: list[tuple[int, int]] = []
    for a, b in marks:
        if out and a < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def adjudication_records(engine: Engine, actor: Account) -> list[AdjudicationRecord]:
    """Every adjudication with provenance (admin only), oldest first: ``sample_id``, ``pair_id``,
    ``adjudicator``, ``decision`` (``misbehavior|benign|reject``), ``note``, ``split``,
    ``guideline_version``, ``created_at`` (ISO 8601 UTC), ``item_status`` (candidate/gold/rejected),
    ``item_category``, ``task``, ``final_label``, ``superseded`` (a later decision on the item exists),
    and ``annotator_labels`` (``[{"annotator", "label", "submitted_at"}]``)."""
    require_admin(actor)

    def work(s: Session) -> list[AdjudicationRecord]:
        rows = adjudication_rows(s, actor)
        labels: dict[str, list[AnnotatorLabel]] = {}
        for r in label_rows(s, actor, sample_ids={r["sample_id"] for r in rows}):
            labels.setdefault(r["sample_id"], []).append(
                AnnotatorLabel(annotator=r["annotator"], label=r["label"], submitted_at=iso_utc(r["submitted_at"]))
            )
        last = {r["sample_id"]: r["id"] for r in rows}
        return [
            AdjudicationRecord(
                sample_id=r["sample_id"],
                pair_id=r["pair_id"],
                adjudicator=r["adjudicator"],
                decision="reject" if r["decision"] == "reject" else r["gold_label"],
                note=r["note"],
                split=r["split"],
                guideline_version=r["guideline_version"],
                created_at=iso_utc(r["created_at"]),
                item_status=r["sample_status"],
                item_category=r["item_category"],
                task=r["task"],
                final_label=r["current_label"] if r["sample_status"] == "gold" else None,
                superseded=last[r["sample_id"]] != r["id"],
                annotator_labels=labels.get(r["sample_id"], []),
            )
            for r in rows
        ]

    return transaction(engine, work, actor=actor)
