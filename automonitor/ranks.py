"""ROC curves and AUROC in plain NumPy, shared by the analysis (score runs) and the audit's certificate:
the same numbers as scikit-learn and SciPy (tests/test_ranks.py checks them on generated inputs) without
their import and per-call validation cost.

- :func:`roc_curve`: ``sklearn.metrics.roc_curve`` (same thresholds, same float arithmetic);
- :func:`trapezoid_auc`: ``sklearn.metrics.roc_auc_score`` bit for bit (the trapezoid under that curve);
- :func:`auc_by_ranks`: the Mann-Whitney form of the AUROC (equal to within rounding, cheapest per call;
  the certificate's bootstrap calls it ``n_boot`` times per slice);
- :func:`average_ranks`: ``scipy.stats.rankdata(method="average")``.

A base module: NumPy only, no imports from the rest of the package.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["auc_by_ranks", "average_ranks", "roc_curve", "trapezoid_auc"]


def average_ranks(s: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """1-based ranks of ``s`` with ties given their average rank (``scipy.stats.rankdata``'s default,
    computed the way SciPy computes it)."""
    a = np.asarray(s)
    order = np.argsort(a, kind="mergesort")
    ranked = a[order]
    first = np.r_[True, ranked[1:] != ranked[:-1]]
    dense = np.cumsum(first)
    count = np.r_[np.flatnonzero(first), len(ranked)]
    out = np.empty(len(a), dtype=np.float64)
    out[order] = 0.5 * (count[dense] + count[dense - 1] + 1)
    return out


def auc_by_ranks(y: npt.ArrayLike, s: npt.ArrayLike) -> float | None:
    """AUROC of scores ``s`` for 0/1 labels ``y`` (NaN scores left out), ``None`` with one class: the
    Mann-Whitney U of the positives over ``n1 * n0`` with average ranks for ties (Hanley & McNeil 1982),
    the value ``sklearn.metrics.roc_auc_score`` returns (to within rounding) at a fraction of its cost."""
    ya, sa = np.asarray(y), np.asarray(s, dtype=float)
    ok = ~np.isnan(sa)
    ya, sa = ya[ok], sa[ok]
    n1 = int(np.count_nonzero(ya))
    n0 = len(ya) - n1
    if n1 == 0 or n0 == 0:
        return None
    ranks = average_ranks(sa)
    return float((ranks[ya != 0].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def roc_curve(
    y: npt.ArrayLike, s: npt.ArrayLike, *, drop_intermediate: bool = True
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(fpr, tpr, thresholds)`` of scores ``s`` for 0/1 labels ``y`` (both classes present, no NaN),
    as ``sklearn.metrics.roc_curve(y, s, drop_intermediate=...)`` returns them: thresholds are the
    distinct scores, highest first, after a leading ``inf`` (flag nothing); a sample is flagged when its
    score is ``>=`` the threshold; ``drop_intermediate`` drops points collinear with their neighbours."""
    yb = np.asarray(y) == 1
    sa = np.asarray(s, dtype=np.float64)
    desc = np.argsort(sa, kind="mergesort")[::-1]
    sa, yb = sa[desc], yb[desc]
    distinct = np.where(np.diff(sa))[0]
    idx = np.r_[distinct, yb.size - 1]
    tps = np.cumsum(yb, dtype=np.float64)[idx]
    fps = 1 + idx - tps
    thr = sa[idx]
    if drop_intermediate and len(fps) > 2:
        keep = np.where(np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True])[0]
        fps, tps, thr = fps[keep], tps[keep], thr[keep]
    tps, fps = np.r_[0, tps], np.r_[0, fps]
    thr = np.r_[np.inf, thr]
    return fps / fps[-1], tps / tps[-1], thr


def trapezoid_auc(y: npt.ArrayLike, s: npt.ArrayLike) -> float:
    """``sklearn.metrics.roc_auc_score(y, s)`` for 0/1 labels with both classes present: the trapezoid
    area under :func:`roc_curve` (the same arithmetic, so the same float)."""
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=True)
    return float((np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0).sum())  # numpy.trapezoid's arithmetic
