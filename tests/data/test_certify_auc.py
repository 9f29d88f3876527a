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
