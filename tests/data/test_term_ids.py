"""TermIds (automonitor.data.audit.tokens): a TF-IDF vectorizer over term numbers gives the plain vectorizer's
matrices, array for array (so the certificate's and the ladder's cross-validated probes keep their floats)."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GroupKFold

from automonitor.data.audit import certify as C
from automonitor.data.audit.tokens import TermIds


def _texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = ["return", "Exit(0)", "assert", "True", "the", "tests", "pass", "ÿes", "naïve", "x==1", "a", "Ab", "ab"]
    out = [" ".join(rng.choice(words) for _ in range(rng.randrange(0, 40))) for _ in range(n)]
    return out + out[:5]  # repeated texts are analysed once


def _same(a, b) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    for f in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f


def test_term_numbers_give_the_plain_vectorizers_arrays():
    texts = _texts(60)
    for params, extra in (
        ({"analyzer": "char_wb", "ngram_range": (3, 5)}, {"min_df": 2, "sublinear_tf": True, "max_features": 300}),
        ({"analyzer": "char_wb", "ngram_range": (3, 5)}, {"min_df": 2, "sublinear_tf": True, "max_features": 30_000}),
        ({"ngram_range": (1, 2)}, {"min_df": 2, "sublinear_tf": True, "max_features": 40, "dtype": np.float32}),
    ):
        terms = TermIds(TfidfVectorizer(**params).build_analyzer(), texts)
        docs = list(range(len(texts)))
        for tr, ts in GroupKFold(n_splits=5).split(docs, groups=[i % 13 for i in docs]):
            plain = TfidfVectorizer(**params, **extra)
            ours = terms.vectorizer(**extra)
            _same(plain.fit_transform([texts[i] for i in tr]), ours.fit_transform([docs[i] for i in tr]))
            _same(plain.transform([texts[i] for i in ts]), ours.transform([docs[i] for i in ts]))
            # the training texts scored again, and every text (terms unseen in the fit are dropped)
            _same(plain.transform([texts[i] for i in tr]), ours.transform([docs[i] for i in tr]))
            _same(plain.transform(texts), ours.transform(docs))


def test_term_numbers_refuse_what_the_plain_vectorizer_refuses():
    """No term at all, or none left after ``min_df``: both raise ``ValueError`` (the ladder and the certificate
    then score nothing), with scikit-learn's words."""
    params = {"analyzer": "char_wb", "ngram_range": (3, 5)}
    for texts, extra, words in (
        (["", " ", ""], {"min_df": 1, "max_features": 30_000}, "empty vocabulary"),
        (["xyz", "bcd", "fgh"], {"min_df": 2, "max_features": 30_000}, "no terms remain"),
    ):
        terms = TermIds(TfidfVectorizer(**params).build_analyzer(), texts)
        with pytest.raises(ValueError, match=words):
            TfidfVectorizer(**params, **extra).fit_transform(texts)
        with pytest.raises(ValueError, match=words):
            terms.vectorizer(**extra).fit_transform(list(range(len(texts))))


def test_char_ngram_cv_with_the_frames_terms_is_the_plain_fit():
    texts = _texts(80, seed=3)
    frame = pd.DataFrame(
        {
            "response": texts,
            "label": ["misbehavior" if i % 2 else "benign" for i in range(len(texts))],
        }
    )
    groups = np.array([f"g{i // 2}" for i in range(len(texts))])
    te = frame.iloc[10:70]
    own = C.char_ngram_cv(te.reset_index(drop=True), groups[10:70])
    shared = C.char_ngram_cv(te, groups[10:70], C.char_terms(frame["response"]))
    ref = _reference_char_ngram_cv(te, groups[10:70])
    assert ref is not None and np.array_equal(ref, own) and np.array_equal(ref, shared)


def _reference_char_ngram_cv(te: pd.DataFrame, groups: np.ndarray) -> np.ndarray | None:
    """The certificate's probe as it was written before TermIds: a plain vectorizer fitted on each fold's texts."""
    from sklearn.linear_model import LogisticRegression

    y = (te["label"] == "misbehavior").to_numpy(dtype=int)
    texts = [t[:6000] for t in te["response"].astype(str)]
    out = np.full(len(te), np.nan)
    for tr, ts in GroupKFold(n_splits=5).split(texts, y, groups):
        vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True, max_features=30_000)
        x = vec.fit_transform([texts[i] for i in tr])
        lr = LogisticRegression(max_iter=2000, solver="liblinear", random_state=0).fit(x, y[tr])
        out[ts] = lr.predict_proba(vec.transform([texts[i] for i in ts]))[:, 1]
    return out
