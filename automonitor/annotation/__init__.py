"""Double-blind annotation of candidate pairs: assignment, labeling, batch submission, adjudication,
and import/export of annotations and adjudications with provenance.

Workflow (how a session runs: ``docs/how-to/annotation.md``): candidate items are ``sample`` rows with
``status = 'candidate'``, one side of a pair each, whose ``label`` is only the intended one, never shown;
:func:`assign` queues them for annotators, who see only the request and the response (:func:`get_item`),
label them (:func:`save_label`) and lock a batch (:func:`submit_batch`); admins read agreement
(:mod:`automonitor.annotation.agreement`), adjudicate (:func:`adjudication_queue`, :func:`adjudicate`) and
move resolved pairs into the gold set (:func:`finalize_pairs`).

Authorisation is enforced here: every function takes the acting :class:`~automonitor.annotation.accounts.Account`
and checks its role and (for annotators) ownership; the store queries enforce it a second time.
Writes retry on SQLite ``database is locked`` / PostgreSQL serialization conflicts, and label writes are
single-statement upserts, so concurrent annotators neither lose labels nor create duplicates.

Layout (one module per job; every public name is re-exported here, so ``from automonitor import
annotation; annotation.assign(...)`` works): :mod:`._common` (constants, the retrying transaction,
validation helpers, :class:`Label`), :mod:`.assignment`, :mod:`.labeling`, :mod:`.overview` (admin
progress and label records), :mod:`.files` (import/export), :mod:`.adjudication`, :mod:`.finalize`,
:mod:`.flags`, and :mod:`.queries` (the permission-checked store reads).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from automonitor.lazy import lazy_exports

if TYPE_CHECKING:
    from automonitor.annotation._common import (
        GUIDELINE_VERSION,
        GUIDELINES,
        GUIDELINES_SUMMARY,
        SEVERITIES,
        DECISIONS,
        EVIDENCE_JOIN,
        evidence_offsets,
        Label,
    )
    from automonitor.annotation.assignment import AssignResult, assign, PAIR_RULE, plan_rounds, unassign
    from automonitor.annotation.labeling import my_queue, get_item, save_label, my_progress, submit_batch
    from automonitor.annotation.overview import annotation_progress, annotation_records
    from automonitor.annotation.files import (
        records_to_text,
        ANNOTATION_EXPORT_COLUMNS,
        export_annotations,
        import_annotations,
        ADJUDICATION_EXPORT_COLUMNS,
        export_adjudications,
    )
    from automonitor.annotation.adjudication import (
        QUEUE_REASONS,
        SPAN_F1_THRESHOLD,
        adjudicate,
        adjudication_queue,
        adjudication_records,
        proposed_spans,
    )
    from automonitor.annotation.finalize import finalize_pairs, rejected_pairs
    from automonitor.annotation.flags import flag_item, item_flags, resolve_flag

#: Where each public name lives (the imports above); imported on first use (PEP 562), so that a command that
#: needs one module (``users list``: the accounts) does not import the others' NumPy, krippendorff and the data
#: sources.
_HOME, __getattr__ = lazy_exports(__file__, __name__)

__all__ = list(_HOME)
