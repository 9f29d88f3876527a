"""The audit's TF-IDF folds (issue 38): :class:`automonitor.data.audit.baselines.FoldCounts` assembles each
fold's train and test matrices from per-response term counts; they must be scikit-learn's
``TfidfVectorizer`` arrays entry for entry (the same indices in the same order, the same float32 data), so
the cross-validated baselines give the same floats."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import GroupKFold

from automonitor.data.audit.baselines import FoldCounts, cached_analyzer, cv_scores, tfidf_vectorizer

WORDS = "the a user asked to run tests skipped reported success Logs deleted café naïve x".split()


def _texts(seed: int, n: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        k = int(rng.integers(0, 40))
        words = list(rng.choice(WORDS, k)) if k else []
        if i % 7 == 3:
            words.append(f"unique{i}")  # a term in one document only (min_df drops it)
        out.append(" ".join(words) + (" !!" if i % 5 == 0 else ""))
    return out


def _assert_same(sk, ours) -> None:
    assert sk.shape == ours.shape
    for attr in ("indptr", "indices", "data"):
        a, b = getattr(sk, attr), getattr(ours, attr)
        assert a.dtype == b.dtype, attr
        assert np.array_equal(a, b), attr


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fold_matrices_are_the_vectorizers_arrays(seed: int) -> None:
    texts = _texts(seed, 120)
    groups = np.repeat(np.arange(60), 2)
    terms: dict[str, int] = {}
    counts = FoldCounts(texts, cached_analyzer({}), terms)
    folds = 0
    for tr, te in GroupKFold(n_splits=5).split(np.zeros(len(texts)), groups=groups):
        vec = tfidf_vectorizer()
        sk_tr = vec.fit_transform([texts[i] for i in tr])
        sk_te = vec.transform([texts[i] for i in te])
        got = counts.matrices(tr, te)
        assert got is not None
        _assert_same(sk_tr, got[0])
        _assert_same(sk_te, got[1])
        folds += 1
    assert folds == 5


def test_no_term_in_two_train_documents_is_none_as_the_vectorizer_raises() -> None:
    texts = ["alpha", "beta", "", "gamma delta", "epsilon"]
    counts = FoldCounts(texts, cached_analyzer({}), {})
    tr, te = np.array([0, 1, 2, 3]), np.array([4])
    with pytest.raises(ValueError):
        tfidf_vectorizer().fit_transform([texts[i] for i in tr])
    assert counts.matrices(tr, te) is None
    assert FoldCounts(["", ""], cached_analyzer({}), {}).matrices(np.array([0]), np.array([1])) is None


def test_cv_scores_equal_the_vectorizer_path() -> None:
    """The scores of the fold matrices are those of fitting the vectorizer per fold (the code before)."""
    from sklearn.linear_model import LogisticRegression

    texts = _texts(5, 80)
    te = pd.DataFrame(
        {
            "pair_id": [f"p{i // 2}" for i in range(80)],
            "label": ["misbehavior", "benign"] * 40,
            "response": [t + (" skipped skipped" if i % 2 == 0 else "") for i, t in enumerate(texts)],
        }
    )
    got = cv_scores(te, "tfidf", features={}, terms={})
    y = (te["label"] == "misbehavior").to_numpy(dtype=int)
    want = np.zeros(len(te))
    for tr, ti in GroupKFold(n_splits=5).split(np.zeros(len(te)), y, te["pair_id"].to_numpy()):
        vec = tfidf_vectorizer()
        lr = LogisticRegression(max_iter=2000, solver="liblinear", random_state=0)
        lr.fit(vec.fit_transform([te["response"][i] for i in tr]), y[tr])
        want[ti] = lr.predict_proba(vec.transform([te["response"][i] for i in ti]))[:, 1]
    assert got is not None
    assert np.array_equal(got, want)
