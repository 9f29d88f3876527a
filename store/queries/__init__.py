"""Query helpers over the store, one module per area (samples, runs, analysis, annotation), and the
chunked ``IN (...)`` lookup they share."""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Iterable,
    Iterator,
    Mapping,
    Protocol,
    Sequence,
    TypeVar,
    cast,
    get_origin,
    get_type_hints,
)

from typing_extensions import NotRequired

import sqlalchemy as sa

if TYPE_CHECKING:  # the ORM and the tables load with the first query that uses them, not with ``store``
    from sqlalchemy.engine import Connection, RowMapping
    from sqlalchemy.orm import Mapper, Session
    from sqlmodel import SQLModel

# SQLite allows 999 bound parameters per statement in older builds; stay below it everywhere.
IN_CHUNK = 900


T = TypeVar("T")


def chunks(seq: Sequence[T], size: int = IN_CHUNK) -> Iterator[Sequence[T]]:
    """Consecutive slices of ``seq`` of at most ``size`` items."""
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


def rows_by_ids(conn: Connection | Session, columns: Sequence[Any], id_column: Any, ids: Iterable[Any]) -> list[Any]:
    """Rows of ``SELECT columns WHERE id_column IN ids``, ``ids`` deduplicated (order kept) and sent in
    chunks of :data:`IN_CHUNK`. ``conn`` is a SQLAlchemy connection or session. The ids go in one expanding
    bind parameter (typed as ``id_column``), so the statement is built once and found in SQLAlchemy's
    compiled cache, not coerced literal by literal and keyed anew per chunk."""
    out: list[Any] = []
    stmt = None
    for part in chunks(list(dict.fromkeys(ids))):
        if stmt is None:
            stmt = sa.select(*columns).where(id_column.in_(sa.bindparam("ids_in", expanding=True)))
        out += conn.execute(stmt, {"ids_in": list(part)}).all()
    return out


#: the columns that place a sample in the benchmark (its pair, cell and gold label)
SAMPLE_KEY = ("id", "pair_id", "category", "task", "label")


def table_of(model: type[SQLModel]) -> sa.Table:
    """The mapped table of a SQLModel class (its ``__table__``, which SQLModel sets at runtime only)."""
    mapper: Mapper[SQLModel] = sa.inspect(model)
    return cast(sa.Table, mapper.local_table)


def insert_rows(session: Session, model: type[SQLModel], rows: Sequence[Mapping[str, object]]) -> int:
    """``INSERT`` ``rows`` (dicts keyed by column name) into ``model``'s table inside the caller's transaction,
    as Core ``executemany`` batches: consecutive rows with the same keys share one statement, as in the ORM's
    bulk ``session.execute(insert(model), rows)``, which writes the same rows (column defaults for absent keys,
    the same bind processing) but spends about as much CPU per row in its mapper bookkeeping as the
    database spends storing it. As the ORM's bulk insert does, a key whose value is ``None`` is left out (so
    the column's default applies, or NULL where it has none) unless the column's type stores ``None`` as a
    value (``should_evaluate_none``, e.g. JSON ``null``): ``{"source": None}`` gets the column's default, not a
    NULL that a ``NOT NULL`` column refuses. The session is flushed first when it autoflushes (as the ORM call
    would be). Returns ``len(rows)``.

    Raises:
        sqlalchemy.exc.IntegrityError: a row breaks a constraint (nothing of this call is kept by the caller's
            rollback).
    """
    if not rows:
        return 0
    if session.autoflush:
        session.flush()
    conn = session.connection()
    table = table_of(model)
    eval_none = frozenset(c.key for c in table.c if c.type.should_evaluate_none)
    batch: list[Mapping[str, object]] = []
    keys: frozenset[str] = frozenset()
    for row in rows:
        r = {k: v for k, v in row.items() if v is not None or k in eval_none}
        k = frozenset(r)
        if batch and k != keys:
            conn.execute(sa.insert(table), batch)
            batch = []
        keys = k
        batch.append(r)
    conn.execute(sa.insert(table), batch)
    return len(rows)


def sample_columns(*names: str) -> list[sa.Column[object]]:
    """The ``sample`` table's columns called ``names`` (``sample_columns(*SAMPLE_KEY, "content_hash")``), for
    a ``SELECT`` whose rows become dicts with those keys."""
    from store.models import Sample

    return [table_of(Sample).c[n] for n in names]


class _Row(Protocol):
    """A result row with its columns by name (``sqlalchemy.Row``)."""

    @property
    def _mapping(self) -> RowMapping: ...


_ROW_KEYS: dict[object, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _row_keys(kind: object) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The required and the ``NotRequired`` keys of the ``TypedDict`` ``kind``, each in declaration order
    (``get_type_hints``: the class's ``__required_keys__`` miss ``NotRequired`` under postponed annotations)."""
    if kind not in _ROW_KEYS:
        hints = get_type_hints(kind, include_extras=True)
        optional = tuple(k for k, t in hints.items() if get_origin(t) is NotRequired)
        _ROW_KEYS[kind] = tuple(k for k in hints if k not in optional), optional
    return _ROW_KEYS[kind]


def typed_rows(rows: Iterable[_Row], kind: type[T]) -> list[T]:
    """Each of ``rows`` as a ``kind`` (a ``TypedDict`` of row types, :mod:`store.queries.rowtypes`): its keys in
    ``kind``'s declaration order, each the row's column of that name (a ``NotRequired`` key only where the row
    has that column). The keys come from ``kind`` itself, so a query's dicts cannot miss or misname one.

    Raises:
        KeyError: a required key of ``kind`` is not a column of the row (the ``SELECT`` lacks it).
    """
    required, optional = _row_keys(kind)
    out: list[T] = []
    for r in rows:
        m = r._mapping
        d = {k: m[k] for k in required}
        d.update((k, m[k]) for k in optional if k in m)
        out.append(cast(T, d))
    return out


__all__ = [
    "IN_CHUNK",
    "SAMPLE_KEY",
    "chunks",
    "insert_rows",
    "rows_by_ids",
    "sample_columns",
    "table_of",
    "typed_rows",
]
