"""Store queries of the annotation workflow (assignments, labels, adjudications).

Queries only: the store checks no permission. The core reaches these reads through
:mod:`automonitor.annotation.queries`, which checks the acting account first (an annotator gets only
their own rows, an admin everything), and the writes through :mod:`automonitor.annotation`. Functions
run inside the caller's session and commit nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Iterable, Mapping, Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col

from automonitor.jsontypes import JSONValue
from store.models import Adjudication, Annotation, Annotator, Assignment, EditionSample, ItemFlag, Sample, utcnow
from store.queries import rows_by_ids, sample_columns, table_of, typed_rows
from store.queries.rowtypes import (
    AdjudicationHistoryRow,
    AdjudicationRow,
    AssignmentRow,
    CandidateDetail,
    CandidateItem,
    FlagRow,
    LabelRow,
    NewAssignment,
    OpenAssignment,
)


_LABEL_COLUMNS = (
    "label",
    "category",
    "severity",
    "evidence_start",
    "evidence_end",
    "evidence_text",
    "evidence_spans",
    "note",
    "guideline_version",
)


def assignment_rows(session: Session, annotator_id: int | None = None) -> list[AssignmentRow]:
    """Assignments joined with the annotator name, ordered by annotator and queue position.

    Each row: ``{"id", "annotator_id", "annotator", "sample_id", "position", "seed", "batch",
    "submitted_at", "created_at"}``. Only ``annotator_id``'s rows when given (permission checks are the
    caller's: :mod:`automonitor.annotation.queries`).
    """
    q = (
        sa.select(*table_of(Assignment).columns, col(Annotator.name).label("annotator"))
        .join(Annotator, col(Annotator.id) == col(Assignment.annotator_id))
        .order_by(col(Assignment.annotator_id), col(Assignment.position))
    )
    if annotator_id is not None:
        q = q.where(col(Assignment.annotator_id) == annotator_id)
    return typed_rows(session.execute(q), AssignmentRow)


def label_rows(
    session: Session,
    annotator_id: int | None = None,
    *,
    sample_ids: Iterable[str] | None = None,
    submitted_only: bool = False,
    with_sample: bool = False,
) -> list[LabelRow]:
    """Labels joined with the annotator name (and, with ``with_sample``, the item's ``pair_id``,
    ``category`` as ``item_category``, ``task``, ``status``, ``intended_label``, ``source``). Ordered by
    annotator name then sample id.

    Each row has every ``annotation`` column plus ``annotator`` (name). Only ``annotator_id``'s labels
    when given (permission checks are the caller's: :mod:`automonitor.annotation.queries`).
    """
    cols: list[sa.ColumnElement[object]] = [*table_of(Annotation).columns, col(Annotator.name).label("annotator")]
    q = sa.select(*cols).join(Annotator, col(Annotator.id) == col(Annotation.annotator_id))
    if with_sample:
        q = q.add_columns(
            col(Sample.pair_id),
            col(Sample.category).label("item_category"),
            col(Sample.task),
            col(Sample.status),
            col(Sample.label).label("intended_label"),
            col(Sample.source),
        )
        q = q.join(Sample, col(Sample.id) == col(Annotation.sample_id))
    if annotator_id is not None:
        q = q.where(col(Annotation.annotator_id) == annotator_id)
    if sample_ids is not None:
        q = q.where(col(Annotation.sample_id).in_(list(sample_ids)))
    if submitted_only:
        q = q.where(col(Annotation.submitted_at).is_not(None))
    q = q.order_by(col(Annotator.name), col(Annotation.sample_id))
    return typed_rows(session.execute(q), LabelRow)


def upsert_label(session: Session, values: Mapping[str, object]) -> int:
    """Insert or update the (annotator, sample) label in one statement (``INSERT .. ON CONFLICT DO
    UPDATE`` on both SQLite and PostgreSQL), so concurrent writers never create a duplicate.

    ``values`` holds ``annotator_id``, ``sample_id`` and the label columns; ``seconds_spent`` is
    *added* to the time already recorded for the item. A submitted (locked) label is never updated.
    Returns the number of rows written: 0 when the stored label is submitted (nothing changed).
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
        stmt: postgresql.Insert | sqlite.Insert = postgresql.insert(Annotation).values(**row)
    elif dialect == "sqlite":
        stmt = sqlite.insert(Annotation).values(**row)
    else:  # pragma: no cover - only SQLite and PostgreSQL are supported stores
        raise RuntimeError(f"unsupported database {dialect}")
    ex = stmt.excluded
    old = table_of(Annotation).c.seconds_spent
    seconds = sa.case(
        (sa.and_(old.is_(None), ex.seconds_spent.is_(None)), sa.null()),
        else_=sa.func.coalesce(old, 0.0) + sa.func.coalesce(ex.seconds_spent, 0.0),
    )
    update = {k: getattr(ex, k) for k in _LABEL_COLUMNS if k in row}
    update.update(updated_at=ex.updated_at, seconds_spent=seconds, submitted_at=ex.submitted_at)
    res = session.execute(
        stmt.on_conflict_do_update(
            index_elements=["annotator_id", "sample_id"],
            set_=update,
            where=table_of(Annotation).c.submitted_at.is_(None),
        ).returning(table_of(Annotation).c.id)
    )
    return len(res.all())  # RETURNING yields the rows inserted or updated (rowcount is unreliable here)


def candidate_samples(session: Session, *, unassigned_only: bool = False) -> list[CandidateItem]:
    """Candidate items (``status = 'candidate'``) with ``id``, ``pair_id``, ``category``, ``task``,
    ordered by pair then id (admin-only data: pair structure and provenance are hidden from annotators).
    With ``unassigned_only`` only items that have no assignment yet."""
    q = (
        sa.select(col(Sample.id), col(Sample.pair_id), col(Sample.category), col(Sample.task))
        .where(col(Sample.status) == "candidate")
        .order_by(col(Sample.pair_id), col(Sample.id))
    )
    if unassigned_only:
        q = q.where(~sa.exists().where(col(Assignment.sample_id) == col(Sample.id)))
    return typed_rows(session.execute(q), CandidateItem)


def annotator_loads(session: Session) -> dict[int, int]:
    """``{annotator_id: number of assignments}`` for every active annotator-role account (admin-only data)."""
    q = (
        sa.select(col(Annotator.id), sa.func.count(col(Assignment.id)))
        .outerjoin(Assignment, col(Assignment.annotator_id) == col(Annotator.id))
        .where(col(Annotator.role) == "annotator", col(Annotator.active).is_(True))
        .group_by(col(Annotator.id))
        .order_by(col(Annotator.id))
    )
    return {aid: n for aid, n in session.execute(q)}


def latest_adjudications(session: Session, sample_ids: Iterable[str] | None = None) -> dict[str, AdjudicationRow]:
    """``{sample_id: row}`` of the newest adjudication of each item (admin-only data). A row has every
    ``adjudication`` column plus ``adjudicator`` (name)."""
    cols: list[sa.ColumnElement[object]] = [*table_of(Adjudication).columns, col(Annotator.name).label("adjudicator")]
    q = (
        sa.select(*cols)
        .join(Annotator, col(Annotator.id) == col(Adjudication.adjudicator_id))
        .order_by(col(Adjudication.sample_id), col(Adjudication.created_at), col(Adjudication.id))
    )
    if sample_ids is not None:
        q = q.where(col(Adjudication.sample_id).in_(list(sample_ids)))
    return {r["sample_id"]: r for r in typed_rows(session.execute(q), AdjudicationRow)}  # later rows win


def adjudication_rows(session: Session) -> list[AdjudicationHistoryRow]:
    """Every adjudication (history included), oldest first, with ``adjudicator`` name and the item's
    current ``status`` (admin-only data)."""
    cols: list[sa.ColumnElement[object]] = [
        *table_of(Adjudication).columns,
        col(Annotator.name).label("adjudicator"),
        col(Sample.status).label("sample_status"),
        col(Sample.category).label("item_category"),
        col(Sample.task).label("task"),
        col(Sample.label).label("current_label"),
    ]
    q = (
        sa.select(*cols)
        .join(Annotator, col(Annotator.id) == col(Adjudication.adjudicator_id))
        .join(Sample, col(Sample.id) == col(Adjudication.sample_id))
        .order_by(col(Adjudication.created_at), col(Adjudication.id))
    )
    return typed_rows(session.execute(q), AdjudicationHistoryRow)


# ------------------------------------------------------------------ assignment (writes: admin's core)
def lock_assignments(session: Session) -> None:
    """Serialise concurrent assignment runs: on PostgreSQL lock the ``assignment`` table in SHARE ROW
    EXCLUSIVE mode until the transaction ends (SQLite writers are serialised by the database lock)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(sa.text("LOCK TABLE assignment IN SHARE ROW EXCLUSIVE MODE"))


def annotator_names(session: Session, annotator_ids: Iterable[int]) -> dict[int, str]:
    """``{annotator_id: name}`` of the given accounts."""
    q = sa.select(col(Annotator.id), col(Annotator.name)).where(col(Annotator.id).in_(list(annotator_ids)))
    return {aid: name for aid, name in session.execute(q) if aid is not None}


def queue_tail(session: Session, annotator_id: int) -> tuple[int, str] | None:
    """``(position, pair_id)`` of the last item of an annotator's queue, or ``None`` for an empty queue."""
    q = (
        sa.select(col(Assignment.position), col(Sample.pair_id))
        .join(Sample, col(Sample.id) == col(Assignment.sample_id))
        .where(col(Assignment.annotator_id) == annotator_id)
        .order_by(col(Assignment.position).desc())
        .limit(1)
    )
    row = session.execute(q).first()
    return None if row is None else (row[0], row[1])


def max_batch(session: Session, annotator_id: int | None = None) -> int:
    """The highest batch number in use (of one annotator when ``annotator_id``; 0 when none)."""
    q = sa.select(sa.func.max(col(Assignment.batch)))
    if annotator_id is not None:
        q = q.where(col(Assignment.annotator_id) == annotator_id)
    return session.execute(q).scalar() or 0


def last_positions(session: Session) -> dict[int, int]:
    """``{annotator_id: highest queue position}`` of every annotator with at least one assignment."""
    q = sa.select(col(Assignment.annotator_id), sa.func.max(col(Assignment.position))).group_by(
        col(Assignment.annotator_id)
    )
    return {aid: pos for aid, pos in session.execute(q) if pos is not None}


def insert_assignments(session: Session, rows: Sequence[NewAssignment]) -> None:
    """Insert assignment rows (dicts of ``assignment`` columns) in one statement; nothing for no rows."""
    if rows:
        session.execute(sa.insert(Assignment), rows)


def find_assignment(
    session: Session, annotator_id: int, sample_id: str, *, for_update: bool = False
) -> Assignment | None:
    """The assignment of ``sample_id`` to ``annotator_id``, or ``None``; ``for_update``: row locked until
    the transaction ends (PostgreSQL ``FOR UPDATE``, read fresh from the database)."""
    q = sa.select(Assignment).where(
        col(Assignment.annotator_id) == annotator_id, col(Assignment.sample_id) == sample_id
    )
    if for_update:
        q = q.with_for_update().execution_options(populate_existing=True)
    return session.execute(q).scalars().first()


def sample_texts(session: Session, sample_id: str) -> tuple[str, str]:
    """``(request, response)`` of an item. Raises ``sqlalchemy.exc.NoResultFound`` for an unknown id."""
    row = session.execute(sa.select(col(Sample.request), col(Sample.response)).where(col(Sample.id) == sample_id)).one()
    return row[0], row[1]


def sample_task(session: Session, sample_id: str) -> str:
    """The task of an item (a ``Sample.task`` value as stored). Raises ``sqlalchemy.exc.NoResultFound`` for an
    unknown id."""
    return str(session.execute(sa.select(col(Sample.task)).where(col(Sample.id) == sample_id)).scalar_one())


def sample_steps(session: Session, sample_id: str) -> list[JSONValue] | None:
    """The typed trajectory steps of an item (``Sample.meta["steps"]``, a list of step dicts) and nothing
    else of its metadata (which may name the intended label); ``None`` when it has none. Raises
    ``sqlalchemy.exc.NoResultFound`` for an unknown id."""
    meta = session.execute(sa.select(col(Sample.meta)).where(col(Sample.id) == sample_id)).scalar_one()
    steps = meta.get("steps") if isinstance(meta, dict) else None
    return list(steps) if isinstance(steps, list) and steps else None


# ----------------------------------------------------------------------------- batch submission
def lowest_open_batch(session: Session, annotator_id: int) -> int | None:
    """The lowest batch number of an annotator that still has unsubmitted items, or ``None``."""
    q = sa.select(sa.func.min(col(Assignment.batch))).where(
        col(Assignment.annotator_id) == annotator_id, col(Assignment.submitted_at).is_(None)
    )
    return session.execute(q).scalar()


def open_batch_items(session: Session, annotator_id: int, batch: int) -> list[str]:
    """Sample ids of the unsubmitted items of one batch of an annotator."""
    q = sa.select(col(Assignment.sample_id)).where(
        col(Assignment.annotator_id) == annotator_id,
        col(Assignment.batch) == batch,
        col(Assignment.submitted_at).is_(None),
    )
    return list(session.execute(q).scalars())


def labeled_items(session: Session, annotator_id: int, sample_ids: Iterable[str]) -> set[str]:
    """Those of ``sample_ids`` that the annotator has labeled."""
    q = sa.select(col(Annotation.sample_id)).where(
        col(Annotation.annotator_id) == annotator_id, col(Annotation.sample_id).in_(list(sample_ids))
    )
    return set(session.execute(q).scalars())


def mark_submitted(
    session: Session, annotator_id: int, sample_ids: Iterable[str], now: datetime, *, labels: bool = True
) -> None:
    """Set ``submitted_at = now`` on the annotator's assignments of ``sample_ids`` and (with ``labels``)
    on their labels of those items."""
    ids = list(sample_ids)
    session.execute(
        sa.update(Assignment)
        .where(col(Assignment.annotator_id) == annotator_id, col(Assignment.sample_id).in_(ids))
        .values(submitted_at=now)
    )
    if labels:
        session.execute(
            sa.update(Annotation)
            .where(col(Annotation.annotator_id) == annotator_id, col(Annotation.sample_id).in_(ids))
            .values(submitted_at=now)
        )


# ------------------------------------------------------------------------ adjudication, finalising
def candidate_details(session: Session) -> dict[str, CandidateDetail]:
    """``{sample_id: row}`` of every candidate item with ``id``, ``pair_id``, ``category``, ``task``,
    ``source``, ``label`` (the intended one), ``request``, ``response`` (admin-only data)."""
    q = sa.select(*sample_columns("id", "pair_id", "category", "task", "source", "label", "request", "response")).where(
        col(Sample.status) == "candidate"
    )
    return {r["id"]: r for r in typed_rows(session.execute(q), CandidateDetail)}


def samples_with_status(session: Session, status: str, *, for_update: bool = False) -> list[Sample]:
    """The samples with ``status`` (e.g. ``candidate``, ``rejected``) as ORM objects, by pair then id.

    ``for_update``: lock the rows until the transaction ends (``SELECT ... FOR UPDATE`` on PostgreSQL:
    a concurrent locker waits, then reads only the rows that still have ``status``; SQLite has no row
    locks: there the caller holds the write lock, :func:`store.queries.locks.begin_write`)."""
    q = sa.select(Sample).where(col(Sample.status) == status).order_by(col(Sample.pair_id), col(Sample.id))
    if for_update:
        q = q.with_for_update()
    return list(session.execute(q).scalars())


def lock_sample(session: Session, sample_id: str) -> Sample | None:
    """The sample ``sample_id`` read with a row lock held until the transaction ends (``FOR UPDATE`` on
    PostgreSQL; fresh from the database, not the session's identity map), or ``None``."""
    q = sa.select(Sample).where(col(Sample.id) == sample_id).with_for_update().execution_options(populate_existing=True)
    return session.execute(q).scalars().first()


def gold_hashes(session: Session) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """``{(request_hash, response_hash): [(sample_id, pair_id), ...]}`` of the gold samples (the
    duplicate check of finalising), ordered by sample id."""
    q = (
        sa.select(col(Sample.id), col(Sample.pair_id), col(Sample.request_hash), col(Sample.response_hash))
        .where(col(Sample.status) == "gold")
        .order_by(col(Sample.id))
    )
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for sid, pid, rq, rs in session.execute(q):
        out.setdefault((rq, rs), []).append((sid, pid))
    return out


def set_adjudication_split(session: Session, adjudication_id: int, split: str | None) -> None:
    """Record the split an adjudicated item went to (``None``: its pair was rejected)."""
    session.execute(sa.update(Adjudication).where(col(Adjudication.id) == adjudication_id).values(split=split))


def add_to_edition(session: Session, edition: str, sample_ids: list[str], now: datetime) -> None:
    """Make ``sample_ids`` members of ``edition`` (``edition_sample`` rows); existing members are kept."""
    have = set(
        session.execute(
            sa.select(col(EditionSample.sample_id)).where(
                col(EditionSample.edition) == edition, col(EditionSample.sample_id).in_(sample_ids)
            )
        ).scalars()
    )
    rows = [{"edition": edition, "sample_id": sid, "created_at": now} for sid in sample_ids if sid not in have]
    if rows:
        session.execute(sa.insert(EditionSample), rows)


# ---------------------------------------------------------------------------------------- flags
def flag_rows(session: Session, *, open_only: bool = True) -> list[FlagRow]:
    """Item flags, oldest first: ``{"id", "sample_id", "pair_id", "annotator", "comment", "created_at",
    "resolved_at"}`` (datetimes as stored); only unresolved ones with ``open_only``."""
    q = (
        sa.select(*table_of(ItemFlag).columns, col(Annotator.name).label("annotator"), col(Sample.pair_id))
        .join(Annotator, col(Annotator.id) == col(ItemFlag.annotator_id))
        .join(Sample, col(Sample.id) == col(ItemFlag.sample_id))
        .order_by(col(ItemFlag.id))
    )
    if open_only:
        q = q.where(col(ItemFlag.resolved_at).is_(None))
    return typed_rows(session.execute(q), FlagRow)


def label_fingerprint(session: Session) -> tuple[int, datetime | None, datetime | None]:
    """``(number of labels, newest update, newest submission)`` of the whole label table."""
    row = session.execute(
        sa.select(
            sa.func.count(col(Annotation.id)),
            sa.func.max(col(Annotation.updated_at)),
            sa.func.max(col(Annotation.submitted_at)),
        )
    ).one()
    return row[0], row[1], row[2]


def annotator_id(session: Session, name: str) -> int | None:
    """The id of the account called ``name``, or ``None``."""
    return session.execute(sa.select(col(Annotator.id)).where(col(Annotator.name) == name)).scalar()


def request_response(session: Session, sample_ids: list[str]) -> dict[str, tuple[str, str]]:
    """``{sample_id: (request, response)}`` of the given items (queried in chunks of
    :data:`store.queries.IN_CHUNK` ids); unknown ids are left out."""
    cols = [col(Sample.id), col(Sample.request), col(Sample.response)]
    return {sid: (req, resp) for sid, req, resp in rows_by_ids(session, cols, cols[0], sample_ids)}


def active_annotator_ids(session: Session) -> dict[str, int]:
    """``{name: id}`` of every active account (any role)."""
    q = sa.select(col(Annotator.id), col(Annotator.name)).where(col(Annotator.active).is_(True))
    return {name: aid for aid, name in session.execute(q) if aid is not None}


def assignment_states(session: Session) -> dict[tuple[int, str], sa.Row[tuple[int, str, datetime | None]]]:
    """Every assignment as a row with ``annotator_id``, ``sample_id`` and ``submitted_at``, keyed by
    ``(annotator_id, sample_id)``."""
    q = sa.select(col(Assignment.annotator_id), col(Assignment.sample_id), col(Assignment.submitted_at))
    return {(r.annotator_id, r.sample_id): r for r in session.execute(q)}


def delete_open_assignments(session: Session, assignment_ids: Iterable[int]) -> int:
    """Delete the given assignments that are still open: not submitted and without a label by their
    annotator (checked in the same statement, so a label saved meanwhile keeps its assignment).
    Returns the number of rows deleted."""
    ids = list(assignment_ids)
    if not ids:
        return 0
    ann = table_of(Annotation)
    labeled = sa.exists().where(
        ann.c.annotator_id == col(Assignment.annotator_id), ann.c.sample_id == col(Assignment.sample_id)
    )
    res = session.execute(
        sa.delete(Assignment).where(col(Assignment.id).in_(ids), col(Assignment.submitted_at).is_(None), ~labeled)
    )
    return int(getattr(res, "rowcount", 0) or 0)


def open_assignments(session: Session, annotator_id: int) -> list[OpenAssignment]:
    """The annotator's assignments not yet submitted: ``{"id", "sample_id", "pair_id", "batch",
    "position"}``, in queue order."""
    q = (
        sa.select(
            col(Assignment.id),
            col(Assignment.sample_id),
            col(Sample.pair_id),
            col(Assignment.batch),
            col(Assignment.position),
        )
        .join(Sample, col(Sample.id) == col(Assignment.sample_id))
        .where(col(Assignment.annotator_id) == annotator_id, col(Assignment.submitted_at).is_(None))
        .order_by(col(Assignment.position), col(Assignment.id))
    )
    return typed_rows(session.execute(q), OpenAssignment)


def pairs_held(session: Session) -> dict[int, set[str]]:
    """``{annotator_id: {pair_id, ...}}``: the pairs of which each annotator holds an assignment."""
    q = sa.select(col(Assignment.annotator_id), col(Sample.pair_id)).join(
        Sample, col(Sample.id) == col(Assignment.sample_id)
    )
    out: dict[int, set[str]] = {}
    for aid, pid in session.execute(q):
        out.setdefault(aid, set()).add(pid)
    return out


def move_assignment(session: Session, assignment_id: int, annotator_id: int, position: int) -> None:
    """Give an assignment to another annotator at ``position`` of their queue."""
    session.execute(
        sa.update(Assignment)
        .where(col(Assignment.id) == assignment_id)
        .values(annotator_id=annotator_id, position=position)
    )


def delete_drafts(session: Session, annotator_id: int, sample_ids: Iterable[str]) -> int:
    """Delete the annotator's label rows on ``sample_ids`` (their drafts of items moved away)."""
    ids = list(sample_ids)
    if not ids:
        return 0
    res = session.execute(
        sa.delete(Annotation).where(col(Annotation.annotator_id) == annotator_id, col(Annotation.sample_id).in_(ids))
    )
    return int(getattr(res, "rowcount", 0) or 0)
