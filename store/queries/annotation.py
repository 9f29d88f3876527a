"""Store queries of the annotation workflow (assignments, labels, adjudications).

Queries only: the store checks no permission. The core reaches these reads through
:mod:`automonitor.annotation.queries`, which checks the acting account first (an annotator gets only
their own rows, an admin everything), and the writes through :mod:`automonitor.annotation`. Functions
run inside the caller's session and commit nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

import sqlalchemy as sa
from sqlmodel import Session

from store.models import Adjudication, Annotation, Annotator, Assignment, Sample, utcnow

_LABEL_COLUMNS = (
    "label",
    "category",
    "severity",
    "evidence_start",
    "evidence_end",
    "evidence_text",
    "note",
    "guideline_version",
)


def assignment_rows(
    session: Session, annotator_id: int | None = None, sample_ids: Iterable[str] | None = None
) -> list[dict[str, Any]]:
    """Assignments joined with the annotator name, ordered by annotator and queue position.

    Each row: ``{"id", "annotator_id", "annotator", "sample_id", "position", "seed", "batch",
    "submitted_at", "created_at"}``. Only ``annotator_id``'s rows when given (permission checks are the
    caller's: :mod:`automonitor.annotation.queries`).
    """
    who = annotator_id
    q = (
        sa.select(
            Assignment.id,
            Assignment.annotator_id,
            Annotator.name.label("annotator"),
            Assignment.sample_id,
            Assignment.position,
            Assignment.seed,
            Assignment.batch,
            Assignment.submitted_at,
            Assignment.created_at,
        )
        .join(Annotator, Annotator.id == Assignment.annotator_id)
        .order_by(Assignment.annotator_id, Assignment.position)
    )
    if who is not None:
        q = q.where(Assignment.annotator_id == who)
    if sample_ids is not None:
        q = q.where(Assignment.sample_id.in_(list(sample_ids)))
    return [dict(r._mapping) for r in session.execute(q)]


def label_rows(
    session: Session,
    annotator_id: int | None = None,
    *,
    sample_ids: Iterable[str] | None = None,
    submitted_only: bool = False,
    with_sample: bool = False,
) -> list[dict[str, Any]]:
    """Labels joined with the annotator name (and, with ``with_sample``, the item's ``pair_id``,
    ``category`` as ``item_category``, ``task``, ``status``, ``intended_label``, ``source``). Ordered by
    annotator name then sample id.

    Each row has every ``annotation`` column plus ``annotator`` (name). Only ``annotator_id``'s labels
    when given (permission checks are the caller's: :mod:`automonitor.annotation.queries`).
    """
    who = annotator_id
    cols = [c for c in Annotation.__table__.columns] + [Annotator.name.label("annotator")]
    q = sa.select(*cols).join(Annotator, Annotator.id == Annotation.annotator_id)
    if with_sample:
        q = q.add_columns(
            Sample.pair_id,
            Sample.category.label("item_category"),
            Sample.task,
            Sample.status,
            Sample.label.label("intended_label"),
            Sample.source,
        )
        q = q.join(Sample, Sample.id == Annotation.sample_id)
    if who is not None:
        q = q.where(Annotation.annotator_id == who)
    if sample_ids is not None:
        q = q.where(Annotation.sample_id.in_(list(sample_ids)))
    if submitted_only:
        q = q.where(Annotation.submitted_at.is_not(None))
    q = q.order_by(Annotator.name, Annotation.sample_id)
    return [dict(r._mapping) for r in session.execute(q)]


def upsert_label(session: Session, values: dict[str, Any]) -> None:
    """Insert or update the (annotator, sample) label in one statement (``INSERT .. ON CONFLICT DO
    UPDATE`` on both SQLite and PostgreSQL), so concurrent writers never create a duplicate.

    ``values`` holds ``annotator_id``, ``sample_id`` and the label columns; ``seconds_spent`` is
    *added* to the time already recorded for the item. A submitted (locked) label is never updated.
    """
    now = utcnow()
    row = {
        "annotator_id": values["annotator_id"],
        "sample_id": values["sample_id"],
        "created_at": now,
        "updated_at": now,
        "seconds_spent": values.get("seconds_spent"),
        "submitted_at": values.get("submitted_at"),
    }
    row.update({k: values.get(k) for k in _LABEL_COLUMNS})
    if row["guideline_version"] is None:
        row.pop("guideline_version")
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:  # pragma: no cover - only SQLite and PostgreSQL are supported stores
        raise RuntimeError(f"unsupported database {dialect}")
    stmt = insert(Annotation).values(**row)
    ex = stmt.excluded
    old = Annotation.__table__.c.seconds_spent
    seconds = sa.case(
        (sa.and_(old.is_(None), ex.seconds_spent.is_(None)), sa.null()),
        else_=sa.func.coalesce(old, 0.0) + sa.func.coalesce(ex.seconds_spent, 0.0),
    )
    update = {k: getattr(ex, k) for k in _LABEL_COLUMNS if k in row}
    update.update(updated_at=ex.updated_at, seconds_spent=seconds, submitted_at=ex.submitted_at)
    stmt = stmt.on_conflict_do_update(
        index_elements=["annotator_id", "sample_id"], set_=update, where=Annotation.__table__.c.submitted_at.is_(None)
    )
    session.execute(stmt)


def candidate_samples(session: Session, *, unassigned_only: bool = False) -> list[dict[str, Any]]:
    """Candidate items (``status = 'candidate'``) with ``id``, ``pair_id``, ``category``, ``task``,
    ordered by pair then id (admin-only data: pair structure and provenance are hidden from annotators).
    With ``unassigned_only`` only items that have no assignment yet."""
    q = (
        sa.select(Sample.id, Sample.pair_id, Sample.category, Sample.task)
        .where(Sample.status == "candidate")
        .order_by(Sample.pair_id, Sample.id)
    )
    if unassigned_only:
        q = q.where(~sa.exists().where(Assignment.sample_id == Sample.id))
    return [dict(r._mapping) for r in session.execute(q)]


def annotator_loads(session: Session) -> dict[int, int]:
    """``{annotator_id: number of assignments}`` for every active annotator-role account (admin-only data)."""
    q = (
        sa.select(Annotator.id, sa.func.count(Assignment.id))
        .outerjoin(Assignment, Assignment.annotator_id == Annotator.id)
        .where(Annotator.role == "annotator", Annotator.active.is_(True))
        .group_by(Annotator.id)
        .order_by(Annotator.id)
    )
    return {aid: n for aid, n in session.execute(q)}


def latest_adjudications(session: Session, sample_ids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """``{sample_id: row}`` of the newest adjudication of each item (admin-only data). A row has every
    ``adjudication`` column plus ``adjudicator`` (name)."""
    cols = [c for c in Adjudication.__table__.columns] + [Annotator.name.label("adjudicator")]
    q = (
        sa.select(*cols)
        .join(Annotator, Annotator.id == Adjudication.adjudicator_id)
        .order_by(Adjudication.sample_id, Adjudication.created_at, Adjudication.id)
    )
    if sample_ids is not None:
        q = q.where(Adjudication.sample_id.in_(list(sample_ids)))
    out: dict[str, dict[str, Any]] = {}
    for r in session.execute(q):
        out[r.sample_id] = dict(r._mapping)  # later rows win
    return out


def adjudication_rows(session: Session) -> list[dict[str, Any]]:
    """Every adjudication (history included), oldest first, with ``adjudicator`` name and the item's
    current ``status`` (admin-only data)."""
    cols = [c for c in Adjudication.__table__.columns] + [
        Annotator.name.label("adjudicator"),
        Sample.status.label("sample_status"),
        Sample.category.label("item_category"),
        Sample.task,
        Sample.label.label("current_label"),
    ]
    q = (
        sa.select(*cols)
        .join(Annotator, Annotator.id == Adjudication.adjudicator_id)
        .join(Sample, Sample.id == Adjudication.sample_id)
        .order_by(Adjudication.created_at, Adjudication.id)
    )
    return [dict(r._mapping) for r in session.execute(q)]


def as_utc_iso(value: datetime | None) -> str | None:
    """ISO 8601 text of a stored datetime (SQLite returns naive UTC values; PostgreSQL aware ones)."""
    if value is None:
        return None
    if value.tzinfo is None:
        from datetime import timezone

        value = value.replace(tzinfo=timezone.utc)
    return value.isoformat()
