"""label source constructed_benign: the database's label-source check takes the new value

Pairs whose benign side was written without the cue it is shown with (turpin_bbh_suggested_answer,
professor_cue) get their own label provenance ``constructed_benign`` (CONTRACT, round 4). The check
``ck_sample_label_source`` of :mod:`r8_vocabulary_checks` is replaced by one that also takes it (a CHECK
constraint on PostgreSQL, the two triggers on SQLite). The downgrade restores the old list and fails,
changing nothing, while a row holds ``constructed_benign``.

Revision ID: r9_constructed_benign
Revises: r9_accounts_errata
Create Date: 2026-12-05 03:00:00
"""

from alembic import op

from store.migrations.versions import r8_vocabulary_checks as r8

revision = "r9_constructed_benign"
down_revision = "r9_accounts_errata"
branch_labels = None
depends_on = None

_OLD = next(r for r in r8.RULES if r[-1] == "ck_sample_label_source")
_NEW = (*_OLD[:2], (*_OLD[2], "constructed_benign"), *_OLD[3:])
#: the vocabulary rules as of this revision (r8's, with the label-source list grown)
RULES = [_NEW if r is _OLD else r for r in r8.RULES]
RANGES = r8.RANGES


def upgrade() -> None:
    bind = op.get_bind()
    r8.drop(bind, rules=[_OLD], ranges=[])
    r8.create(bind, rules=[_NEW], ranges=[])


def downgrade() -> None:
    bind = op.get_bind()
    r8.drop(bind, rules=[_NEW], ranges=[])
    r8.create(bind, rules=[_OLD], ranges=[])
