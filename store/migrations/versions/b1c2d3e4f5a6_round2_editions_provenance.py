"""shared schema: label provenance, editions, run edition and archive flag

Revision ID: b1c2d3e4f5a6
Revises: 4f048a67f6a5
Create Date: 2026-11-30 21:30:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = 'b1c2d3e4f5a6'
down_revision = '4f048a67f6a5'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('sample', schema=None) as batch_op:
        batch_op.add_column(sa.Column('label_source', sqlmodel.sql.sqltypes.AutoString(length=32),
                                      nullable=False, server_default='user'))
        batch_op.create_index(batch_op.f('ix_sample_label_source'), ['label_source'], unique=False)

    op.create_table('edition_sample',
    sa.Column('edition', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('sample_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['sample_id'], ['sample.id'], ),
    sa.PrimaryKeyConstraint('edition', 'sample_id')
    )
    with op.batch_alter_table('edition_sample', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_edition_sample_sample_id'), ['sample_id'], unique=False)

    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('edition', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True))
        batch_op.add_column(sa.Column('archived', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.create_index(batch_op.f('ix_run_edition'), ['edition'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_run_edition'))
        batch_op.drop_column('archived')
        batch_op.drop_column('edition')
    with op.batch_alter_table('edition_sample', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_edition_sample_sample_id'))
    op.drop_table('edition_sample')
    with op.batch_alter_table('sample', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_sample_label_source'))
        batch_op.drop_column('label_source')
