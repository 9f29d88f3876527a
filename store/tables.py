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


#: the column kinds of :func:`_view`, by the suffix after a column's name (none: a string)
_KINDS = {"": sa.String, "text": sa.Text, "int": sa.Integer, "float": sa.Float, "bool": sa.Boolean, "json": sa.JSON}


def _view(name: str, columns: str) -> sa.TableClause:
    """The light view of table ``name`` with ``columns`` in order, space separated: ``NAME`` (a string column)
    or ``NAME:KIND``, KIND one of :data:`_KINDS` or ``utc`` (a timestamp, :class:`UTCDateTime`)."""
    cols = (c.partition(":") for c in columns.split())
    return sa.table(name, *(sa.column(n, UTCDateTime() if k == "utc" else _KINDS[k]()) for n, _, k in cols))


#: the ``run`` table (:class:`store.models.Run`): every column
run = _view(
    "run",
    "id monitor_id:int monitor template template_hash status kind edition archived:bool params:json n:int "
    "api_calls:int cache_hits:int tokens_in:int tokens_out:int cost_usd:float error:text created_at:utc "
    "started_at:utc finished_at:utc",
)

#: the ``prediction`` table (:class:`store.models.Prediction`): the columns a run's counts and sums, the analysis
#: and the runs' costs on the plane read
prediction = _view(
    "prediction",
    "id:int run_id sample_id repeat:int outcome score:float raw:text reason:text evidence:json pred_category "
    "severity meta:json tokens_in:int tokens_out:int cost_usd:float latency_ms:float cached:bool",
)

#: the ``sample`` table (:class:`store.models.Sample`): every column
sample = _view(
    "sample",
    "id pair_id category task label request:text response:text source source_file source_record split status "
    "request_hash response_hash content_hash label_source meta:json created_at:utc",
)

#: the ``edition_sample`` table (:class:`store.models.EditionSample`): every column
edition_sample = _view("edition_sample", "edition sample_id created_at:utc")

#: the ``gold_span`` table (:class:`store.models.GoldSpan`): every column
gold_span = _view(
    "gold_span",
    "id:int sample_id start_char:int end_char:int provenance step:int note:text created_at:utc",
)

#: the ``build_log`` table (:class:`store.models.BuildLog`): every column
build_log = _view("build_log", "id:int seed:int report:json created_at:utc")

#: the ``derived_document`` table (:class:`store.models.DerivedDocument`): every column
derived_document = _view("derived_document", "key fingerprint doc:text created_at:utc")

#: the ``erratum`` table (:class:`store.models.Erratum`): every column, in the model's order
erratum = _view("erratum", "id:int pair_id source verdict reason:text reader date origin entered_by entered_at:utc")

#: the ``annotator`` table (:class:`store.models.Annotator`): every column but ``password_hash`` (no listing
#: reads it)
annotator = _view("annotator", "id:int name role active:bool created_at:utc session_epoch:int")

#: the ``account_event`` table (:class:`store.models.AccountEvent`): every column
account_event = _view("account_event", "id:int account_id:int action actor detail:text at:utc")
