"""The trained baselines: response length features and TF-IDF, each + logistic regression, trained on
``train`` and scored on ``test`` (:class:`TrainedBaselines`: one fitted model set per distinct
training set), and the AUROC they reach on a slice.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from automonitor.data.audit.params import MIN_TRAIN_PER_CLASS
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

    model = LogisticRegression(max_iter=2000, solver="liblinear", random_state=0)
    model.fit(mats["train"][train.index.to_numpy()], y)
    return lambda df, part: model.predict_proba(mats[part][df.index.to_numpy()])[:, 1]


FITTERS = {"length": _fit_length, "tfidf": _fit_tfidf}


def auroc(y: np.ndarray, s: np.ndarray) -> tuple[float | None, str | None]:
    from sklearn.metrics import roc_auc_score

    if len(y) == 0:
        return None, "no test samples"
    if y.min() == y.max():
        return None, "test slice has one class only"
    return float(roc_auc_score(y, s)), None


def positive_labels(df: pd.DataFrame) -> np.ndarray:
    y: npt.NDArray[np.int_] = (df["label"] == POSITIVE).to_numpy(dtype=int)
    return y


def tfidf_matrices(train: pd.DataFrame, test: pd.DataFrame, controls: pd.DataFrame) -> dict[str, Any]:
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


class TrainedBaselines:
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
        y = positive_labels(tr)
        return int(y.sum()) >= MIN_TRAIN_PER_CLASS and int(len(y) - y.sum()) >= MIN_TRAIN_PER_CLASS

    def fitted(self, tr: pd.DataFrame) -> dict[str, Any]:
        """``{baseline name: predict(frame, part) -> P(misbehavior)}`` trained on ``tr`` (TF-IDF only
        when there are matrices); the same training rows are fitted once."""
        key = tuple(tr.index)
        if key not in self._models:
            y = positive_labels(tr)
            self._models[key] = {
                name: fit(tr, y, self.mats) for name, fit in FITTERS.items() if name != "tfidf" or self.mats
            }
        return self._models[key]


def score_trained(
    te: pd.DataFrame,
    y: np.ndarray,
    models: dict[str, Any],
    baselines: dict[str, float | None],
    notes: dict[str, str],
    pairwise: dict[str, float | None] | None = None,
    collect: dict[str, np.ndarray] | None = None,
) -> None:
    """AUROC of each fitted baseline on ``te`` (labels ``y``) into ``baselines``, why-None into ``notes``,
    and (when given) the pairwise figure (:func:`pairwise_share`) into ``pairwise`` and each baseline's
    scores (one per row of ``te``) into ``collect``."""
    for name, predict in models.items():
        s = predict(te, "test") if len(te) else np.zeros(0)
        if collect is not None:
            collect[name] = np.asarray(s, dtype=float)
        baselines[name], why = auroc(y, s)
        if pairwise is not None:
            pairwise[name] = pairwise_share(te, s)
        if why:
            notes[name] = why
    if "tfidf" not in models:
        baselines["tfidf"], notes["tfidf"] = None, "empty TF-IDF vocabulary (train responses too short)"


CV_FOLDS = 5


def pairwise_share(te: pd.DataFrame, scores: np.ndarray) -> float | None:
    """The "pairwise" figure of a baseline: over the pairs of ``te`` with both sides, the share in which
    the misbehavior side scores higher than the benign side (a tie counts one half); ``None`` when no
    pair has both sides. 1.0: the baseline always prefers the misbehavior side; 0.5: chance."""
    if len(te) == 0:
        return None
    # vectorised (one bincount per quantity instead of a pandas group per pair: this loop was a third of a
    # cold audit); pairs in order of first appearance, as groupby(sort=False) gave them, so the mean is the
    # same float (tests/data/test_audit.py compares it with the per-pair loop)
    codes, uniques = pd.factorize(te["pair_id"].to_numpy())
    pos = positive_labels(te).astype(bool)
    s = np.asarray(scores, dtype=float)
    keep = codes >= 0  # a missing pair id is in no pair
    codes, pos, s = codes[keep], pos[keep], s[keep]
    n = np.bincount(codes, minlength=len(uniques))
    n_pos = np.bincount(codes[pos], minlength=len(uniques))
    both = (n == 2) & (n_pos == 1)
    if not both.any():
        return None
    mis = np.full(len(uniques), np.nan)
    ben = np.full(len(uniques), np.nan)
    mis[codes[pos]] = s[pos]
    ben[codes[~pos]] = s[~pos]
    mis, ben = mis[both], ben[both]
    wins = np.where(mis > ben, 1.0, np.where(mis == ben, 0.5, 0.0))
    return float(np.mean(wins))


def cv_scores(te: pd.DataFrame, name: str, folds: int = CV_FOLDS) -> np.ndarray | None:
    """Out-of-fold P(misbehavior) of baseline ``name`` (``length`` | ``tfidf``) on ``te`` alone: a
    ``GroupKFold`` of ``folds`` folds grouped by ``pair_id`` (both sides of a pair in the same fold), a
    fresh model (and, for TF-IDF, a fresh :func:`tfidf_vectorizer`) fitted on the other folds. For slices
    without train data. ``None`` when ``te`` has fewer pairs than folds or a training fold lacks a class
    or (TF-IDF) a vocabulary."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    groups = te["pair_id"].astype(str).to_numpy()
    if len(set(groups)) < folds:
        return None
    y = positive_labels(te)
    out = np.zeros(len(te), dtype=float)
    for tr_idx, te_idx in GroupKFold(n_splits=folds).split(np.zeros(len(te)), y, groups):
        if y[tr_idx].min() == y[tr_idx].max():
            return None
        tr_f, te_f = te.iloc[tr_idx], te.iloc[te_idx]
        if name == "length":
            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
            model.fit(length_features(tr_f), y[tr_idx])
            out[te_idx] = model.predict_proba(length_features(te_f))[:, 1]
        else:
            vec = tfidf_vectorizer()
            try:
                xtr = vec.fit_transform(tr_f["response"].tolist())
            except ValueError:  # empty vocabulary
                return None
            lr = LogisticRegression(max_iter=2000, solver="liblinear", random_state=0).fit(xtr, y[tr_idx])
            out[te_idx] = lr.predict_proba(vec.transform(te_f["response"].tolist()))[:, 1]
    return out


def score_within_test(
    te: pd.DataFrame,
    y: np.ndarray,
    baselines: dict[str, float | None],
    notes: dict[str, str],
    pairwise: dict[str, float | None],
    collect: dict[str, np.ndarray] | None = None,
) -> None:
    """AUROC and pairwise figure of each trained baseline by :func:`cv_scores` on ``te`` (no train data);
    each baseline's scores into ``collect`` when given."""
    for name in FITTERS:
        s = cv_scores(te, name)
        if s is None:
            baselines[name], pairwise[name] = None, None
            notes[name] = f"no train data and too few pairs / classes for {CV_FOLDS}-fold CV within the test slice"
            continue
        if collect is not None:
            collect[name] = s
        baselines[name], why = auroc(y, s)
        pairwise[name] = pairwise_share(te, s)
        notes[name] = why or f"no train data: {CV_FOLDS}-fold cross-validation within the test slice, grouped by pair"
