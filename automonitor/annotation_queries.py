"""Compatibility path: the permission-checked annotation reads live in
:mod:`automonitor.annotation.queries` (re-exported here so ``from automonitor import annotation_queries``
keeps working)."""

from __future__ import annotations

from automonitor.annotation.queries import (  # noqa: F401  (re-exported for callers)
    adjudication_rows,
    annotator_loads,
    as_utc_iso,
    assignment_rows,
    candidate_samples,
    label_rows,
    latest_adjudications,
    upsert_label,
)
