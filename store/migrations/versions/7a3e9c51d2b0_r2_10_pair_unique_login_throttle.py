"""a pair holds at most one sample per label (unique (pair_id, label) on sample); login throttle

Create Date: 2026-11-30 21:40:00

The pair invariant of the contract (two samples a pair, one ``misbehavior`` and one ``benign``) is enforced
by the database, so that two importers writing the same ``pair_id`` at once cannot leave a pair with four
samples. Copies of a pair (candidates, generated pairs, controls) use their own ``pair_id``.
Table ``login_throttle``: failed-login counters and temporary locks per account name and per client.
"""
from alembic import op
import sqlalchemy as sa

from store.migrations.ddl import integer, string, utc


revision = '7a3e9c51d2b0'
down_revision = '3a7c91e0d2f4'


def upgrade() -> None:
    bind = op.get_bind()
    dup = bind.execute(sa.text(
        "SELECT pair_id, label, COUNT(*) FROM sample GROUP BY pair_id, label HAVING COUNT(*) > 1")).first()
    if dup is not None:
        raise RuntimeError(
            f"cannot add the pair constraint: pair '{dup[0]}' has {dup[2]} '{dup[1]}' samples; give the "
            f"extra samples their own pair_id (e.g. 'cand:<pair_id>') and upgrade again")
    with op.batch_alter_table('sample', schema=None) as batch_op:
        batch_op.create_unique_constraint('uq_sample_pair_label', ['pair_id', 'label'])
    op.create_table('login_throttle',
    string('key', 200),
    integer('failures'),
    utc('last_failure_at', nullable=True),
    utc('locked_until', nullable=True),
    sa.PrimaryKeyConstraint('key')
    )


def downgrade() -> None:
    op.drop_table('login_throttle')
    with op.batch_alter_table('sample', schema=None) as batch_op:
        batch_op.drop_constraint('uq_sample_pair_label', type_='unique')
