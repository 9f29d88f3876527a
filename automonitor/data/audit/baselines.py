"""The trained baselines: response length features and TF-IDF, each + logistic regression, trained on
``train`` and scored on ``test`` (:class:`TrainedBaselines`: one fitted model set per distinct
training set), and the AUROC they reach on a slice.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import numpy.typing as npt
import pandas as pd

from automonitor.data.audit.params import MIN_TRAIN_PER_CLASS
from automonitor.vocab import POSITIVE


def length_features(df: pd.DataFrame) -> np.ndarray:
    """``(n, 2)`` float array: ``log1p(len(response))`` (characters) and the within-pair log length ratio
    ``log((1 + len) / (1 + len of the other sample of the same pair_id in df))``, 0 when the sample has no
    partner in ``df``."""
    n = np.fromiter((len(r) for r in df["response"]), dtype=float, count=len(df))
    return _length_features(n, pd.factorize(df["pair_id"].to_numpy())[0])


def _length_features(n: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """:func:`length_features` from the response lengths ``n`` (float) and the pair codes (``pd.factorize``;
    -1 for a missing pair id, in no pair). Sums of whole numbers in float64, so the same floats as the
    pandas group sums this replaces (a third of a cold audit's length baseline was the groupby)."""
    has = codes >= 0
    k = int(codes.max()) + 1 if has.any() else 0
    tot = np.bincount(codes[has], weights=n[has], minlength=k)
    size = np.bincount(codes[has], minlength=k)
    cnt = np.where(has, size[np.where(has, codes, 0)] if k else 0, 0)
    tot_row = np.where(has, tot[np.where(has, codes, 0)] if k else 0.0, np.nan)
    other = np.where(cnt == 2, tot_row - n, np.nan)
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


def tfidf_vectorizer(analyzer: Callable[[str], list[str]] | None = None):
    """The TF-IDF of the ``tfidf`` baseline: word uni- and bigrams, sublinear tf, ``min_df=2``, float32.
    ``analyzer``: a callable giving the same n-grams (a memo of this vectorizer's own ``build_analyzer()``)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    if analyzer is not None:
        return TfidfVectorizer(analyzer=analyzer, min_df=2, max_features=50_000, sublinear_tf=True, dtype=np.float32)
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
    """``(AUROC of scores s against 0/1 labels y, None)``, or ``(None, why)`` for an empty or one-class ``y``.
    :func:`automonitor.ranks.trapezoid_auc`: scikit-learn's ``roc_auc_score`` float, without its input checks
    (a tenth of a cold audit)."""
    from automonitor.ranks import trapezoid_auc

    if len(y) == 0:
        return None, "no test samples"
    if y.min() == y.max():
        return None, "test slice has one class only"
    return trapezoid_auc(y, s), None


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
        self._cv: dict[tuple[object, ...], np.ndarray | None] = {}
        self._features: dict[str, list[str]] = {}

    def cv_scores(self, te: pd.DataFrame, name: str) -> np.ndarray | None:
        """:func:`cv_scores` of ``te`` (rows of the audit's test frame, by index), once per rows and baseline;
        the responses' n-grams shared across slices."""
        key = (name, *te.index)
        if key not in self._cv:
            self._cv[key] = cv_scores(te, name, features=self._features)
        got = self._cv[key]
        return None if got is None else got.copy()

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


def cv_scores(
    te: pd.DataFrame, name: str, folds: int = CV_FOLDS, *, features: dict[str, list[str]] | None = None
) -> np.ndarray | None:
    """Out-of-fold P(misbehavior) of baseline ``name`` (``length`` | ``tfidf``) on ``te`` alone: a
    ``GroupKFold`` of ``folds`` folds grouped by ``pair_id`` (both sides of a pair in the same fold), a
    fresh model (and, for TF-IDF, a fresh :func:`tfidf_vectorizer`) fitted on the other folds. For slices
    without train data. ``None`` when ``te`` has fewer pairs than folds or a training fold lacks a class
    or (TF-IDF) a vocabulary.

    ``features``: a dict (response -> its TF-IDF n-grams) filled and reused across calls, so each response
    is tokenised once instead of once per fold and slice; the vectorizer counts the same n-grams, so the
    scores are the same floats."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    groups = te["pair_id"].astype(str).to_numpy()
    if len(set(groups)) < folds:
        return None
    y = positive_labels(te)
    out = np.zeros(len(te), dtype=float)
    texts = te["response"].tolist()
    if name == "length":
        lengths = np.fromiter((len(r) for r in texts), dtype=float, count=len(texts))
        codes = pd.factorize(te["pair_id"].to_numpy())[0]
    else:
        analyzer = _cached_analyzer({} if features is None else features)
    for tr_idx, te_idx in GroupKFold(n_splits=folds).split(np.zeros(len(te)), y, groups):
        if y[tr_idx].min() == y[tr_idx].max():
            return None
        if name == "length":
            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
            model.fit(_fold_length(lengths, codes, tr_idx), y[tr_idx])
            out[te_idx] = model.predict_proba(_fold_length(lengths, codes, te_idx))[:, 1]
        else:
            vec = tfidf_vectorizer(analyzer)
            try:
                xtr = vec.fit_transform([texts[i] for i in tr_idx])
            except ValueError:  # empty vocabulary
                return None
            lr = LogisticRegression(max_iter=2000, solver="liblinear", random_state=0).fit(xtr, y[tr_idx])
            out[te_idx] = lr.predict_proba(vec.transform([texts[i] for i in te_idx]))[:, 1]
    return out


def _fold_length(lengths: np.ndarray, codes: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """:func:`length_features` of the rows ``idx`` (a pair's partner counts only when it is among them)."""
    return _length_features(lengths[idx], pd.factorize(codes[idx])[0])


def _cached_analyzer(features: dict[str, list[str]]):
    """The TF-IDF baseline's own analyzer (:func:`tfidf_vectorizer`'s lower-cased word uni- and bigrams),
    memoised in ``features`` by response text."""
    analyze = tfidf_vectorizer().build_analyzer()

    def cached(doc: str) -> list[str]:
        got = features.get(doc)
        if got is None:
            got = features[doc] = analyze(doc)
        return got

    return cached


def score_within_test(
    te: pd.DataFrame,
    y: np.ndarray,
    baselines: dict[str, float | None],
    notes: dict[str, str],
    pairwise: dict[str, float | None],
    collect: dict[str, np.ndarray] | None = None,
    trained: TrainedBaselines | None = None,
) -> None:
    """AUROC and pairwise figure of each trained baseline by :func:`cv_scores` on ``te`` (no train data);
    each baseline's scores into ``collect`` when given. With ``trained`` (the audit's
    :class:`TrainedBaselines`), the scores of the same test rows are computed once per audit (a category x
    task cell holding one source is the same rows as that source's slice) and each response tokenised once."""
    for name in FITTERS:
        s = trained.cv_scores(te, name) if trained is not None else cv_scores(te, name)
        if s is None:
            baselines[name], pairwise[name] = None, None
            notes[name] = f"no train data and too few pairs / classes for {CV_FOLDS}-fold CV within the test slice"
            continue
        if collect is not None:
            collect[name] = s
        baselines[name], why = auroc(y, s)
        pairwise[name] = pairwise_share(te, s)
        notes[name] = why or f"no train data: {CV_FOLDS}-fold cross-validation within the test slice, grouped by pair"
