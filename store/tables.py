"""Light Core views of the store's tables, for the reads that need no ORM (``automonitor runs``, ``stats``,
``users list`` and ``report``).

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

from automonitor.timestamps import as_utc

if TYPE_CHECKING:
    from sqlalchemy.engine import Dialect

__all__ = [
    "UTCDateTime",
    "account_event",
    "annotator",
    "build_log",
    "derived_document",
    "edition_sample",
    "erratum",
    "gold_span",
    "prediction",
    "run",
    "sample",
]


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
        """A stored timestamp as aware UTC (a naive one taken as UTC: :func:`automonitor.timestamps.as_utc`)."""
        return None if value is None else as_utc(value).astimezone(timezone.utc)


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

#: the ``prediction`` table (:class:`store.models.Prediction`): the columns a run's counts and sums and the
#: analysis read
prediction = sa.table(
    "prediction",
    sa.column("id", sa.Integer),
    sa.column("run_id", sa.String),
    sa.column("sample_id", sa.String),
    sa.column("repeat", sa.Integer),
    sa.column("outcome", sa.String),
    sa.column("score", sa.Float),
    sa.column("raw", sa.Text),
    sa.column("reason", sa.Text),
    sa.column("evidence", sa.JSON),
    sa.column("pred_category", sa.String),
    sa.column("severity", sa.String),
    sa.column("meta", sa.JSON),
    sa.column("tokens_in", sa.Integer),
    sa.column("tokens_out", sa.Integer),
    sa.column("cost_usd", sa.Float),
)

#: the ``sample`` table (:class:`store.models.Sample`): every column
sample = sa.table(
    "sample",
    sa.column("id", sa.String),
    sa.column("pair_id", sa.String),
    sa.column("category", sa.String),
    sa.column("task", sa.String),
    sa.column("label", sa.String),
    sa.column("request", sa.Text),
    sa.column("response", sa.Text),
    sa.column("source", sa.String),
    sa.column("source_file", sa.String),
    sa.column("source_record", sa.String),
    sa.column("split", sa.String),
    sa.column("status", sa.String),
    sa.column("request_hash", sa.String),
    sa.column("response_hash", sa.String),
    sa.column("content_hash", sa.String),
    sa.column("label_source", sa.String),
    sa.column("meta", sa.JSON),
    sa.column("created_at", UTCDateTime()),
)

#: the ``edition_sample`` table (:class:`store.models.EditionSample`): every column
edition_sample = sa.table(
    "edition_sample",
    sa.column("edition", sa.String),
    sa.column("sample_id", sa.String),
    sa.column("created_at", UTCDateTime()),
)

#: the ``gold_span`` table (:class:`store.models.GoldSpan`): every column
gold_span = sa.table(
    "gold_span",
    sa.column("id", sa.Integer),
    sa.column("sample_id", sa.String),
    sa.column("start_char", sa.Integer),
    sa.column("end_char", sa.Integer),
    sa.column("provenance", sa.String),
    sa.column("step", sa.Integer),
    sa.column("note", sa.Text),
    sa.column("created_at", UTCDateTime()),
)

#: the ``build_log`` table (:class:`store.models.BuildLog`): every column
build_log = sa.table(
    "build_log",
    sa.column("id", sa.Integer),
    sa.column("seed", sa.Integer),
    sa.column("report", sa.JSON),
    sa.column("created_at", UTCDateTime()),
)

#: the ``derived_document`` table (:class:`store.models.DerivedDocument`): every column
derived_document = sa.table(
    "derived_document",
    sa.column("key", sa.String),
    sa.column("fingerprint", sa.String),
    sa.column("doc", sa.Text),
    sa.column("created_at", UTCDateTime()),
)

#: the ``erratum`` table (:class:`store.models.Erratum`): every column, in the model's order
erratum = sa.table(
    "erratum",
    sa.column("id", sa.Integer),
    sa.column("pair_id", sa.String),
    sa.column("source", sa.String),
    sa.column("verdict", sa.String),
    sa.column("reason", sa.Text),
    sa.column("reader", sa.String),
    sa.column("date", sa.String),
    sa.column("origin", sa.String),
    sa.column("entered_by", sa.String),
    sa.column("entered_at", UTCDateTime()),
)

#: the ``annotator`` table (:class:`store.models.Annotator`): every column but ``password_hash`` (no listing
#: reads it)
annotator = sa.table(
    "annotator",
    sa.column("id", sa.Integer),
    sa.column("name", sa.String),
    sa.column("role", sa.String),
    sa.column("active", sa.Boolean),
    sa.column("created_at", UTCDateTime()),
    sa.column("session_epoch", sa.Integer),
)

#: the ``account_event`` table (:class:`store.models.AccountEvent`): every column
account_event = sa.table(
    "account_event",
    sa.column("id", sa.Integer),
    sa.column("account_id", sa.Integer),
    sa.column("action", sa.String),
    sa.column("actor", sa.String),
    sa.column("detail", sa.Text),
    sa.column("at", UTCDateTime()),
)
