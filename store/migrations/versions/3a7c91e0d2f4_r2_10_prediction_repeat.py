"""prediction repeat index (run --repeat K judges each sample K times)

The uniqueness of a prediction becomes (run_id, sample_id, repeat); every existing prediction is
repeat 0, the run's verdict.

Create Date: 2026-11-30 22:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '3a7c91e0d2f4'
down_revision = 'b1c2d3e4f5a6'


def upgrade() -> None:
    with op.batch_alter_table('prediction', schema=None) as batch_op:
        batch_op.add_column(sa.Column('repeat', sa.Integer(), nullable=False, server_default='0'))
        batch_op.drop_constraint('uq_prediction_run_sample', type_='unique')
        batch_op.create_unique_constraint('uq_prediction_run_sample_repeat', ['run_id', 'sample_id', 'repeat'])
        batch_op.create_check_constraint('ck_prediction_repeat_nonneg', 'repeat >= 0')


def downgrade() -> None:
    with op.batch_alter_table('prediction', schema=None) as batch_op:
        batch_op.drop_constraint('ck_prediction_repeat_nonneg', type_='check')
        batch_op.drop_constraint('uq_prediction_run_sample_repeat', type_='unique')
        batch_op.execute('DELETE FROM prediction WHERE "repeat" > 0')
        batch_op.create_unique_constraint('uq_prediction_run_sample', ['run_id', 'sample_id'])
        batch_op.drop_column('repeat')
