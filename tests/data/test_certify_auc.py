"""The certificate's AUROC (:func:`automonitor.ranks.auc_by_ranks`, the rank form used inside the
bootstrap) equals ``sklearn.metrics.roc_auc_score`` on generated labels and scores: ties, constant scores,
NaN scores left out, one class -> ``None``."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from automonitor.data.audit.certify import auroc_interval
from automonitor.ranks import auc_by_ranks as _auc

scores = st.one_of(st.sampled_from([0.0, 0.5, 1.0, float("nan")]), st.floats(-1e6, 1e6, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), scores), max_size=40))
def test_rank_auroc_equals_sklearn(rows):
    y = np.array([r[0] for r in rows], dtype=int)
    s = np.array([r[1] for r in rows], dtype=float)
    got = _auc(y, s)
    ok = ~np.isnan(s)
    if len(set(y[ok].tolist())) < 2:
        assert got is None
    else:
        assert got is not None and abs(got - roc_auc_score(y[ok], s[ok])) < 1e-12


def test_the_interval_brackets_the_estimate_and_is_seeded():
    rng = np.random.default_rng(3)
    y = np.repeat([1, 0], 40)
    s = np.concatenate([rng.normal(1, 1, 40), rng.normal(0, 1, 40)])
    groups = np.tile(np.arange(40), 2)  # pairs share a request
    a, lo, hi = auroc_interval(groups, y, s, seed=0)
    assert (
        abs(a - roc_auc_score(y, s)) < 1e-12 and lo is not None and hi is not None and lo <= a <= hi and hi - lo > 0.05
    )
    assert auroc_interval(groups, y, s, seed=0) == (a, lo, hi) != auroc_interval(groups, y, s, seed=1)


def _loop_interval(groups, y, s, seed=0, n_boot=200):
    """The resampling loop the vectorised interval replaced: concatenate the drawn clusters' rows, rank."""
    import random

    a = _auc(y, s)
    if a is None:
        return None, None, None
    uniq = sorted(set(groups.tolist()))
    where = {g: np.flatnonzero(groups == g) for g in uniq}
    rng = random.Random(f"automonitor:{seed}:certify")
    boots = []
    for _ in range(n_boot):
        idx = np.concatenate([where[uniq[rng.randrange(len(uniq))]] for _ in uniq])
        b = _auc(y[idx], s[idx])
        if b is not None:
            boots.append(b)
    if not boots:
        return a, None, None
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return a, float(lo), float(hi)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 1), scores), min_size=1, max_size=30),
    st.integers(0, 3),
)
def test_the_vectorised_bootstrap_equals_the_resampling_loop(rows, seed):
    groups = np.array([f"req{r[0]}" for r in rows])
    y = np.array([r[1] for r in rows], dtype=int)
    s = np.array([r[2] for r in rows], dtype=float)
    got, want = auroc_interval(groups, y, s, seed, 50), _loop_interval(groups, y, s, seed, 50)
    assert (got[0] is None) == (want[0] is None)
    for g, w in zip(got, want):
        assert (g is None and w is None) or abs(g - w) < 1e-9
