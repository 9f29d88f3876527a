"""account events record logins: ``account_event.action`` may be ``login``

``users history`` (and the People page) listed account creation, password changes, deactivation,
reactivation, ended sessions, logouts and reassignments, but no login: an admin reading who used an account,
and when, saw the logout with no matching login. A successful sign-in is now recorded (action ``login``, the
account as its own actor). The database holds the action vocabulary (``ck_account_event_action``), so the
constraint is widened: on PostgreSQL the constraint is dropped and added again; on SQLite, where a CHECK is
part of the table, the table is copied with the new constraint (its index and foreign key kept; no trigger
lives on this table).

The downgrade narrows the constraint again; it stops, changing nothing and saying how many rows, while a
``login`` event is stored (delete them first, or stay at this revision).

Create Date: 2026-12-07 20:10:00
"""
from alembic import op
import sqlalchemy as sa


revision = 'r15_account_login_event'
down_revision = 'r14_prediction_read_index'

#: the action vocabulary before this revision (r9_accounts_errata) and from it
BEFORE = ('created', 'password_changed', 'deactivated', 'reactivated', 'sessions_ended', 'logout', 'reassigned')
AFTER = BEFORE + ('login',)
NAME = 'ck_account_event_action'


def _set_actions(values) -> None:
    condition = f"action IN ({', '.join(repr(v) for v in values)})"
    with op.batch_alter_table('account_event', recreate='auto') as batch_op:
        batch_op.drop_constraint(NAME, type_='check')
        batch_op.create_check_constraint(NAME, condition)


def upgrade() -> None:
    _set_actions(AFTER)


def downgrade() -> None:
    outside = op.get_bind().execute(
        sa.text(f"SELECT count(*) FROM account_event WHERE action NOT IN ({', '.join(repr(v) for v in BEFORE)})")
    ).scalar()
    if outside:
        raise RuntimeError(
            f"cannot narrow account_event.action again: {outside} event(s) are logins (or another action this "
            "revision allows). Delete them first (DELETE FROM account_event WHERE action = 'login'), or stay at "
            "this revision."
        )
    _set_actions(BEFORE)
