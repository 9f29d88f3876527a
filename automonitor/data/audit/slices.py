"""The audit's slices: one SLICE doc per (category, task, source) of the test set and one per category x
task cell, with label provenance, baseline AUROCs, the flag and the slice's leakage counts.

Every slice is scored, whatever its size. A slice under :data:`~automonitor.data.audit.certify.MIN_PAIRS`
(15) pairs is ``small``: its flag rests on a few pairs, so it also carries each baseline's 95% AUROC
interval (``intervals``, :func:`small_intervals`) to read it by.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from automonitor.data.audit.baselines import (
    FITTERS,
    score_trained,
    SliceScores,
    TrainedBaselines,
    positive_labels,
    score_within_test,
)
from automonitor.data.audit.certify import MIN_PAIRS
from automonitor.data.audit.leakage import Leakage
from automonitor.data.audit.params import ALL_SOURCES, FLAG_AUROC, MIN_TRAIN_PER_CLASS, SYCOPHANCY, is_control
from automonitor.data.audit.suggestion import score_suggestion
from automonitor.vocab import CATEGORIES, NEGATIVE, POSITIVE, TASKS


def _label_source_pairs(df: pd.DataFrame) -> dict[str, int]:
    ls = df["label_source"].fillna("user").astype(str)
    return {k: int(v) for k, v in df.assign(_ls=ls).groupby("_ls")["pair_id"].nunique().sort_index().items()}


def audit_slices(test: pd.DataFrame, baselines: TrainedBaselines, leakage: Leakage) -> list[dict[str, Any]]:
    """The SLICE docs: one per (category, task, source) present in test, then one per category x task
    cell (source ``all``), in vocabulary order."""

    def order(cat: str, task: str) -> tuple[int, int]:
        return (CATEGORIES.index(cat) if cat in CATEGORIES else 99, TASKS.index(task) if task in TASKS else 99)

    slices: list[dict[str, Any]] = []
    keys = sorted(
        {(c, t, s) for c, t, s in zip(test["category"], test["task"], test["source"])},
        key=lambda k: (*order(k[0], k[1]), k[2]),
    )
    for cat, task, src in keys:
        te = test[(test["category"] == cat) & (test["task"] == task) & (test["source"] == src)]
        slices.append(_slice_doc("source", src, cat, task, te, baselines, leakage))
    for cat, task in sorted({(c, t) for c, t, _ in keys}, key=lambda k: order(*k)):
        te = test[(test["category"] == cat) & (test["task"] == task)]
        slices.append(_slice_doc("cell", ALL_SOURCES, cat, task, te, baselines, leakage))
    return slices


def _slice_doc(
    kind: str,
    source: str,
    cat: str,
    task: str,
    te: pd.DataFrame,
    trained: TrainedBaselines,
    leakage: Leakage,
) -> dict[str, Any]:
    """The SLICE doc of test rows ``te`` (see :func:`audit_frame`). A source slice trains on its own
    source when it has enough train data, else on its cell; with too little train data in the cell too,
    the baselines are cross-validated within the test slice (``baseline_method`` ``within_test_cv``:
    :data:`CV_FOLDS` folds grouped by pair). Flagged when any baseline has |AUROC - 0.5| >=
    ``FLAG_AUROC - 0.5`` (a reversed separator counts)."""
    tr, trained_on = trained.cell_train(cat, task), "cell"
    if kind == "source":
        src_tr = tr[tr["source"] == source]
        if trained.enough(src_tr):
            tr, trained_on = src_tr, "source"
    y, yt = positive_labels(te), positive_labels(tr)
    out = SliceScores(te, y)
    baselines, notes = out.baselines, out.notes
    method = "train"
    if trained.enough(tr):
        score_trained(trained.fitted(tr), out)
    else:
        trained_on, method = None, "within_test_cv"
        score_within_test(out, trained)
        for name in FITTERS:
            notes[name] = (
                f"too little train data ({int(yt.sum())} misbehavior, {int(len(yt) - yt.sum())} benign; need "
                f"{MIN_TRAIN_PER_CLASS} of each): {notes[name]}"
            )
    if cat == SYCOPHANCY:
        score_suggestion(out)
    margin = FLAG_AUROC - 0.5
    flagged_by = [k for k, v in baselines.items() if v is not None and abs(v - 0.5) >= margin - 1e-12]
    for k, v in baselines.items():
        if v is not None and v <= 1 - FLAG_AUROC:
            notes[k] = (
                f"AUROC {v:.2f}: a reversed separator (the feature ranks the benign side higher than the "
                f"training data would; still a shortcut: flagged){'; ' + notes[k] if k in notes else ''}"
            )
    pids = set(te["pair_id"].astype(str))
    ctrl = is_control(te["pair_id"]).to_numpy(dtype=bool)
    n_pairs = int(te.loc[~ctrl, "pair_id"].nunique())
    return {
        "source": source,
        "category": cat,
        "task": task,
        "kind": kind,
        "pairs": n_pairs,
        "controls": int(ctrl.sum()),
        "samples": int(len(te)),
        "label_source": _label_source_pairs(te[~ctrl]),
        "baselines": baselines,
        "pairwise": out.pairwise,
        "baseline_method": method,
        "notes": notes,
        "n_train": {POSITIVE: int(yt.sum()), NEGATIVE: int(len(yt) - yt.sum())},
        "trained_on": trained_on,
        "flagged": bool(flagged_by),
        "flagged_by": flagged_by,
        "small": n_pairs < MIN_PAIRS,
        "intervals": small_intervals(te, y, out.scores) if n_pairs < MIN_PAIRS else {},
        "near_duplicate_pairs": len(pids & leakage.duplicate_pairs),
        "shared_conversations": len(pids & leakage.shared_pairs),
        "tiny_diff_pairs": len(pids & leakage.tiny_pairs),
        "shared_family_pairs": len(pids & leakage.family_pairs),
        "errata_pairs": errata_pairs(te),
    }


def small_intervals(te: pd.DataFrame, y: np.ndarray, scores: dict[str, np.ndarray]) -> dict[str, list[float | None]]:
    """``{baseline: [low, high]}``: the 95% interval of each baseline's AUROC on a slice under
    :data:`MIN_PAIRS` pairs (:func:`automonitor.data.audit.certify.auroc_interval`: a bootstrap over
    requests, so pairs sharing a request count once; seed 0), where one AUROC rests on a few pairs and a
    flag is as likely chance as a shortcut. ``None`` bounds when the resamples lack a class."""
    from automonitor.data.audit.certify import auroc_interval

    groups = te["request"].astype(str).to_numpy()
    out: dict[str, list[float | None]] = {}
    for name, s in scores.items():
        a, lo, hi = auroc_interval(groups, y, np.asarray(s, dtype=float))
        if a is not None:
            out[name] = [None if lo is None else round(lo, 4), None if hi is None else round(hi, 4)]
    return out


def errata_pairs(te: pd.DataFrame) -> int:
    """Test pairs of ``te`` whose rows carry an erratum (``meta.erratum``: read wrong or doubtful, kept in
    the ``paper`` mirror marked)."""
    if "meta" not in te.columns or te.empty:
        return 0
    marked = te["meta"].map(lambda m: isinstance(m, dict) and bool(m.get("erratum")))
    return int(te.loc[marked.to_numpy(dtype=bool), "pair_id"].nunique())
