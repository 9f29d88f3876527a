"""Light Core views of the store's tables, for the reads that need no ORM (``automonitor runs --json``).

:mod:`store.models` declares the tables (SQLModel classes; Alembic migrates them) and building its 18 classes
with SQLModel, pydantic and SQLAlchemy's ORM is most of a listing command's start-up. A read that only
selects rows can use these ``sqlalchemy.table`` views instead: each names its table and the columns such a read
selects, with the column type of the model, so that a value reads back as through the model: the JSON columns
as objects, booleans as ``bool``, timestamps as aware UTC ``datetime`` (:class:`UTCDateTime`). They declare no
schema, constraint or index: ``tests/store/test_tables.py`` holds every column here to the model's column of that
name, and the rows read through a view to those read through the model's table.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

import sqlalchemy as sa

if TYPE_CHECKING:
    from sqlalchemy.engine import Dialect

__all__ = ["UTCDateTime", "prediction", "run"]


class UTCDateTime(sa.TypeDecorator[datetime]):
    """A timestamp column as the models read it (SQLModel's ``UTCDateTime``, which the migrations create:
    ``TIMESTAMP WITH TIME ZONE`` on PostgreSQL): an aware ``datetime`` in UTC, a naive one (SQLite) taken
    as UTC; ``None`` stays ``None``. For reading: a value written through it must be aware."""

    impl = sa.DateTime
    cache_ok = True

    def __init__(self) -> None:
        super().__init__(timezone=True)

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """``value`` in UTC (``None`` stays ``None``).

        Raises:
            ValueError: a naive ``value`` (its zone unknown).
        """
        if value is None:
            return None
        if value.utcoffset() is None:
            raise ValueError("a timestamp written to the store must carry its time zone")
        return value.astimezone(timezone.utc)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """A stored timestamp as aware UTC (a naive one taken as UTC)."""
        if value is None:
            return None
        if value.utcoffset() is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


#: the ``run`` table (:class:`store.models.Run`): every column
run = sa.table(
    "run",
    sa.column("id", sa.String),
    sa.column("monitor_id", sa.Integer),
    sa.column("monitor", sa.String),
    sa.column("template", sa.String),
    sa.column("template_hash", sa.String),
    sa.column("status", sa.String),
    sa.column("kind", sa.String),
    sa.column("edition", sa.String),
    sa.column("archived", sa.Boolean),
    sa.column("params", sa.JSON),
    sa.column("n", sa.Integer),
    sa.column("api_calls", sa.Integer),
    sa.column("cache_hits", sa.Integer),
    sa.column("tokens_in", sa.Integer),
    sa.column("tokens_out", sa.Integer),
    sa.column("cost_usd", sa.Float),
    sa.column("error", sa.Text),
    sa.column("created_at", UTCDateTime()),
    sa.column("started_at", UTCDateTime()),
    sa.column("finished_at", UTCDateTime()),
)

#: the ``prediction`` table (:class:`store.models.Prediction`): the columns a run's counts and sums read
prediction = sa.table(
    "prediction",
    sa.column("id", sa.Integer),
    sa.column("run_id", sa.String),
    sa.column("sample_id", sa.String),
    sa.column("repeat", sa.Integer),
    sa.column("outcome", sa.String),
    sa.column("tokens_in", sa.Integer),
    sa.column("tokens_out", sa.Integer),
    sa.column("cost_usd", sa.Float),
)
