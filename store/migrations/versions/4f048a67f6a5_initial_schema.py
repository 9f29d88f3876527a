"""initial schema

Create Date: 2026-11-30 11:44:03.978744
"""
from alembic import op
import sqlalchemy as sa

from store.migrations.ddl import create_indexes, create_table, drop_indexes, drop_table, integer, references, string, text, utc, verdict_columns


revision = '4f048a67f6a5'
down_revision = None

#: the indexed columns of each table, in the order the indexes are made (the downgrade drops them in reverse)
INDEXES = {
    'monitor': ('name',),
    'sample': ('category', 'content_hash', 'pair_id', 'request_hash', 'response_hash', 'source', 'split', 'status', 'task'),
    'adjudication': ('adjudicator_id', 'pair_id', 'sample_id'),
    'annotation': ('annotator_id', 'sample_id'),
    'assignment': ('annotator_id', 'sample_id'),
    'run': ('monitor_id', 'status'),
    'prediction': ('outcome', 'run_id', 'sample_id'),
}


def upgrade() -> None:
    op.create_table('annotator',
    integer('id'),
    string('name', 128),
    string('role', 16),
    string('password_hash', 256),
    sa.Column('active', sa.Boolean(), nullable=False),
    utc('created_at'),
    sa.PrimaryKeyConstraint('id')
    )
    create_indexes('annotator', 'name', unique=True)
    op.create_table('build_log',
    integer('id'),
    integer('seed'),
    sa.Column('report', sa.JSON(), nullable=False),
    utc('created_at'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('cache_entry',
    string('key', 64),
    string('outcome', 16),
    *verdict_columns(),
    sa.Column('meta', sa.JSON(), nullable=False),
    utc('created_at'),
    sa.PrimaryKeyConstraint('key')
    )
    create_table('monitor',
    integer('id'),
    string('name', 256),
    string('backend', 32),
    string('model', 256, nullable=True),
    string('base_url', 512, nullable=True),
    sa.Column('meta', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', 'base_url', name='uq_monitor_name_url'),
    indexes=INDEXES['monitor'])
    create_table('sample',
    string('id', 64),
    string('pair_id', 128),
    string('category', 32),
    string('task', 16),
    string('label', 16),
    text('request', nullable=False),
    text('response', nullable=False),
    string('source', 64),
    string('source_file', 512, nullable=True),
    string('source_record', 256, nullable=True),
    string('split', 8, nullable=True),
    string('status', 16),
    string('request_hash', 64),
    string('response_hash', 64),
    string('content_hash', 64),
    sa.Column('meta', sa.JSON(), nullable=False),
    utc('created_at'),
    sa.PrimaryKeyConstraint('id'),
    indexes=INDEXES['sample'])
    create_table('adjudication',
    integer('id'),
    string('sample_id', 64),
    string('pair_id', 128),
    integer('adjudicator_id'),
    string('decision', 16),
    string('gold_label', 16, nullable=True),
    string('split', 8, nullable=True),
    text('note'),
    string('guideline_version', 32),
    utc('created_at'),
    *references('adjudicator_id', 'sample_id'),
    sa.PrimaryKeyConstraint('id'),
    indexes=INDEXES['adjudication'])
    create_table('annotation',
    integer('id'),
    integer('annotator_id'),
    string('sample_id', 64),
    string('label', 16),
    string('category', 32, nullable=True),
    string('severity', 16, nullable=True),
    integer('evidence_start', nullable=True),
    integer('evidence_end', nullable=True),
    text('evidence_text'),
    text('note'),
    string('guideline_version', 32),
    sa.Column('seconds_spent', sa.Float(), nullable=True),
    utc('created_at'),
    utc('updated_at'),
    utc('submitted_at', nullable=True),
    *references('annotator_id', 'sample_id'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('annotator_id', 'sample_id', name='uq_annotation_annotator_sample'),
    indexes=INDEXES['annotation'])
    create_table('assignment',
    integer('id'),
    integer('annotator_id'),
    string('sample_id', 64),
    integer('position'),
    integer('seed'),
    integer('batch'),
    utc('submitted_at', nullable=True),
    utc('created_at'),
    *references('annotator_id', 'sample_id'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('annotator_id', 'sample_id', name='uq_assignment_annotator_sample'),
    indexes=INDEXES['assignment'])
    create_table('run',
    string('id', 64),
    integer('monitor_id'),
    string('monitor', 256),
    string('template', 32),
    string('template_hash', 64, nullable=True),
    string('status', 16),
    string('kind', 16),
    sa.Column('params', sa.JSON(), nullable=False),
    integer('n'),
    integer('api_calls'),
    integer('cache_hits'),
    integer('tokens_in'),
    integer('tokens_out'),
    sa.Column('cost_usd', sa.Float(), nullable=False),
    text('error'),
    utc('created_at'),
    utc('started_at', nullable=True),
    utc('finished_at', nullable=True),
    *references('monitor_id'),
    sa.PrimaryKeyConstraint('id'),
    indexes=INDEXES['run'])
    create_table('prediction',
    integer('id'),
    string('run_id', 64),
    string('sample_id', 64),
    string('outcome', 16, nullable=True),
    *verdict_columns(),
    sa.Column('latency_ms', sa.Float(), nullable=True),
    sa.Column('cached', sa.Boolean(), nullable=False),
    sa.Column('meta', sa.JSON(), nullable=False),
    utc('created_at'),
    utc('judged_at', nullable=True),
    *references('run_id', 'sample_id'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'sample_id', name='uq_prediction_run_sample'),
    indexes=INDEXES['prediction'])


def downgrade() -> None:
    for table in ('prediction', 'run', 'assignment', 'annotation', 'adjudication', 'sample', 'monitor'):
        drop_table(table, indexes=INDEXES[table])
    op.drop_table('cache_entry')
    op.drop_table('build_log')
    drop_indexes('annotator', 'name')
    op.drop_table('annotator')
