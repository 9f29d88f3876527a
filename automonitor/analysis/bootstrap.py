"""Per-run pair statistics: pair-clustered bootstrap intervals of MR and FAR (:func:`bootstrap_runs`,
vectorised over runs) and per-pair outcome classes (:func:`pair_classes`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from automonitor.analysis import metrics as mt
from automonitor.analysis.memo import recall_many
from automonitor.analysis.encoding import ABSENT, FN, FP, PEND, TN, TP, UNS, IntArray
from automonitor.analysis.report_schema import RunBootstrap


def bootstrap_runs(
    row_run: IntArray,
    row_pair: IntArray,
    row_cell: IntArray,
    n_runs: int,
    n_pairs: int,
    n_boot: int,
    seed: int,
) -> list[RunBootstrap]:
    """Pair-clustered percentile intervals of MR and FAR per run (vectorised over runs).

    Args:
        row_run, row_pair, row_cell: per labelled prediction row, its run index, pair index and cell code.
        n_runs, n_pairs: sizes of the run and pair axes.
    Returns:
        Per run ``{"mr_ci", "far_ci", "pairs"}`` (intervals ``None`` for a run that judged no pair).
        Runs that judged the same pairs share one weight matrix (same seed), so a run's intervals do not
        depend on the other runs.
    """
    scored = row_cell <= TN
    counts = (
        np.bincount(
            (row_run[scored] * n_pairs + row_pair[scored]) * 4 + row_cell[scored], minlength=n_runs * n_pairs * 4
        )
        .reshape(n_runs, n_pairs, 4)
        .astype(float)
    )
    present = np.zeros((n_runs, n_pairs), dtype=bool)
    judged = row_cell != PEND
    present[row_run[judged], row_pair[judged]] = True
    out = [RunBootstrap(mr_ci=None, far_ci=None, pairs=0) for _ in range(n_runs)]
    groups: dict[bytes, list[int]] = {}
    for r in range(n_runs):
        groups.setdefault(np.packbits(present[r]).tobytes(), []).append(r)
    for members in groups.values():
        cols = np.flatnonzero(present[members[0]])
        if cols.size == 0:
            continue
        run_counts = counts[members][:, cols, :]  # (runs of the group, pairs of the group, 4)

        def compute(todo: list[int], run_counts: npt.NDArray[np.float64] = run_counts) -> list[RunBootstrap]:
            return group_intervals(run_counts[todo], mt.shared_bootstrap_weights(run_counts.shape[1], n_boot, seed))

        # a run's intervals are its per-pair counts' (the weights: the pairs' number, n_boot, seed), not the group's
        inputs = [[repr((n_boot, seed)), f"{c.dtype.str}{c.shape}".encode() + c.tobytes()] for c in run_counts]
        for r, value in zip(members, recall_many("bootstrap", inputs, compute)):
            out[r] = value
    return out


def group_intervals(run_counts: npt.NDArray[np.float64], weights: mt.Weights) -> list[RunBootstrap]:
    """The intervals of runs that judged the same pairs: ``run_counts`` (runs, pairs, 4) of per-pair TP, FN, FP, TN,
    ``weights`` (n_boot, pairs) of :func:`~automonitor.analysis.metrics.cluster_bootstrap_weights`. Each run's
    intervals depend on its own counts alone (the resampled sums are whole numbers, exact in float32 whatever
    the runs beside it), so the runs may be computed in any grouping."""
    mr, far = mt.bootstrap_rates(run_counts.transpose(1, 0, 2), weights)
    mr_lo, mr_hi = mt.percentile_ci(mr)
    far_lo, far_hi = mt.percentile_ci(far)
    return [
        RunBootstrap(mr_ci=mt._ci(mr_lo[k], mr_hi[k]), far_ci=mt._ci(far_lo[k], far_hi[k]), pairs=int(weights.shape[1]))
        for k in range(run_counts.shape[0])
    ]


def _side_flags(cells: IntArray, pair_side: IntArray, flagged: int, passed: int) -> IntArray:
    """Per run and pair, the state of one side (sample index ``pair_side``, -1 = none): 1 when its cell
    is ``flagged``, 0 when ``passed``, -1 unscored, -2 pending or absent. Shape (n_runs, n_pairs)."""
    side_cells = np.where(pair_side[None, :] >= 0, cells[:, np.maximum(pair_side, 0)], ABSENT)
    flags = np.full(side_cells.shape, -2, dtype=np.int64)
    flags[side_cells == flagged] = 1
    flags[side_cells == passed] = 0
    flags[side_cells == UNS] = -1
    return flags


def _pair_sides(sample_pair: IntArray, sample_label: IntArray, n_pairs: int) -> tuple[IntArray, IntArray]:
    """``(misbehavior sample, benign sample)`` index per pair (-1 when the pair lacks that side)."""
    pos = np.full(n_pairs, -1, dtype=np.int64)
    neg = np.full(n_pairs, -1, dtype=np.int64)
    samples = np.arange(sample_pair.size)
    for label, side in ((0, pos), (1, neg)):
        is_side = (sample_label == label) & (sample_pair >= 0)
        side[sample_pair[is_side]] = samples[is_side]
    return pos, neg


def pair_classes(cells: IntArray, sample_pair: IntArray, sample_label: IntArray, n_pairs: int) -> list[dict[str, int]]:
    """Per run, :func:`automonitor.analysis.metrics.pair_class_counts` over the pairs it judged a side of."""
    pos, neg = _pair_sides(sample_pair, sample_label, n_pairs)
    pos_flags = _side_flags(cells, pos, TP, FN)
    neg_flags = _side_flags(cells, neg, FP, TN)
    seen_pos = np.where(pos[None, :] >= 0, cells[:, np.maximum(pos, 0)], ABSENT) != ABSENT
    seen_neg = np.where(neg[None, :] >= 0, cells[:, np.maximum(neg, 0)], ABSENT) != ABSENT
    touched = seen_pos | seen_neg
    return [mt.pair_class_counts(pos_flags[r][touched[r]], neg_flags[r][touched[r]]) for r in range(cells.shape[0])]
