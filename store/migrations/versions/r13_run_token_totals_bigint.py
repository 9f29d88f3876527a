"""run token totals BIGINT: ``run.tokens_in`` / ``run.tokens_out`` hold sums over the run's predictions

A judge's per-call token counts are each held to [0, 2**31) (``token_count`` in
:mod:`automonitor.runs.monitors.judgement`), so a prediction's (and a cache entry's) ``tokens_in`` /
``tokens_out`` fit the INTEGER columns of the initial schema. A run's columns are the sums over its
predictions (``run_totals``) or over a generation run's calls: on PostgreSQL INTEGER is 32-bit, so two
calls near the cap, or a long run, overflowed and the run's final write failed ("integer out of range"),
losing the run. The two columns become BIGINT on PostgreSQL. On SQLite an INTEGER column already holds
64-bit values: nothing changes there (the models map the columns to INTEGER on SQLite; a table copy would
also drop the run table's vocabulary triggers of :mod:`r8_vocabulary_checks`).

The downgrade makes them INTEGER again; it stops, changing nothing and naming the runs, while a run holds
a total of 2**31 or more.

Create Date: 2026-12-06 17:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = 'r13_run_token_totals_bigint'
down_revision = 'r12_monitor_name_unique'

#: the run columns that hold sums of per-call token counts
COLUMNS = ('tokens_in', 'tokens_out')
INT32_MAX = 2**31 - 1


def upgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return  # SQLite: INTEGER is 64-bit already
    for name in COLUMNS:
        op.alter_column('run', name, type_=sa.BigInteger(), existing_type=sa.Integer(), existing_nullable=False)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != 'postgresql':
        return
    big = bind.execute(
        sa.text(f"SELECT id FROM run WHERE tokens_in > {INT32_MAX} OR tokens_out > {INT32_MAX} ORDER BY id")
    ).scalars().all()
    if big:
        raise RuntimeError(
            "cannot make run.tokens_in / run.tokens_out INTEGER again: these runs hold a token total of 2**31 or "
            f"more: {', '.join(big)}. Delete or archive them elsewhere first, or stay at this revision."
        )
    for name in COLUMNS:
        op.alter_column('run', name, type_=sa.Integer(), existing_type=sa.BigInteger(), existing_nullable=False)
