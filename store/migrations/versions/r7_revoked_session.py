"""revoked_session: login-session tokens ended by a logout (nonce hash, account, revoked_at)

A logout used to clear the cookie in one browser only; a kept copy of the signed token logged in again
until it expired. The nonce of every logged-out token is now recorded and such a token is refused.

Create Date: 2026-12-08 10:00:00
"""
from alembic import op
import sqlalchemy as sa

from store.migrations.ddl import create_table, drop_table, integer, string, utc


revision = 'r7_revoked_session'
down_revision = 'r7_evidence_spans'


def upgrade() -> None:
    create_table('revoked_session',
    string('nonce_hash', 64),
    integer('account_id'),
    utc('revoked_at'),
    sa.PrimaryKeyConstraint('nonce_hash'),
    indexes=('account_id',))


def downgrade() -> None:
    drop_table('revoked_session', indexes=('account_id',))
