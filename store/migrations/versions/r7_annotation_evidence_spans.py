"""annotation.evidence_spans (several evidence spans per label) and checks on the evidence offsets

An annotator may mark several disjoint parts of a response; ``evidence_spans`` holds them as
``[[start, end], ...]`` and ``evidence_start`` / ``evidence_end`` become their hull. The upgrade fills
``evidence_spans`` with the one span of every existing label that has one, clears offsets no check
would accept (none are written by the app or the importer, which validate them), then makes the
database refuse ``evidence_start < 0``, ``evidence_end <= evidence_start``, one offset without the
other, and spans without offsets.

Create Date: 2026-12-07 10:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = 'r7_evidence_spans'
down_revision = 'r3_concurrency'

ORDER = (
    "(evidence_start IS NULL AND evidence_end IS NULL) "
    "OR (evidence_start IS NOT NULL AND evidence_end IS NOT NULL "
    "AND evidence_start >= 0 AND evidence_end > evidence_start)"
)
SPANS = "evidence_spans IS NULL OR evidence_start IS NOT NULL"


def upgrade() -> None:
    with op.batch_alter_table('annotation', schema=None) as batch_op:
        batch_op.add_column(sa.Column('evidence_spans', sa.JSON(none_as_null=True), nullable=True))
    op.execute(
        "UPDATE annotation SET evidence_start = NULL, evidence_end = NULL, evidence_text = NULL "
        "WHERE evidence_start IS NULL OR evidence_end IS NULL OR evidence_start < 0 "
        "OR evidence_end <= evidence_start"
    )
    bind = op.get_bind()
    table = sa.table(
        'annotation',
        sa.column('id', sa.Integer()),
        sa.column('evidence_start', sa.Integer()),
        sa.column('evidence_end', sa.Integer()),
        sa.column('evidence_spans', sa.JSON(none_as_null=True)),
    )
    rows = bind.execute(
        sa.select(table.c.id, table.c.evidence_start, table.c.evidence_end).where(
            table.c.evidence_start.is_not(None)
        )
    ).all()
    for rid, start, end in rows:
        bind.execute(
            sa.update(table).where(table.c.id == rid).values(evidence_spans=[[int(start), int(end)]])
        )
    with op.batch_alter_table('annotation', schema=None) as batch_op:
        batch_op.create_check_constraint('ck_annotation_evidence_order', ORDER)
        batch_op.create_check_constraint('ck_annotation_evidence_spans', SPANS)


def downgrade() -> None:
    with op.batch_alter_table('annotation', schema=None) as batch_op:
        batch_op.drop_constraint('ck_annotation_evidence_spans', type_='check')
        batch_op.drop_constraint('ck_annotation_evidence_order', type_='check')
        batch_op.drop_column('evidence_spans')
