"""label source constructed_benign: the database's label-source check takes the new value

Pairs whose benign side was written without the cue it is shown with (turpin_bbh_suggested_answer,
professor_cue) get their own label provenance ``constructed_benign`` (CONTRACT, round 4). The check
``ck_sample_label_source`` of :mod:`r8_vocabulary_checks` is replaced by one that also takes it (a CHECK
constraint on PostgreSQL, the two triggers on SQLite). The downgrade restores the old list and fails,
changing nothing, while a row holds ``constructed_benign``.

Create Date: 2026-12-05 03:00:00
"""

from store.migrations.versions import r8_vocabulary_checks as r8

revision = "r9_constructed_benign"
down_revision = "r9_accounts_errata"

#: the vocabulary rules as of this revision (r8's, with the label-source list grown); the upgrade swaps the check for the
#: widened one, the downgrade swaps it back
RULES, upgrade, downgrade = r8.widened(r8.RULES, "ck_sample_label_source", "constructed_benign")
RANGES = r8.RANGES
