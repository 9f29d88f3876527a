"""An annotator's own work: queue, blinded item view, saving labels, progress and batch submission."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, cast

from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.annotation.accounts import Account, require_account
from automonitor.jsontypes import JSONValue
from automonitor.annotation._common import (
    GUIDELINE_VERSION,
    Label,
    clean_text,
    label_from_row,
    own_assignment,
    transaction,
    validate_label,
    evidence_values,
)
from automonitor.annotation.queries import assignment_rows, label_rows, upsert_label
from automonitor.errors import ChangedElsewhere, InputError
from store.models import utcnow
from store.queries import annotation as store


@dataclass(frozen=True)
class QueueItem:
    """One entry of an annotator's own queue: ``position`` is 1-based in queue order."""

    sample_id: str
    position: int
    batch: int
    label: str | None
    submitted: bool


@dataclass(frozen=True)
class ItemView:
    """What an annotator may see of an item: its queue position, request, response and their own
    label, and the response's typed trajectory steps (``steps``: ``Sample.meta["steps"]``, ``None``
    for a plain response; the same text as the response, shown as a numbered conversation), and its
    ``task`` (``qa``/``code``/``reasoning``, as ``export --blind`` gives a system under test: no hint to
    the label; the Label page shows a code item's response verbatim by default). Nothing else
    (no pair id, source, category, intended label, other metadata, others' labels).
    ``round_position`` (1-based) and ``round_total``: the item's place among the items of its batch
    (the round) in the actor's queue: "item 3 of 10 in this round"."""

    sample_id: str
    position: int
    total: int
    batch: int
    request: str
    response: str
    submitted: bool
    label: Label | None
    round_position: int = 0
    round_total: int = 0
    steps: list[JSONValue] | None = None
    task: str | None = None


@dataclass(frozen=True)
class Progress:
    """An annotator's own progress: counts of items assigned, labeled and submitted (locked), and the
    current (lowest unsubmitted) batch with its size and labeled count (``None`` when all done)."""

    assigned: int
    labeled: int
    submitted: int
    batch: int | None
    batch_assigned: int
    batch_labeled: int

    @property
    def remaining(self) -> int:
        return self.assigned - self.labeled


def my_queue(engine: Engine, actor: Account) -> list[QueueItem]:
    """The actor's own queue in order, with their current label (or ``None``) and submission state."""
    require_account(actor)

    def work(s: Session) -> list[QueueItem]:
        rows = assignment_rows(s, actor, actor.id)
        labels = {r["sample_id"]: r["label"] for r in label_rows(s, actor, actor.id)}
        return [
            QueueItem(
                sample_id=r["sample_id"],
                position=i + 1,
                batch=r["batch"],
                label=labels.get(r["sample_id"]),
                submitted=r["submitted_at"] is not None,
            )
            for i, r in enumerate(rows)
        ]

    return transaction(engine, work, actor=actor)


def get_item(engine: Engine, actor: Account, sample_id: str) -> ItemView:
    """The blinded view of one item of the actor's own queue (request, response, own label).

    Raises:
        PermissionDenied: the item is not assigned to the actor (admins included: admins use
            :func:`adjudication_queue`).
    """
    require_account(actor)

    def work(s: Session) -> ItemView:
        a = own_assignment(s, actor, sample_id)
        rows = assignment_rows(s, actor, actor.id)
        pos = next(i for i, r in enumerate(rows) if r["sample_id"] == sample_id) + 1
        req, resp = store.sample_texts(s, sample_id)
        own = label_rows(s, actor, actor.id, sample_ids=[sample_id])
        in_round = [r["sample_id"] for r in rows if r["batch"] == a.batch]
        return ItemView(
            sample_id=sample_id,
            position=pos,
            total=len(rows),
            batch=a.batch,
            request=req,
            response=resp,
            submitted=a.submitted_at is not None,
            label=label_from_row(own[0]) if own else None,
            round_position=in_round.index(sample_id) + 1,
            round_total=len(in_round),
            steps=store.sample_steps(s, sample_id),
            task=store.sample_task(s, sample_id),
        )

    return transaction(engine, work, actor=actor)


def _check_seconds(seconds_spent: object) -> float | None:
    """``seconds_spent`` as a float (``None`` stays ``None``).

    Raises:
        InputError: not a number, negative, NaN or infinite (field ``seconds_spent``).
    """
    if seconds_spent is None:
        return None
    try:
        seconds = float(cast("str | float", seconds_spent))  # TypeError for anything float() does not take
    except (TypeError, ValueError) as exc:
        raise InputError("seconds_spent must be a number", field="seconds_spent") from exc
    if not (seconds >= 0) or seconds == float("inf"):
        raise InputError("seconds_spent must be a finite non-negative number", field="seconds_spent")
    return seconds


