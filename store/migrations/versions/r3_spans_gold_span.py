"""gold_span (where the misbehavior is in a sample's response)

Create Date: 2026-12-01 20:30:00

A row is one span: the sample (referenced and indexed), the character range ``[start_char, end_char)`` of its
response (``0 <= start_char < end_char``), its provenance (``from_patch``, ``from_screen``, ``annotated``;
indexed), the trajectory step it points at (NULL for a plain response) and a note; a sample holds a range of
one provenance once (``uq_gold_span``).
"""
from alembic import op
import sqlalchemy as sa

from store.migrations.ddl import create_table, drop_table, integer, references, string, text, utc


revision, down_revision = 'r3_spans', 'c12a0f1a9e01'

INDEXES = ('sample_id', 'provenance')


def upgrade() -> None:
    create_table('gold_span',
    integer('id'),
    string('sample_id', 64),
    integer('start_char'),
    integer('end_char'),
    string('provenance', 16),
    integer('step', nullable=True),
    text('note'),
    utc('created_at'),
    *references('sample_id'),
    sa.PrimaryKeyConstraint('id'),
    sa.CheckConstraint('start_char >= 0', name='ck_gold_span_start'),
    sa.CheckConstraint('end_char > start_char', name='ck_gold_span_order'),
    sa.CheckConstraint('step IS NULL OR step >= 0', name='ck_gold_span_step'),
    sa.CheckConstraint("provenance IN ('from_patch', 'from_screen', 'annotated')", name='ck_gold_span_provenance'),
    sa.UniqueConstraint('sample_id', 'provenance', 'start_char', 'end_char', name='uq_gold_span'),
    indexes=INDEXES)


def downgrade() -> None:
    drop_table('gold_span', indexes=INDEXES)
