"""Sample queries shared by ``build``, ``import`` and the app (the composition counts of ``stats``:
:mod:`store.queries.composition`; those its callers read from here are re-exported)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlmodel import Session, col

from automonitor.vocab import CONTROLS_SPLIT
from store.models import Sample
from store.queries import SAMPLE_KEY, insert_rows, rows_by_ids, sample_columns, table_of, typed_rows
from store.queries.composition import (
    check_edition,
    composition,
    edition_conditions,
    edition_has_rows,
    hard_certificate,
    latest_build_report,
    stats,
)
from store.queries.rowtypes import SampleKey

__all__ = [  # the composition queries (``stats``) live in store.queries.composition, these importable from here too
    "BROWSER_COLUMNS",
    "FILTER_COLUMNS",
    "GROUP_COLUMNS",
    "browser_filter",
    "browser_rows",
    "check_edition",
    "composition",
    "control_samples",
    "count_matching",
    "counts_by_status",
    "edition_filter",
    "edition_has_rows",
    "existing_ids",
    "hard_certificate",
    "insert_samples",
    "latest_build_report",
    "like_escape",
    "predictions_on_sample",
    "sample_with_pair",
    "stats",
]

_COLUMNS = [c.name for c in sa.inspect(Sample).local_table.columns]


def existing_ids(session: Session, ids: Iterable[str]) -> set[str]:
    """The subset of ``ids`` already present in the ``sample`` table."""
    return {r[0] for r in rows_by_ids(session, [Sample.id], Sample.id, ids)}


def insert_samples(session: Session, rows: Sequence[Mapping[str, object]]) -> int:
    """Bulk-insert sample rows (dicts with ``Sample`` column names) that are not present yet.

    Rows whose ``id`` already exists are skipped (idempotent re-import). Runs inside the caller's
    transaction: nothing is committed here. Returns the number of rows inserted.
    """
    if not rows:
        return 0
    have = existing_ids(session, [str(r["id"]) for r in rows])
    new = [r for r in rows if r["id"] not in have]
    if not new:
        return 0
    from store.models import utcnow

    now = utcnow()
    payload: list[dict[str, object]] = []
    for r in new:
        d = {k: r.get(k) for k in _COLUMNS if k in r}
        d.setdefault("meta", {})
        d.setdefault("created_at", now)
        d.setdefault("status", "gold")
        d.setdefault("source", "")
        payload.append(d)
    return insert_rows(session, Sample, payload)


# --- editions of the test set -----------------------------------------------------------------------


def edition_filter(session: Session, edition: str) -> list[sa.ColumnElement[bool]]:
    """SQL conditions selecting the test samples of ``edition`` in a query of the mapped ``sample`` table
    (:func:`store.queries.composition.edition_conditions`: gold test samples that are members of the edition;
    ``paper`` without ``edition_sample`` rows: every gold test sample not adjudicated). Raises ``InputError``
    for an unknown edition."""
    return edition_conditions(session, edition, table_of(Sample))


def control_samples(session: Session) -> list[SampleKey]:
    """The controls slice (gold, split ``controls``): dicts with id, pair_id, category, task, label,
    content_hash, id order."""
    rows = session.execute(
        sa.select(*sample_columns(*SAMPLE_KEY, "content_hash"))
        .where(col(Sample.split) == CONTROLS_SPLIT, col(Sample.status) == "gold")
        .order_by(Sample.id)
    ).all()
    return typed_rows(rows, SampleKey)


# --- the app's samples browser and drill-down (``automonitor.views``) --------------------------------

#: Columns of a samples-browser row, in order (``request``/``response`` only when texts are asked for).
BROWSER_COLUMNS = ("id", "pair_id", "category", "task", "label", "split", "status", "source", "request", "response")
#: Sample columns the browser filters by (allowed values per column).
FILTER_COLUMNS = ("category", "task", "label", "split", "status", "source", "label_source")
#: Columns :func:`counts_by_status` groups by.
GROUP_COLUMNS = ("source", "split", "status", "category", "task", "label", "label_source")

_BROWSER_ORDER = (Sample.category, Sample.task, Sample.pair_id, Sample.label, Sample.id)


def like_escape(text: str) -> str:
    """``text`` with the ``LIKE`` wildcards ``%`` and ``_`` (and the escape character ``\\``) escaped."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def browser_filter(search: str | None = None, **allowed: Sequence[str]) -> list[sa.ColumnElement[bool]]:
    """SQL conditions of the samples browser.

    ``search`` matches (case-insensitively, as a substring) the request, the response, the sample id or
    the pair id. ``allowed`` maps a :data:`FILTER_COLUMNS` name to its allowed values (empty = no
    filter), and ``tier`` to allowed values of ``meta.tier`` (the detector ladder's tier). Raises
    ``ValueError`` for another column name.
    """
    where: list[sa.ColumnElement[bool]] = []
    tiers = allowed.pop("tier", ())
    if tiers:
        where.append(col(Sample.meta)["tier"].as_string().in_(list(tiers)))
    if search and search.strip():
        pat = f"%{like_escape(search.strip())}%"
        cols = (Sample.request, Sample.response, Sample.id, Sample.pair_id)
        where.append(sa.or_(*[col(c).ilike(pat, escape="\\") for c in cols]))
    for name in FILTER_COLUMNS:
        vals = allowed.pop(name, ())
        if vals:
            where.append(getattr(Sample, name).in_(list(vals)))
    if allowed:
        raise ValueError(f"cannot filter samples by {', '.join(sorted(allowed))}")
    return where