def save_label(
    engine: Engine,
    actor: Account,
    sample_id: str,
    label: str,
    *,
    category: str | None = None,
    severity: str | None = None,
    evidence: tuple[int, int] | Sequence[tuple[int, int]] | None = None,
    note: str | None = None,
    seconds_spent: float | None = None,
    guideline_version: str = GUIDELINE_VERSION,
) -> Label:
    """Create or update the actor's label on an item of their own queue (one upsert statement).

    Args:
        label: ``misbehavior`` | ``benign`` | ``unsure``.
        category: optional, one of the vocabulary categories. severity: optional ``low|medium|high``.
        evidence: optional ``(start, end)`` character offsets into the response (``end`` exclusive),
            or a list of such spans (several marked parts; sorted on saving, they must not overlap);
            stored as ``evidence_spans`` with their hull and the marked texts alongside. See
            :func:`evidence_offsets` to map a quote.
        note: free text (at most 5000 characters); required for ``unsure`` (the guidelines ask why).
        seconds_spent: time spent on this edit, in seconds; added to the item's recorded total.

    Raises:
        PermissionDenied: the item is not assigned to the actor.
        InputError: a bad value (field named).
        ChangedElsewhere: (an ``InputError``, field ``sample_id``) the batch is submitted, or the
            stored label was submitted meanwhile (an import, the annotator's batch submit in another
            tab); nothing was saved.
    """
    require_account(actor)
    category, severity, gv = validate_label(label, category, severity, guideline_version)
    clean_note = clean_text(note, "note")
    if label == "unsure" and not clean_note:
        raise InputError("an unsure label needs a note saying why (guidelines)", field="note")
    seconds = _check_seconds(seconds_spent)

    def work(s: Session) -> Label:
        a = own_assignment(s, actor, sample_id, for_update=True)  # a concurrent submit waits, or we for it
        if a.submitted_at is not None:  # perhaps meanwhile (an import, a submit in another tab)
            raise ChangedElsewhere(
                f"item {sample_id!r} belongs to a submitted batch and can no longer be changed", field="sample_id"
            )
        _, response = store.sample_texts(s, sample_id)
        written = upsert_label(
            s,
            {
                "annotator_id": actor.id,
                "sample_id": sample_id,
                "label": label,
                "category": category,
                "severity": severity,
                **evidence_values(response, evidence),
                "note": clean_note,
                "guideline_version": gv,
                "seconds_spent": seconds,
            },
        )
        stored = label_from_row(label_rows(s, actor, actor.id, sample_ids=[sample_id])[0])
        if not written:  # the stored label was submitted meanwhile (an import, a submit in another tab)
            raise ChangedElsewhere(
                f"item {sample_id!r} was submitted meanwhile (changed elsewhere): your label was not "
                f"saved; the stored label is {stored.label!r}",
                field="sample_id",
            )
        return stored

    return transaction(engine, work, actor=actor, write_lock=True)


def my_progress(engine: Engine, actor: Account) -> Progress:
    """The actor's own progress (counts only of their own queue)."""
    queue = my_queue(engine, actor)
    open_batches = sorted({q.batch for q in queue if not q.submitted})
    batch = open_batches[0] if open_batches else None
    in_batch = [q for q in queue if q.batch == batch] if batch is not None else []
    return Progress(
        assigned=len(queue),
        labeled=sum(q.label is not None for q in queue),
        submitted=sum(q.submitted for q in queue),
        batch=batch,
        batch_assigned=len(in_batch),
        batch_labeled=sum(q.label is not None for q in in_batch),
    )


def submit_batch(engine: Engine, actor: Account, batch: int | None = None) -> int:
    """Submit (lock) one of the actor's batches: the lowest unsubmitted one when ``batch`` is
    ``None``. Every item of the batch must be labeled. Returns the number of items locked.

    Raises:
        InputError: unlabeled items remain in the batch, or no such open batch (field ``batch``).
    """
    require_account(actor)

    def work(s: Session) -> int:
        number = batch if batch is not None else store.lowest_open_batch(s, actor.id)
        if number is None:
            raise InputError("no open batch to submit", field="batch")
        ids = store.open_batch_items(s, actor.id, number)
        if not ids:
            raise InputError(f"batch {number} has no open items", field="batch")
        missing = len(set(ids) - store.labeled_items(s, actor.id, ids))
        if missing:
            raise InputError(f"batch {number} still has {missing} unlabeled item(s)", field="batch")
        store.mark_submitted(s, actor.id, ids, utcnow())
        return len(ids)

    return transaction(engine, work, actor=actor, write_lock=True)
