"""run kind ladder: the database's run-kind check takes the new value

The build writes each detector of the detector ladder (:mod:`automonitor.data.build.ladder`) as a run of its
own, of kind ``ladder`` (:mod:`automonitor.data.build.ladder_runs`), so that the analyses read it like any
run and the lists leave it out by default. The check ``ck_run_kind`` of :mod:`r8_vocabulary_checks` is
replaced by one that also takes it (a CHECK constraint on PostgreSQL, the two triggers on SQLite). The
downgrade restores the old list and fails, changing nothing, while a run of kind ``ladder`` is stored.

Create Date: 2026-12-05 10:00:00
"""

from store.migrations.versions import r8_vocabulary_checks as r8
from store.migrations.versions import r9_constructed_benign as r9

revision = "r10_ladder_run_kind"
down_revision = "r9_constructed_benign"

#: the vocabulary rules as of this revision (r9's, with the run-kind list grown); the upgrade swaps the check for the
#: widened one, the downgrade swaps it back
RULES, upgrade, downgrade = r8.widened(r9.RULES, "ck_run_kind", "ladder")
RANGES = r9.RANGES
