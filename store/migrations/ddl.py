"""The DDL pieces the revisions under ``versions/`` share: columns, keys and the per-column indexes.

Frozen: a revision that has run on a store must keep emitting the same DDL, so what a helper here emits never
changes (not a type, a name, an order). A later revision that needs something else adds a new helper (or
writes its DDL out); it never edits one that a revision uses. The revisions read nothing from
``store.models``: the models describe today's schema, a revision the schema of its day.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

#: what a foreign-key column references (the column names the revisions use)
REFERENCES = {
    "account_id": "annotator.id",
    "adjudicator_id": "annotator.id",
    "annotator_id": "annotator.id",
    "monitor_id": "monitor.id",
    "run_id": "run.id",
    "sample_id": "sample.id",
}


def string(name: str, length: int, *, nullable: bool = False) -> sa.Column:
    """A ``VARCHAR(length)`` column (SQLModel's ``AutoString``), ``NOT NULL`` unless ``nullable``."""
    return sa.Column(name, sqlmodel.sql.sqltypes.AutoString(length=length), nullable=nullable)


def integer(name: str, *, nullable: bool = False) -> sa.Column:
    """An ``INTEGER`` column, ``NOT NULL`` unless ``nullable``."""
    return sa.Column(name, sa.Integer(), nullable=nullable)


def text(name: str, *, nullable: bool = True) -> sa.Column:
    """A ``TEXT`` column, nullable unless ``nullable`` is false."""
    return sa.Column(name, sa.Text(), nullable=nullable)


def utc(name: str, *, nullable: bool = False) -> sa.Column:
    """A timestamp column (``UTCDateTime``), ``NOT NULL`` unless ``nullable``."""
    return sa.Column(name, sqlmodel.sql.sqltypes.UTCDateTime(), nullable=nullable)


def references(*columns: str) -> list[sa.ForeignKeyConstraint]:
    """One foreign key per column, to the column :data:`REFERENCES` names, in the order given."""
    return [sa.ForeignKeyConstraint([c], [REFERENCES[c]]) for c in columns]


def verdict_columns() -> list[sa.Column]:
    """What a judge's answer holds, the same in a prediction and a judge-cache entry: the score, the raw
    answer, the reason, the evidence, the category and severity read from it, the tokens and the cost."""
    return [
        sa.Column("score", sa.Float(), nullable=True),
        text("raw"),
        text("reason"),
        sa.Column("evidence", sa.JSON(), nullable=False),
        string("pred_category", 32, nullable=True),
        string("severity", 16, nullable=True),
        integer("tokens_in"),
        integer("tokens_out"),
        sa.Column("cost_usd", sa.Float(), nullable=False),
    ]


def create_table(name: str, *elements: sa.Column | sa.Constraint, indexes: tuple[str, ...] = ()) -> None:
    """``op.create_table(name, *elements)``, then a non-unique index ``ix_<name>_<column>`` on each of
    ``indexes``, in that order (in one batch block)."""
    op.create_table(name, *elements)
    create_indexes(name, *indexes)


def create_indexes(table: str, *columns: str, unique: bool = False) -> None:
    """An index ``ix_<table>_<column>`` on each of ``columns``, in that order, in one batch block (none
    when ``columns`` is empty)."""
    if not columns:
        return
    with op.batch_alter_table(table, schema=None) as batch_op:
        for c in columns:
            batch_op.create_index(batch_op.f(f"ix_{table}_{c}"), [c], unique=unique)


def drop_indexes(table: str, *columns: str) -> None:
    """Drop the indexes :func:`create_indexes` made on ``columns``, in the reverse order, in one batch block
    (none when ``columns`` is empty)."""
    if not columns:
        return
    with op.batch_alter_table(table, schema=None) as batch_op:
        for c in reversed(columns):
            batch_op.drop_index(batch_op.f(f"ix_{table}_{c}"))


def drop_table(name: str, *, indexes: tuple[str, ...] = ()) -> None:
    """Undo :func:`create_table`: drop its indexes on ``indexes`` (:func:`drop_indexes`), then the table."""
    drop_indexes(name, *indexes)
    op.drop_table(name)
