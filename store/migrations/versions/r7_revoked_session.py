"""revoked_session: login-session tokens ended by a logout (nonce hash, account, revoked_at)

A logout used to clear the cookie in one browser only; a kept copy of the signed token logged in again
until it expired. The nonce of every logged-out token is now recorded and such a token is refused.

Revision ID: r7_revoked_session
Revises: r7_evidence_spans
Create Date: 2026-12-08 10:00:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = 'r7_revoked_session'
down_revision = 'r7_evidence_spans'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('revoked_session',
    sa.Column('nonce_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('account_id', sa.Integer(), nullable=False),
    sa.Column('revoked_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('nonce_hash'),
    )
    with op.batch_alter_table('revoked_session', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_revoked_session_account_id'), ['account_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('revoked_session', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_revoked_session_account_id'))
    op.drop_table('revoked_session')
