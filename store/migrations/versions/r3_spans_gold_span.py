"""gold_span (where the misbehavior is in a sample's response)

Revision ID: r3_spans
Revises: c12a0f1a9e01
Create Date: 2026-12-01 20:30:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = 'r3_spans'
down_revision = 'c12a0f1a9e01'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('gold_span',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('sample_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('start_char', sa.Integer(), nullable=False),
    sa.Column('end_char', sa.Integer(), nullable=False),
    sa.Column('provenance', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('step', sa.Integer(), nullable=True),
    sa.Column('note', sa.Text(), nullable=True),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['sample_id'], ['sample.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.CheckConstraint('start_char >= 0', name='ck_gold_span_start'),
    sa.CheckConstraint('end_char > start_char', name='ck_gold_span_order'),
    sa.CheckConstraint('step IS NULL OR step >= 0', name='ck_gold_span_step'),
    sa.CheckConstraint("provenance IN ('from_patch', 'from_screen', 'annotated')", name='ck_gold_span_provenance'),
    sa.UniqueConstraint('sample_id', 'provenance', 'start_char', 'end_char', name='uq_gold_span'),
    )
    with op.batch_alter_table('gold_span', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_gold_span_sample_id'), ['sample_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_gold_span_provenance'), ['provenance'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('gold_span', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_gold_span_provenance'))
        batch_op.drop_index(batch_op.f('ix_gold_span_sample_id'))
    op.drop_table('gold_span')
