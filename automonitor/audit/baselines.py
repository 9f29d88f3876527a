"""The trained baselines: response length features and TF-IDF, each + logistic regression, trained on
``train`` and scored on ``test`` (:class:`_TrainedBaselines`: one fitted model set per distinct
training set), and the AUROC they reach on a slice.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from automonitor.audit.params import MIN_TRAIN_PER_CLASS
from automonitor.vocab import POSITIVE


def length_features(df: pd.DataFrame) -> np.ndarray:
    """``(n, 2)`` float array: ``log1p(len(response))`` (characters) and the within-pair log length ratio
    ``log((1 + len) / (1 + len of the other sample of the same pair_id in df))``, 0 when the sample has no
    partner in ``df``."""
    n = df["response"].map(len).to_numpy(dtype=float)
    tot = pd.Series(n, index=df.index).groupby(df["pair_id"].to_numpy()).transform("sum").to_numpy()
    cnt = df.groupby("pair_id")["pair_id"].transform("size").to_numpy()
    other = np.where(cnt == 2, tot - n, np.nan)
    ratio = np.where(cnt == 2, np.log1p(n) - np.log1p(np.nan_to_num(other)), 0.0)
    return np.column_stack([np.log1p(n), ratio])


def _fit_length(train: pd.DataFrame, y: np.ndarray, mats: dict[str, Any]):
    """Length baseline fitted on ``train``; returns ``predict(df, part) -> P(misbehavior)``."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(length_features(train), y)
    return lambda df, part: model.predict_proba(length_features(df))[:, 1]


def tfidf_vectorizer():
    """The TF-IDF of the ``tfidf`` baseline: word uni- and bigrams, sublinear tf, ``min_df=2``, float32."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(ngram_range=(1, 2), min_df=2, max_features=50_000, sublinear_tf=True, dtype=np.float32)


def _fit_tfidf(train: pd.DataFrame, y: np.ndarray, mats: dict[str, Any]):
    """TF-IDF + logistic regression fitted on the rows of ``train`` in the precomputed train matrix
    (``mats["train"]``, the vectorizer fitted once on every train response: one vocabulary and IDF for all
    slices); ``predict(df, part)`` reads the rows of ``df`` in ``mats[part]``."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(max_iter=2000, solver="liblinear")
    model.fit(mats["train"][train.index.to_numpy()], y)
    return lambda df, part: model.predict_proba(mats[part][df.index.to_numpy()])[:, 1]


_FITTERS = {"length": _fit_length, "tfidf": _fit_tfidf}


def _auroc(y: np.ndarray, s: np.ndarray) -> tuple[float | None, str | None]:
    from sklearn.metrics import roc_auc_score

    if len(y) == 0:
        return None, "no test samples"
    if y.min() == y.max():
        return None, "test slice has one class only"
    return float(roc_auc_score(y, s)), None


def _y(df: pd.DataFrame) -> np.ndarray:
    return (df["label"] == POSITIVE).to_numpy(dtype=int)


def _tfidf_matrices(train: pd.DataFrame, test: pd.DataFrame, controls: pd.DataFrame) -> dict[str, Any]:
    """TF-IDF matrices ``{"train", "test", "controls"}`` of the responses from one vectorizer fitted on every
    train response (slices select rows: the frames keep 0..n-1 indexes); ``{}`` when there is nothing to
    score or the vocabulary is empty."""
    mats: dict[str, Any] = {}
    if len(train) and (len(test) or len(controls)):
        try:
            vec = tfidf_vectorizer()
            mats["train"] = vec.fit_transform(train["response"].tolist())
        except ValueError:  # empty vocabulary (e.g. every train response empty)
            return {}
        for part, frame_ in (("test", test), ("controls", controls)):
            mats[part] = vec.transform(frame_["response"].tolist()) if len(frame_) else mats["train"][:0]
    return mats


class _TrainedBaselines:
    """The trained baselines (length, TF-IDF) of the audit: one fitted model set per distinct training
    set (source slices falling back to their cell share it)."""

    def __init__(self, train: pd.DataFrame, mats: dict[str, Any]):
        self.train, self.mats = train, mats
        self._models: dict[tuple[Any, ...], dict[str, Any]] = {}

    def cell_train(self, cat: str, task: str) -> pd.DataFrame:
        """The train rows of one category x task cell."""
        return self.train[(self.train["category"] == cat) & (self.train["task"] == task)]

    @staticmethod
    def enough(tr: pd.DataFrame) -> bool:
        """Whether ``tr`` has MIN_TRAIN_PER_CLASS samples of each label."""
        y = _y(tr)
        return int(y.sum()) >= MIN_TRAIN_PER_CLASS and int(len(y) - y.sum()) >= MIN_TRAIN_PER_CLASS

    def fitted(self, tr: pd.DataFrame) -> dict[str, Any]:
        """``{baseline name: predict(frame, part) -> P(misbehavior)}`` trained on ``tr`` (TF-IDF only
        when there are matrices); the same training rows are fitted once."""
        key = tuple(tr.index)
        if key not in self._models:
            y = _y(tr)
            self._models[key] = {
                name: fit(tr, y, self.mats) for name, fit in _FITTERS.items() if name != "tfidf" or self.mats
            }
        return self._models[key]


def _score_trained(
    te: pd.DataFrame,
    y: np.ndarray,
    models: dict[str, Any],
    baselines: dict[str, float | None],
    notes: dict[str, str],
) -> None:
    """AUROC of each fitted baseline on ``te`` (labels ``y``) into ``baselines``, why-None into ``notes``."""
    for name, predict in models.items():
        baselines[name], why = _auroc(y, predict(te, "test") if len(te) else np.zeros(0))
        if why:
            notes[name] = why
    if "tfidf" not in models:
        baselines["tfidf"], notes["tfidf"] = None, "empty TF-IDF vocabulary (train responses too short)"
