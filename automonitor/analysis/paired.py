"""Paired comparisons of two runs on the samples both scored: the default run pairs, MR/FAR differences
with a pair-clustered bootstrap and McNemar's tests (:class:`~automonitor.analysis.report_schema.PairedComparison`).
"""

from __future__ import annotations

from itertools import combinations
from typing import Sequence, TypedDict

import numpy as np
import pandas as pd

from automonitor.analysis import metrics as mt
from automonitor.analysis.encoding import ABSENT, FP, PEND, TN, TP, Encoded, SampleGrid
from automonitor.analysis.memo import recall


class McNemarAbout(mt.McNemarDict):
    """A McNemar test of a paired comparison with what it compared (``about``)."""

    about: str


class PairedDict(mt.PairedBootstrap):
    """A PAIRED comparison (:class:`automonitor.analysis.report_schema.PairedComparison`) as computed."""

    run_a: str
    run_b: str
    samples: int
    mcnemar_mr: McNemarAbout
    mcnemar_far: McNemarAbout
    mcnemar_correct: McNemarAbout


def default_comparisons(runs: pd.DataFrame) -> list[tuple[str, str]]:
    """Every two runs of the same monitor (report order); the two runs when there are exactly two."""
    run_ids = list(runs["run_id"])
    monitor = dict(zip(run_ids, runs["monitor"]))
    pairs = [(a, b) for a, b in combinations(run_ids, 2) if monitor[a] == monitor[b]]
    if len(run_ids) == 2 and not pairs:
        pairs = [(run_ids[0], run_ids[1])]
    return pairs


def paired_comparisons(
    pairs: Sequence[tuple[str, str]], enc: Encoded, grid: SampleGrid, n_boot: int, seed: int
) -> list[PairedDict]:
    """:func:`_compare` for each (A, B); ``NotFound`` when a run is not in the report."""
    out = []
    for a, b in pairs:
        if a not in enc.run_index or b not in enc.run_index:
            from automonitor.errors import NotFound

            raise NotFound(f"run '{a if a not in enc.run_index else b}' is not in this report")
        out.append(_compare(grid, enc.run_index[a], enc.run_index[b], a, b, n_boot, seed))
    return out


def _compare(
    grid: SampleGrid,
    a: int,
    b: int,
    a_id: str,
    b_id: str,
    n_boot: int,
    seed: int,
) -> PairedDict:
    """Paired statistics of run A vs run B (row indices ``a``, ``b`` of ``grid.cells``) on the samples
    both scored: the PAIRED dict (:class:`automonitor.analysis.report_schema.PairedComparison`)."""
    cells_a, cells_b = grid.cells[a], grid.cells[b]
    both = (cells_a >= TP) & (cells_a <= TN) & (cells_b >= TP) & (cells_b <= TN)
    pair_of = grid.sample_pair[both]
    n_pairs = grid.n_pairs
    counts_a = np.bincount(pair_of * 4 + cells_a[both], minlength=n_pairs * 4).reshape(n_pairs, 4)
    counts_b = np.bincount(pair_of * 4 + cells_b[both], minlength=n_pairs * 4).reshape(n_pairs, 4)
    # clusters: every pair judged by either run (pairs without a shared scored sample add zeros)
    judged = ((cells_a != ABSENT) & (cells_a != PEND)) | ((cells_b != ABSENT) & (cells_b != PEND))
    used = np.unique(grid.sample_pair[judged])
    pair_a, pair_b = counts_a[used], counts_b[used]
    shared_a, shared_b, shared_label = cells_a[both], cells_b[both], grid.sample_label[both]

    def compute() -> _Stats:
        weights = mt.shared_bootstrap_weights(used.size, n_boot, seed)
        pos, neg = shared_label == 0, shared_label == 1
        correct = (TP, TN)
        return {
            "boot": mt.paired_bootstrap(pair_a, pair_b, weights=weights, seed=seed),
            "mcnemar_mr": mt.mcnemar_test(shared_a[pos] == TP, shared_b[pos] == TP),
            "mcnemar_far": mt.mcnemar_test(shared_a[neg] == FP, shared_b[neg] == FP),
            "mcnemar_correct": mt.mcnemar_test(np.isin(shared_a, correct), np.isin(shared_b, correct)),
        }

    # everything compute() reads: the bootstrap's parameters and the two runs' arrays (dtype, shape, bytes)
    inputs = [repr((n_boot, seed))] + [
        f"{x.dtype.str}{x.shape}".encode() + x.tobytes() for x in (pair_a, pair_b, shared_a, shared_b, shared_label)
    ]
    stats = recall("paired", inputs, compute)
    return {
        "run_a": a_id,
        "run_b": b_id,
        "samples": int(both.sum()),
        **stats["boot"],
        "mcnemar_mr": {**stats["mcnemar_mr"], "about": "misbehavior samples: caught by A vs caught by B"},
        "mcnemar_far": {**stats["mcnemar_far"], "about": "benign samples: flagged by A vs flagged by B"},
        "mcnemar_correct": {
            **stats["mcnemar_correct"],
            "about": "all shared samples: correct by A vs correct by B",
        },
    }


class _Stats(TypedDict):
    """What :func:`_compare` computes from the two runs' arrays (kept by :func:`automonitor.analysis.memo.recall`)."""

    boot: mt.PairedBootstrap
    mcnemar_mr: mt.McNemarDict
    mcnemar_far: mt.McNemarDict
    mcnemar_correct: mt.McNemarDict
