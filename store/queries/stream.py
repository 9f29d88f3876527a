"""Streaming reads for large runs: pending predictions page by page (keyset pagination on
the prediction id), so a run of 100,000 samples never holds all its samples in memory."""

from __future__ import annotations

from typing import Iterator, cast

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import col

from store.models import Prediction
from store.queries import chunks, rows_by_ids, sample_columns
from store.queries.rowtypes import JudgedText, SampleText
from store.queries.runs import sample_texts

PAGE = 1000


def count_pending(conn, run_id: str) -> int:
    """Number of the run's predictions without an outcome (``conn``: connection or session)."""
    return int(
        conn.execute(
            sa.select(sa.func.count())
            .select_from(Prediction)
            .where(col(Prediction.run_id) == run_id, col(Prediction.outcome).is_(None))
        ).scalar()
        or 0
    )


def pending_pages(engine: Engine, run_id: str, page: int = PAGE) -> Iterator[list[tuple[int, str, int]]]:
    """Pages of ``[(prediction_id, sample_id, repeat)]`` of the run's pending predictions in id order, at most
    ``page`` rows each, each page read by its own short query (``id > last id of the previous page``):
    the caller may update earlier predictions meanwhile, and memory holds one page at a time."""
    last = -1
    q = (
        sa.select(col(Prediction.id), col(Prediction.sample_id), col(Prediction.repeat))
        .where(col(Prediction.run_id) == run_id, col(Prediction.outcome).is_(None))
        .order_by(col(Prediction.id))
        .limit(page)
    )
    while True:
        with engine.connect() as c:
            rows = [(cast(int, r[0]), r[1], int(r[2] or 0)) for r in c.execute(q.where(col(Prediction.id) > last))]
        if not rows:
            return
        yield rows
        last = rows[-1][0]
        if len(rows) < page:
            return


def texts_for(engine: Engine, sample_ids: list[str]) -> dict[str, SampleText]:
    """``{sample_id: {request, response, content_hash, source, meta}}`` for one page of samples
    (:func:`store.queries.runs.sample_texts` on a connection of its own)."""
    with engine.connect() as c:
        return sample_texts(c, sample_ids)


def judged_texts(engine: Engine, sample_ids: list[str]) -> dict[str, JudgedText]:
    """``{sample_id: {request, response, content_hash}}`` for one page of samples judged in full (no monitor
    view: their ``source`` and ``meta``, what a view is cut from, are neither read nor decoded), on a
    connection of its own. On SQLite the page is read by driver-level ``SELECT ... WHERE id IN (?, ...)``
    statements (:func:`_texts_sql`; text columns: nothing to convert), in :data:`~store.queries.IN_CHUNK`
    chunks: the same rows as :func:`~store.queries.rows_by_ids`, without building and compiling an
    ``IN`` of a thousand literals per page (about half of the page's CPU)."""
    with engine.connect() as c:
        cols = sample_columns("id", "request", "response", "content_hash")
        if c.dialect.paramstyle != "qmark":
            rows = rows_by_ids(c, cols, cols[0], sample_ids)
        else:
            head = _texts_sql(c.dialect, cols)
            rows = []
            for part in chunks(list(dict.fromkeys(sample_ids))):
                rows += c.exec_driver_sql(head % ",".join("?" * len(part)), tuple(part)).all()
        return {r[0]: JudgedText(request=r[1], response=r[2], content_hash=r[3]) for r in rows}


#: dialect name -> ``SELECT <the columns> FROM sample WHERE sample.id IN (%s)``, compiled once
_TEXTS_SQL: dict[str, str] = {}


def _texts_sql(dialect: sa.Dialect, cols: list[sa.Column[object]]) -> str:
    """:func:`judged_texts`' statement for ``dialect`` with ``%s`` standing for its ``IN`` list (the select of
    ``cols`` compiled by SQLAlchemy, the ``WHERE`` on ``cols[0]`` compiled alike: the same quoting)."""
    sql = _TEXTS_SQL.get(dialect.name)
    if sql is None:
        select = str(sa.select(*cols).compile(dialect=dialect)).replace("%", "%%")
        key = str(cols[0].compile(dialect=dialect)).replace("%", "%%")
        sql = _TEXTS_SQL[dialect.name] = f"{select} WHERE {key} IN (%s)"
    return sql
