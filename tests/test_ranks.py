"""``automonitor.ranks`` gives scikit-learn's and SciPy's numbers without them: ``roc_curve`` equals
``sklearn.metrics.roc_curve`` element for element (both ``drop_intermediate`` settings), ``trapezoid_auc``
equals ``roc_auc_score`` bit for bit, ``auc_by_ranks`` to within rounding, ``average_ranks`` equals
``scipy.stats.rankdata``, on generated labels and scores with many ties."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

from automonitor.ranks import auc_by_ranks, average_ranks, roc_curve, trapezoid_auc

# scores from a small grid (ties, as a judge's rounded probabilities give) or any float in [0, 1]
score = st.one_of(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.9, 1.0]), st.floats(0, 1, allow_nan=False))
rows = st.lists(st.tuples(st.integers(0, 1), score), min_size=2, max_size=60).filter(
    lambda rs: len({r[0] for r in rs}) == 2
)


@settings(max_examples=300, deadline=None)
@given(rows, st.booleans())
def test_roc_curve_equals_sklearn(rs, drop):
    y = np.array([r[0] for r in rs])
    s = np.array([r[1] for r in rs])
    got = roc_curve(y, s, drop_intermediate=drop)
    want = sk_roc_curve(y, s, drop_intermediate=drop)
    for g, w in zip(got, want):
        assert g.tolist() == w.tolist()


@settings(max_examples=300, deadline=None)
@given(rows)
def test_auc_equals_roc_auc_score(rs):
    y = np.array([r[0] for r in rs])
    s = np.array([r[1] for r in rs])
    want = roc_auc_score(y, s)
    assert trapezoid_auc(y, s) == want  # the same float
    got = auc_by_ranks(y, s)
    assert got is not None and abs(got - want) < 1e-12


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(-1e6, 1e6, allow_nan=False)), max_size=50))
def test_average_ranks_equal_scipy(xs):
    s = np.array(xs, dtype=float)
    assert average_ranks(s).tolist() == rankdata(s).tolist()


def test_known_values():
    y = np.array([0, 0, 1, 1])
    s = np.array([0.1, 0.4, 0.35, 0.8])
    fpr, tpr, thr = roc_curve(y, s)
    assert thr.tolist() == [np.inf, 0.8, 0.4, 0.35, 0.1]
    assert fpr.tolist() == [0.0, 0.0, 0.5, 0.5, 1.0] and tpr.tolist() == [0.0, 0.5, 0.5, 1.0, 1.0]
    assert trapezoid_auc(y, s) == 0.75 and auc_by_ranks(y, s) == 0.75
    assert auc_by_ranks(np.array([1, 1]), np.array([0.2, 0.3])) is None
