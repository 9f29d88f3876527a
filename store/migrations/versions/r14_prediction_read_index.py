"""prediction read index (SQLite): a covering index for the report's read of each run's verdicts

A report reads, for each run, its repeat-0 predictions' ``sample_id, outcome, score, evidence`` in sample id
order (:func:`store.queries.analysis.load_predictions`, ``light=True``). On SQLite the unique index on (run_id,
sample_id, repeat) finds the rows and gives their order, but every row is then looked up in the table. The
index ``ix_prediction_read`` on (run_id, repeat, sample_id, outcome, score, evidence) holds every column that
read sends back, so SQLite answers it from the index alone (``USING COVERING INDEX``): the fetch of 100 runs x
3,010 predictions 0.30 -> 0.20 s CPU, the file +31% on a store whose ``raw`` and ``reason`` are empty
(benchmarks/README.md, twenty-first and twenty-second sittings).

PostgreSQL gets no index: ``evidence`` is ``json`` there, which has no B-tree operator class, and as an
``INCLUDE`` column it would make any prediction whose evidence takes more than about 2.7 kB in the index
(a third of a page) fail to insert; without ``evidence`` the planner keeps its scan of ``ix_prediction_run_id``
and a sort (measured: no faster read). The model declares the index for SQLite only.

Create Date: 2026-12-07 20:00:00
"""
from alembic import op


revision = 'r14_prediction_read_index'
down_revision = 'r13_run_token_totals_bigint'

INDEX = 'ix_prediction_read'
COLUMNS = ['run_id', 'repeat', 'sample_id', 'outcome', 'score', 'evidence']


def upgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        op.create_index(INDEX, 'prediction', COLUMNS)


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        op.drop_index(INDEX, table_name='prediction')
