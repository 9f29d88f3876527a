"""item_flag (an annotator flags an assigned item for the admin with a comment)

Create Date: 2026-11-30 21:50:00

A row is one flag: the annotator and the sample (both referenced and indexed), the comment (never empty:
``ck_item_flag_comment``), when the admin resolved it (NULL while open) and when it was made.
"""
from alembic import op
import sqlalchemy as sa

from store.migrations.ddl import create_table, drop_table, integer, references, string, text, utc


revision, down_revision = 'c12a0f1a9e01', '7a3e9c51d2b0'

INDEXES = ('annotator_id', 'sample_id')


def upgrade() -> None:
    create_table('item_flag',
    integer('id'),
    integer('annotator_id'),
    string('sample_id', 64),
    text('comment', nullable=False),
    utc('resolved_at', nullable=True),
    utc('created_at'),
    *references('annotator_id', 'sample_id'),
    sa.PrimaryKeyConstraint('id'),
    sa.CheckConstraint("length(comment) > 0", name='ck_item_flag_comment'),
    indexes=INDEXES)


def downgrade() -> None:
    drop_table('item_flag', indexes=INDEXES)
