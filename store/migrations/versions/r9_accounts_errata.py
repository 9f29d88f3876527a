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

Create Date: 2026-12-05 03:00:00
"""
from alembic import op
import sqlalchemy as sa

from store.migrations.ddl import create_table, drop_table, integer, references, string, text, utc


revision = 'r9_accounts_errata'
down_revision = 'r8_vocabulary_checks'

ACTIONS = ('created', 'password_changed', 'deactivated', 'reactivated', 'sessions_ended', 'logout', 'reassigned')


def _in(column: str, values) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    op.add_column('annotator', sa.Column('session_epoch', sa.Integer(), server_default='0', nullable=False))
    create_table('account_event',
    integer('id'),
    integer('account_id'),
    string('action', 32),
    string('actor', 128),
    text('detail'),
    utc('at'),
    sa.CheckConstraint(_in('action', ACTIONS), name='ck_account_event_action'),
    *references('account_id'),
    sa.PrimaryKeyConstraint('id'),
    indexes=('account_id',))
    create_table('erratum',
    integer('id'),
    string('pair_id', 256),
    string('source', 128),
    string('verdict', 16),
    text('reason', nullable=False),
    string('reader', 128),
    string('date', 10),
    string('origin', 16),
    string('entered_by', 128, nullable=True),
    utc('entered_at'),
    sa.CheckConstraint(_in('verdict', ('wrong', 'doubtful')), name='ck_erratum_verdict'),
    sa.CheckConstraint(_in('origin', ('app', 'cli', 'import')), name='ck_erratum_origin'),
    sa.CheckConstraint('length(reason) BETWEEN 1 AND 4096', name='ck_erratum_reason'),
    sa.CheckConstraint('length(date) = 10', name='ck_erratum_date'),
    sa.PrimaryKeyConstraint('id'),
    indexes=('pair_id',))


def downgrade() -> None:
    drop_table('erratum', indexes=('pair_id',))
    drop_table('account_event', indexes=('account_id',))
    op.drop_column('annotator', 'session_epoch')
