"""derived_document: JSON documents computed from the store's content, kept with it (key, fingerprint, doc)

The audit of an edition (trivial baselines per slice, leakage, controls) took 5-10 s CPU to compute, on
the first report of every new cache directory. The build, and the first computation after the samples
change, now keep it in the store under the fingerprint of the samples it was computed from; a reader whose
fingerprint matches reads it instead of computing it. The store only keeps the text: the core names the key and decides
whether a fingerprint matches.

Create Date: 2026-12-05 19:30:00
"""
from alembic import op
import sqlalchemy as sa

from store.migrations.ddl import string, text, utc


revision = 'r11_derived_document'
down_revision = 'r10_ladder_run_kind'


def upgrade() -> None:
    op.create_table('derived_document',
    string('key', 64),
    string('fingerprint', 64),
    text('doc', nullable=False),
    utc('created_at'),
    sa.PrimaryKeyConstraint('key'),
    )


def downgrade() -> None:
    op.drop_table('derived_document')
