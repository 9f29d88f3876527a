"""accounts that a team can manage and errata kept in the store

- ``annotator.session_epoch``: the login-session generation; a logout, a password change, a
  deactivation or an admin's "end sessions" raises it, and every token or logged-in page made under an
  older value is refused (a logout used to end one token only; other tabs kept working).
- ``account_event``: who did what to which account, and when (created, password changed, deactivated,
  reactivated, sessions ended, logout, open assignments reassigned).
- ``erratum``: errata entered into this store (the app's "Report this label", ``errata add``,
  ``errata import``), append-only, with their provenance; they used to be appended to a file in the
  code checkout. The verdict, origin, date shape and a reason of 1..4096 characters are held by the
  database (CHECK constraints on a new table work the same on SQLite and PostgreSQL).

Revision ID: r9_accounts_errata
Revises: r8_vocabulary_checks
Create Date: 2026-12-05 03:00:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = 'r9_accounts_errata'
down_revision = 'r8_vocabulary_checks'
branch_labels = None
depends_on = None

ACTIONS = ('created', 'password_changed', 'deactivated', 'reactivated', 'sessions_ended', 'logout', 'reassigned')


def _in(column: str, values) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    op.add_column('annotator', sa.Column('session_epoch', sa.Integer(), server_default='0', nullable=False))
    op.create_table('account_event',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.Column('action', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('actor', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('detail', sa.Text(), nullable=True),
    sa.Column('at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.CheckConstraint(_in('action', ACTIONS), name='ck_account_event_action'),
    sa.ForeignKeyConstraint(['account_id'], ['annotator.id'], ),
    sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('account_event', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_account_event_account_id'), ['account_id'], unique=False)
    op.create_table('erratum',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('pair_id', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('verdict', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('reader', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('date', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('origin', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('entered_by', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
    sa.Column('entered_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.CheckConstraint(_in('verdict', ('wrong', 'doubtful')), name='ck_erratum_verdict'),
    sa.CheckConstraint(_in('origin', ('app', 'cli', 'import')), name='ck_erratum_origin'),
    sa.CheckConstraint('length(reason) BETWEEN 1 AND 4096', name='ck_erratum_reason'),
    sa.CheckConstraint('length(date) = 10', name='ck_erratum_date'),
    sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('erratum', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_erratum_pair_id'), ['pair_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('erratum', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_erratum_pair_id'))
    op.drop_table('erratum')
    with op.batch_alter_table('account_event', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_account_event_account_id'))
    op.drop_table('account_event')
    op.drop_column('annotator', 'session_epoch')
