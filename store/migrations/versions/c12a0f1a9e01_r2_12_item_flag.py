"""item_flag (an annotator flags an assigned item for the admin with a comment)

Revision ID: c12a0f1a9e01
Revises: 7a3e9c51d2b0
Create Date: 2026-11-30 21:50:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = 'c12a0f1a9e01'
down_revision = '7a3e9c51d2b0'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('item_flag',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('annotator_id', sa.Integer(), nullable=False),
    sa.Column('sample_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('comment', sa.Text(), nullable=False),
    sa.Column('resolved_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['annotator_id'], ['annotator.id'], ),
    sa.ForeignKeyConstraint(['sample_id'], ['sample.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.CheckConstraint("length(comment) > 0", name='ck_item_flag_comment'),
    )
    with op.batch_alter_table('item_flag', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_item_flag_annotator_id'), ['annotator_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_item_flag_sample_id'), ['sample_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('item_flag', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_item_flag_sample_id'))
        batch_op.drop_index(batch_op.f('ix_item_flag_annotator_id'))
    op.drop_table('item_flag')
