"""shared schema: label provenance, editions, run edition and archive flag

Create Date: 2026-11-30 21:30:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel

from store.migrations.ddl import create_table, drop_table, references, string, utc


revision = 'b1c2d3e4f5a6'
down_revision = '4f048a67f6a5'


def upgrade() -> None:
    with op.batch_alter_table('sample', schema=None) as batch_op:
        batch_op.add_column(sa.Column('label_source', sqlmodel.sql.sqltypes.AutoString(length=32),
                                      nullable=False, server_default='user'))
        batch_op.create_index(batch_op.f('ix_sample_label_source'), ['label_source'], unique=False)

    create_table('edition_sample',
    string('edition', 16),
    string('sample_id', 64),
    utc('created_at'),
    *references('sample_id'),
    sa.PrimaryKeyConstraint('edition', 'sample_id'),
    indexes=('sample_id',))

    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('edition', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True))
        batch_op.add_column(sa.Column('archived', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.create_index(batch_op.f('ix_run_edition'), ['edition'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_run_edition'))
        batch_op.drop_column('archived')
        batch_op.drop_column('edition')
    drop_table('edition_sample', indexes=('sample_id',))
    with op.batch_alter_table('sample', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_sample_label_source'))
        batch_op.drop_column('label_source')
