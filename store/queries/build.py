"""Queries of ``automonitor build``: the current build-derived rows, who references them, and the
reconciling writes (samples, edition membership, dependents, the build log). Every function runs
inside the caller's transaction and commits nothing."""

from __future__ import annotations

from typing import Any, Iterable, NamedTuple

import sqlalchemy as sa
from sqlmodel import Session, SQLModel, col

from store.models import (
    Adjudication,
    Annotation,
    Assignment,
    BuildLog,
    EditionSample,
    GoldSpan,
    Prediction,
    Run,
    Sample,
    utcnow,
)
from store.queries import chunks, insert_rows, rows_by_ids, sample_columns

# The tables whose rows name a sample (``sample_id``), by the name the build report uses.
SAMPLE_REFERENCES: tuple[
    tuple[str, type[Prediction] | type[Assignment] | type[Annotation] | type[Adjudication]], ...
] = (
    ("predictions", Prediction),
    ("assignments", Assignment),
    ("annotations", Annotation),
    ("adjudications", Adjudication),
)


class SampleState(NamedTuple):
    """The columns of one stored sample the build reconciles against."""

    id: str
    source: str
    split: str | None
    status: str
    meta: Any
    request_hash: str
    response_hash: str
    label_source: str


def sample_states(session: Session) -> list[SampleState]:
    """Every sample's :class:`SampleState` (build-derived or not; the caller tells them apart)."""
    q = sa.select(*sample_columns(*SampleState._fields))
    return [SampleState(*row) for row in session.execute(q)]


def adjudicated_ids(session: Session, ids: list[str]) -> set[str]:
    """The subset of ``ids`` that has at least one ``adjudication`` row."""
    return {sid for (sid,) in rows_by_ids(session, [col(Adjudication.sample_id)], col(Adjudication.sample_id), ids)}


def referenced(session: Session, ids: list[str]) -> dict[str, set[str]]:
    """Which of ``ids`` are referenced, per table name of :data:`SAMPLE_REFERENCES` (tables that
    reference none are left out)."""
    out: dict[str, set[str]] = {}
    for name, model in SAMPLE_REFERENCES:
        sample_id = col(model.sample_id)
        found = {sid for (sid,) in rows_by_ids(session, [sample_id], sample_id, ids)}
        if found:
            out[name] = found
    return out


def runs_judging(session: Session, ids: list[str]) -> list[Run]:
    """The runs with a prediction on any of ``ids``, by id, their rows locked until the transaction
    ends (PostgreSQL ``FOR UPDATE``: a runner taking its lease waits, or the caller waits for it)."""
    out: list[Run] = []
    for part in chunks(sorted(_run_ids(session, ids))):
        q = sa.select(Run).where(col(Run.id).in_(part)).order_by(col(Run.id)).with_for_update()
        out += session.execute(q.execution_options(populate_existing=True)).scalars()
    return out


def delete_dependents(session: Session, ids: list[str]) -> dict[str, int]:
    """Delete whole runs that judged any of ``ids`` (with all their predictions), and assignments,
    annotations, adjudications of ``ids``.

    Returns:
        Rows deleted per table: ``runs``, ``predictions``, ``assignments``, ``annotations``,
        ``adjudications``.
    """
    run_ids = _run_ids(session, ids)
    counts = {"runs": len(run_ids), "predictions": 0, "assignments": 0, "annotations": 0, "adjudications": 0}
    for part in chunks(sorted(run_ids)):
        counts["predictions"] += _rowcount(
            session.execute(sa.delete(Prediction).where(col(Prediction.run_id).in_(part)))
        )
        session.execute(sa.delete(Run).where(col(Run.id).in_(part)))
    for key, model in (("adjudications", Adjudication), ("annotations", Annotation), ("assignments", Assignment)):
        for part in chunks(ids):
            counts[key] += _rowcount(session.execute(sa.delete(model).where(col(model.sample_id).in_(part))))
    return counts


def _run_ids(session: Session, ids: list[str]) -> set[str]:
    """The ids of the runs with a prediction on any of ``ids``."""
    return {rid for (rid,) in rows_by_ids(session, [col(Prediction.run_id)], col(Prediction.sample_id), ids)}


def _rowcount(result: Any) -> int:
    """Rows a DML statement touched (``0`` when the driver does not say)."""
    return int(getattr(result, "rowcount", 0) or 0)


def edition_memberships(session: Session, ids: list[str]) -> set[tuple[str, str]]:
    """``(edition, sample_id)`` of every ``edition_sample`` row of ``ids``."""
    columns = [col(EditionSample.edition), col(EditionSample.sample_id)]
    return {(edition, sample_id) for edition, sample_id in rows_by_ids(session, columns, columns[1], ids)}


def drop_edition_memberships(session: Session, pairs: Iterable[tuple[str, str]]) -> None:
    """Delete the ``edition_sample`` rows ``(edition, sample_id)``."""
    for edition, sample_id in pairs:
        session.execute(
            sa.delete(EditionSample).where(
                col(EditionSample.edition) == edition, col(EditionSample.sample_id) == sample_id
            )
        )


def add_edition_memberships(session: Session, pairs: list[tuple[str, str]]) -> None:
    """Insert ``edition_sample`` rows ``(edition, sample_id)``, all with the same ``created_at``."""
    if not pairs:
        return
    now = utcnow()
    insert_rows(session, EditionSample, [{"edition": ed, "sample_id": sid, "created_at": now} for ed, sid in pairs])


def delete_samples(session: Session, ids: list[str]) -> None:
    """Delete the samples ``ids`` and their edition memberships (nothing else may reference them)."""
    for part in chunks(ids):
        session.execute(sa.delete(EditionSample).where(col(EditionSample.sample_id).in_(part)))
        session.execute(sa.delete(GoldSpan).where(col(GoldSpan.sample_id).in_(part)))
        session.execute(sa.delete(Sample).where(col(Sample.id).in_(part)))


def update_sample_placement(session: Session, changes: list[dict[str, Any]]) -> None:
    """Set ``split``, ``status`` and ``label_source`` of samples, one executemany.

    Args:
        changes: dicts with ``id``, ``split``, ``status``, ``label_source``.
    """
    if not changes:
        return
    table = SQLModel.metadata.tables["sample"]
    stmt = (
        sa.update(table)
        .where(table.c.id == sa.bindparam("_id"))
        .values(split=sa.bindparam("_split"), status=sa.bindparam("_status"), label_source=sa.bindparam("_ls"))
    )
    session.execute(
        stmt,
        [{"_id": c["id"], "_split": c["split"], "_status": c["status"], "_ls": c["label_source"]} for c in changes],
    )


def update_sample_meta(session: Session, changes: list[tuple[str, Any]]) -> None:
    """Replace the ``meta`` of samples (``(id, meta)`` pairs), one executemany."""
    if not changes:
        return
    table = SQLModel.metadata.tables["sample"]
    stmt = sa.update(table).where(table.c.id == sa.bindparam("_id")).values(meta=sa.bindparam("_meta"))
    session.execute(stmt, [{"_id": i, "_meta": m} for i, m in changes])


def latest_seed(session: Session) -> int | None:
    """Seed of the newest build log, or ``None`` when the store was never built."""
    seed: int | None = session.execute(
        sa.select(col(BuildLog.seed)).order_by(col(BuildLog.id).desc()).limit(1)
    ).scalar()
    return seed


def log_build(session: Session, seed: int, report: dict[str, Any]) -> None:
    """Add a ``build_log`` row for ``seed`` with ``report``."""
    session.add(BuildLog(seed=seed, report=report))