def count_matching(conn: Connection, where: Sequence[sa.ColumnElement[bool]]) -> int:
    """Number of samples meeting the ``where`` conditions (:func:`browser_filter`)."""
    return int(conn.execute(sa.select(sa.func.count(col(Sample.id))).where(*where)).scalar_one())


def browser_rows(
    conn: Connection,
    where: Sequence[sa.ColumnElement[bool]],
    columns: Sequence[str],
    *,
    limit: int | None = None,
    offset: int = 0,
) -> list[sa.Row[tuple[object, ...]]]:
    """Rows (tuples of ``columns``, ``Sample`` column names) of the samples meeting ``where``, ordered by
    category, task, pair id, label, id; ``limit=None`` returns every match."""
    q = sa.select(*[getattr(Sample, c) for c in columns]).where(*where).order_by(*_BROWSER_ORDER)
    if limit is not None:
        q = q.limit(limit).offset(offset)
    return list(conn.execute(q).all())


def sample_with_pair(conn: Connection, sample_id: str) -> tuple[dict[str, object], dict[str, object] | None] | None:
    """One sample and the other side of its pair (the first by label), as dicts of ``Sample`` columns;
    ``None`` for an unknown id."""
    table = sa.inspect(Sample).local_table
    sample = conn.execute(sa.select(table).where(col(Sample.id) == sample_id)).mappings().one_or_none()
    if sample is None:
        return None
    other = (
        conn.execute(
            sa.select(table)
            .where(col(Sample.pair_id) == sample["pair_id"], col(Sample.id) != sample_id)
            .order_by(Sample.label)
        )
        .mappings()
        .first()
    )
    return dict(sample), (dict(other) if other else None)


def predictions_on_sample(
    conn: Connection, sample_id: str, run_ids: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Every prediction on one sample (dicts of ``Prediction`` columns plus the run's ``monitor`` and
    ``template``), ordered by run id and repeat; ``run_ids`` restricts the runs (``None`` = all)."""
    from store.models import Prediction, Run

    q = (
        sa.select(sa.inspect(Prediction).local_table, col(Run.monitor), col(Run.template))
        .join(Run, col(Run.id) == col(Prediction.run_id))
        .where(col(Prediction.sample_id) == sample_id)
        .order_by(col(Prediction.run_id), col(Prediction.repeat))
    )
    if run_ids is not None:
        q = q.where(col(Prediction.run_id).in_(list(run_ids)))
    return [dict(r) for r in conn.execute(q).mappings().all()]


def counts_by_status(conn: Connection, column: str, status: str | None = None) -> list[tuple[object, ...]]:
    """Sample counts grouped by ``column`` (one of :data:`GROUP_COLUMNS`) and ``status``: rows
    ``(value, status, n)``, or ``(status, n)`` for ``column="status"``; ``status`` restricts to one
    status. Raises ``ValueError`` for another column."""
    if column not in GROUP_COLUMNS:
        raise ValueError(f"cannot group samples by {column!r}")
    group = getattr(Sample, column)
    keys = [group] if column == "status" else [group, Sample.status]
    q = sa.select(*keys, sa.func.count(col(Sample.id)).label("n")).group_by(*keys)
    if status:
        q = q.where(col(Sample.status) == status)
    return [tuple(r) for r in conn.execute(q).all()]
