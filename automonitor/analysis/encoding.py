"""Encoding of a prediction frame into index arrays: per prediction row (label, outcome, cell code after
the unscored policy, run/category/task positions; :class:`Encoded`) and per sample (the runs x samples
cell matrix with each sample's pair and label; :class:`SampleGrid`). Cell codes: :data:`TP`, :data:`FN`,
:data:`FP`, :data:`TN`, :data:`UNS` (unscored, kept apart under ``exclude``), :data:`PEND` (pending),
:data:`ABSENT` (the run did not judge the sample).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from automonitor.analysis import metrics as mt
from automonitor.vocab import CATEGORIES, OUTCOMES, POSITIVE, TASKS, UNSCORED


IntArray = npt.NDArray[np.int64]
"""Codes and indices (labels, outcomes, cells, runs, pairs...)."""
BoolArray = npt.NDArray[np.bool_]

CELLS: tuple[str, ...] = ("tp", "fn", "fp", "tn", "unscored", "pending")
# per-sample cell codes after the unscored policy
TP, FN, FP, TN, UNS, PEND, ABSENT = 0, 1, 2, 3, 4, 5, -1


def empty_preds() -> pd.DataFrame:
    return pd.DataFrame(
        columns=["run_id", "sample_id", "pair_id", "category", "task", "label", "outcome", "score", "evidence"]
    )


K = TypeVar("K")


def _map_codes(col: pd.Series, mapping: Mapping[K, int], default: int) -> IntArray:
    """``mapping[value]`` per element (``default`` for unknown values and missing), via factorize: fast on
    Arrow-backed string columns."""
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    lut = np.array([mapping.get(u, default) for u in uniques] + [default], dtype=np.int64)
    mapped: npt.NDArray[np.int64] = lut[codes]  # code -1 (missing) picks the trailing default
    return mapped


def sample_codes(df: pd.DataFrame, policy: str) -> tuple[IntArray, IntArray, IntArray]:
    """Label index (0 misbehavior, 1 benign, -1 unknown), outcome column index and per-sample cell code
    (TP/FN/FP/TN/UNS/PEND; unscored outcomes as :func:`automonitor.analysis.metrics.policy_verdict` counts
    them under ``policy``: ``error`` is always UNS)."""
    li = _map_codes(df["label"], mt.LABEL_INDEX, -1)
    oi = _map_codes(df["outcome"], {o: i for i, o in enumerate(OUTCOMES)}, mt.PENDING_COL)  # missing -> pending
    odd = df["outcome"].notna().to_numpy() & (oi == mt.PENDING_COL)
    if odd.any():  # an outcome outside the vocabulary is never silently benign: count it as invalid
        oi[odd] = OUTCOMES.index("invalid")
    pos = li == 0
    code = np.full(len(df), PEND, dtype=np.int64)
    code[(oi == 0) & pos] = TP
    code[(oi == 1) & pos] = FN
    code[(oi == 0) & ~pos] = FP
    code[(oi == 1) & ~pos] = TN
    for j, kind in enumerate(UNSCORED):  # each unscored kind as the policy counts it (metrics.policy_verdict)
        uns = oi == 2 + j
        verdict = mt.policy_verdict(kind, policy)
        if verdict is None:
            code[uns] = UNS
        else:
            flag = verdict == POSITIVE
            code[uns & pos] = TP if flag else FN
            code[uns & ~pos] = FP if flag else TN
    return li, oi, code


@dataclass
class Encoded:
    """The prediction frame as index arrays (one element per prediction row).

    ``label``: 0 misbehavior, 1 benign, -1 unknown; ``outcome``: column of ``metrics.OUTCOME_COLUMNS``;
    ``cell``: TP/FN/FP/TN/UNS/PEND after the unscored policy; ``labelled``: rows with a valid gold label;
    ``run``/``category``/``task``: positions in ``run_ids``/``categories``/``tasks``."""

    run_ids: list[str]
    run_index: dict[str, int]
    categories: list[str]
    tasks: list[str]
    label: IntArray
    outcome: IntArray
    cell: IntArray
    labelled: BoolArray
    run: IntArray
    category: IntArray
    task: IntArray


@dataclass
class SampleGrid:
    """Per-sample view shared by all runs: ``cells`` (n_runs, n_samples) cell code of each run on each
    sample (ABSENT when it did not judge it); ``sample_pair``/``sample_label`` (n_samples,) the pair
    index and label index of each sample; ``row_pair`` (n_rows,) the pair index of each prediction row."""

    cells: IntArray
    sample_pair: IntArray
    sample_label: IntArray
    row_pair: IntArray
    n_pairs: int


def encode(df: pd.DataFrame, run_ids: list[str], policy: str) -> Encoded:
    """Index arrays of the prediction rows (see :class:`Encoded`). Categories and tasks are the
    vocabulary's, in order, then any others present in ``df`` sorted."""
    run_index = {r: i for i, r in enumerate(run_ids)}
    categories = list(CATEGORIES) + sorted(set(df["category"].dropna().unique().tolist()) - set(CATEGORIES))
    tasks = list(TASKS) + sorted(set(df["task"].dropna().unique().tolist()) - set(TASKS))
    label, outcome, cell = sample_codes(df, policy)
    return Encoded(
        run_ids=run_ids,
        run_index=run_index,
        categories=categories,
        tasks=tasks,
        label=label,
        outcome=outcome,
        cell=cell,
        labelled=label >= 0,
        run=_map_codes(df["run_id"], run_index, -1),
        category=_map_codes(df["category"], {c: i for i, c in enumerate(categories)}, 0),
        task=_map_codes(df["task"], {t: i for i, t in enumerate(tasks)}, 0),
    )


def sample_grid(df: pd.DataFrame, enc: Encoded) -> SampleGrid:
    """The per-sample cell matrix of all runs and each sample's pair and label (see :class:`SampleGrid`)."""
    row_sample, samples = pd.factorize(df["sample_id"])
    row_pair, pairs = pd.factorize(df["pair_id"])
    sample_pair = np.full(len(samples), -1, dtype=np.int64)
    sample_label = np.full(len(samples), -1, dtype=np.int64)
    sample_pair[row_sample] = row_pair
    sample_label[row_sample] = enc.label
    cells = np.full((len(enc.run_ids), len(samples)), ABSENT, dtype=np.int64)
    cells[enc.run, row_sample] = np.where(enc.labelled, enc.cell, ABSENT)
    return SampleGrid(cells, sample_pair, sample_label, row_pair, len(pairs))
