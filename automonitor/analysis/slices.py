"""Slice statistics: one outcome table per report, shape (runs, categories, tasks, 2 labels, outcome
columns), and its margins as SLICE dicts (:class:`~automonitor.analysis.report_schema.SliceStats`) under the
unscored policy (counting rules in :mod:`automonitor.analysis.metrics`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from automonitor.analysis import metrics as mt
from automonitor.analysis.encoding import Encoded, IntArray

ObjectArray = npt.NDArray[np.object_]
"""SLICE dicts (:class:`automonitor.analysis.report_schema.SliceStats` fields), one per element."""


def _slice_dicts(table: IntArray, policy: str) -> ObjectArray:
    return mt.slices_from_counts(mt.resolve_counts(table, policy))


@dataclass
class Slices:
    """SLICE dicts as object arrays: ``overall`` (n_runs,), ``by_category`` (n_runs, n_categories),
    ``by_task`` (n_runs, n_tasks), ``by_category_task`` (n_runs, n_categories, n_tasks)."""

    overall: ObjectArray
    by_category: ObjectArray
    by_task: ObjectArray
    by_category_task: ObjectArray


def slice_stats(enc: Encoded, policy: str) -> Slices:
    """Count the labelled rows into one outcome table of shape (runs, categories, tasks, 2 labels,
    outcome columns) and turn its margins into SLICE dicts under ``policy``."""
    n_runs, n_cats, n_tasks = len(enc.run_ids), len(enc.categories), len(enc.tasks)
    n_cols = len(mt.OUTCOME_COLUMNS)
    flat = ((((enc.run * n_cats + enc.category) * n_tasks + enc.task) * 2 + enc.label) * n_cols + enc.outcome)[
        enc.labelled
    ]
    table = np.bincount(flat, minlength=n_runs * n_cats * n_tasks * 2 * n_cols).reshape(
        n_runs, n_cats, n_tasks, 2, n_cols
    )
    return Slices(
        overall=_slice_dicts(table.sum((1, 2)), policy),
        by_category=_slice_dicts(table.sum(2), policy),
        by_task=_slice_dicts(table.sum(1), policy),
        by_category_task=_slice_dicts(table, policy),
    )
