"""The trained baselines: response length features and TF-IDF, each + logistic regression, trained on
``train`` and scored on ``test`` (:class:`TrainedBaselines`: one fitted model set per distinct
training set), and the AUROC they reach on a slice.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import numpy.typing as npt
import pandas as pd

from automonitor.data.audit.params import MIN_TRAIN_PER_CLASS
from automonitor.vocab import POSITIVE

if TYPE_CHECKING:
    import scipy.sparse as sp


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
        self._terms: dict[str, int] = {}

    def cv_scores(self, te: pd.DataFrame, name: str) -> np.ndarray | None:
        """:func:`cv_scores` of ``te`` (rows of the audit's test frame, by index), once per rows and baseline;
        the responses' n-grams shared across slices."""
        key = (name, *te.index)
        if key not in self._cv:
            self._cv[key] = cv_scores(te, name, features=self._features, terms=self._terms)
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


@dataclass
class SliceScores:
    """What the scorers of one slice (test rows ``te``, 0/1 labels ``y``) fill, by baseline name:
    ``baselines`` (AUROC, ``None`` when undefined), ``notes`` (why), ``pairwise`` (:func:`pairwise_share`)
    and ``scores`` (one per row of ``te``)."""

    te: pd.DataFrame
    y: np.ndarray
    baselines: dict[str, float | None] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    pairwise: dict[str, float | None] = field(default_factory=dict)
    scores: dict[str, np.ndarray] = field(default_factory=dict)

    def add(self, name: str, s: np.ndarray) -> str | None:
        """Keep baseline ``name``'s scores ``s``, its AUROC and pairwise figure; returns why the AUROC is
        ``None`` (else ``None``)."""
        self.scores[name] = np.asarray(s, dtype=float)
        self.baselines[name], why = auroc(self.y, s)
        self.pairwise[name] = pairwise_share(self.te, s)
        return why


def score_trained(models: dict[str, Any], out: SliceScores) -> None:
    """Each fitted baseline of ``models`` scored on the slice into ``out`` (why-None into its notes)."""
    for name, predict in models.items():
        why = out.add(name, predict(out.te, "test") if len(out.te) else np.zeros(0))
        if why:
            out.notes[name] = why
    if "tfidf" not in models:
        out.baselines["tfidf"], out.notes["tfidf"] = None, "empty TF-IDF vocabulary (train responses too short)"


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
    te: pd.DataFrame,
    name: str,
    folds: int = CV_FOLDS,
    *,
    features: dict[str, list[str]] | None = None,
    terms: dict[str, int] | None = None,
) -> np.ndarray | None:
    """Out-of-fold P(misbehavior) of baseline ``name`` (``length`` | ``tfidf``) on ``te`` alone: a
    ``GroupKFold`` of ``folds`` folds grouped by ``pair_id`` (both sides of a pair in the same fold), a
    fresh model (and, for TF-IDF, a fresh :func:`tfidf_vectorizer`) fitted on the other folds. For slices
    without train data. ``None`` when ``te`` has fewer pairs than folds or a training fold lacks a class
    or (TF-IDF) a vocabulary.

    ``features``: a dict (response -> its TF-IDF n-grams) filled and reused across calls, so each response
    is tokenised once instead of once per fold and slice; ``terms``: a dict (term -> id) shared the same
    way. The folds' TF-IDF matrices are assembled by :class:`FoldCounts` (the vectorizer's arrays, entry
    for entry), so the scores are the same floats."""
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
        analyzer = cached_analyzer({} if features is None else features)
        counts = FoldCounts(texts, analyzer, {} if terms is None else terms)
    for tr_idx, te_idx in GroupKFold(n_splits=folds).split(np.zeros(len(te)), y, groups):
        if y[tr_idx].min() == y[tr_idx].max():
            return None
        if name == "length":
            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
            model.fit(_fold_length(lengths, codes, tr_idx), y[tr_idx])
            out[te_idx] = model.predict_proba(_fold_length(lengths, codes, te_idx))[:, 1]
        else:
            try:
                mats = counts.matrices(tr_idx, te_idx)
            except ValueError:  # more terms than max_features: the vectorizer picks them
                vec = tfidf_vectorizer(analyzer)
                try:
                    xtr = vec.fit_transform([texts[i] for i in tr_idx])
                except ValueError:  # empty vocabulary
                    return None
                mats = xtr, vec.transform([texts[i] for i in te_idx])
            if mats is None:  # empty vocabulary
                return None
            lr = LogisticRegression(max_iter=2000, solver="liblinear", random_state=0).fit(mats[0], y[tr_idx])
            out[te_idx] = lr.predict_proba(mats[1])[:, 1]
    return out


def _fold_length(lengths: np.ndarray, codes: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """:func:`length_features` of the rows ``idx`` (a pair's partner counts only when it is among them)."""
    return _length_features(lengths[idx], pd.factorize(codes[idx])[0])


class FoldCounts:
    """The TF-IDF baseline's fold matrices without tokenising or counting per fold: the term counts of each
    response of a slice are taken once, and each fold's train and test matrices are assembled from them as
    :func:`tfidf_vectorizer`'s ``fit_transform`` / ``transform`` build theirs, entry for entry: the fold's
    vocabulary is every term of its train responses (``min_df=2`` documents kept), numbered alphabetically;
    a train row lists its terms in the order the vectorizer first met them in the fold (its count matrix is
    sorted by that order before being renumbered), a test row in vocabulary order; then the same
    ``TfidfTransformer`` (sublinear tf, smooth idf, l2 rows). The same arrays, so the same floats
    (``tests/data/test_audit_folds.py`` compares them with scikit-learn's on every fold).

    ``texts``: the slice's responses; ``analyzer``: :func:`cached_analyzer`; ``terms``: a dict (term -> id)
    shared across slices."""

    def __init__(self, texts: list[str], analyzer: Callable[[str], list[str]], terms: dict[str, int]):
        self.ids: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []
        for text in texts:
            c = Counter(analyzer(text))  # in first-appearance order, as the vectorizer's per-document counter
            got = [terms.get(term) for term in c]
            for k, term in enumerate(c):
                if got[k] is None:
                    got[k] = terms[term] = len(terms)
            self.ids.append(np.array(got, dtype=np.int64))
            self.counts.append(np.fromiter(c.values(), dtype=np.int64, count=len(c)))
        slice_ids = np.unique(np.concatenate(self.ids)) if self.ids else np.zeros(0, dtype=np.int64)
        wanted = set(slice_ids.tolist())
        names: dict[int, str] = {g: term for term, g in terms.items() if g in wanted}
        # alphabetical rank of each term of the slice (Python's str order, as the vectorizer's sorted())
        alpha = sorted(slice_ids.tolist(), key=names.__getitem__)
        self.rank = np.zeros(int(slice_ids.max()) + 1 if len(slice_ids) else 0, dtype=np.int64)
        self.rank[np.asarray(alpha, dtype=np.int64)] = np.arange(len(alpha))

    def matrices(self, tr_idx: np.ndarray, te_idx: np.ndarray) -> tuple[sp.csr_matrix, sp.csr_matrix] | None:
        """``(train matrix, test matrix)`` of one fold (TF-IDF, float32 CSR); ``None`` when the vectorizer
        would raise (no term in two train responses); ``ValueError`` beyond ``max_features`` terms (not
        assembled here: the caller fits the vectorizer instead)."""
        from sklearn.feature_extraction.text import TfidfTransformer

        ids = [self.ids[i] for i in tr_idx]
        lens = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        if not lens.sum():
            return None
        cat = np.concatenate(ids)
        cnt = np.concatenate([self.counts[i] for i in tr_idx])
        uniq, first, pos = np.unique(cat, return_index=True, return_inverse=True)
        inserted = np.empty(len(uniq), dtype=np.int64)
        inserted[np.argsort(first, kind="stable")] = np.arange(len(uniq))
        df = np.bincount(pos, minlength=len(uniq))
        keep = df >= 2
        n_keep = int(keep.sum())
        if n_keep == 0:
            return None
        if n_keep > 50_000:
            raise ValueError("more terms than max_features")
        kept = uniq[keep]
        new_id = np.full(len(uniq), -1, dtype=np.int64)
        new_id[np.flatnonzero(keep)[np.argsort(self.rank[kept], kind="stable")]] = np.arange(n_keep)
        rows = np.repeat(np.arange(len(ids)), lens)
        order = np.lexsort((inserted[pos], rows))  # per row, in the order the vectorizer met the terms
        cols, vals, rows = new_id[pos][order], cnt[order], rows[order]
        ok = cols >= 0
        xtr = _csr(rows[ok], cols[ok], vals[ok], len(ids), n_keep)
        # test rows: their terms in the fold vocabulary, in vocabulary order
        lut = np.full(len(self.rank), -1, dtype=np.int64)
        lut[uniq] = new_id
        t_lens = np.fromiter((len(self.ids[i]) for i in te_idx), dtype=np.int64, count=len(te_idx))
        if t_lens.sum():
            t_cols = lut[np.concatenate([self.ids[i] for i in te_idx])]
            t_vals = np.concatenate([self.counts[i] for i in te_idx])
        else:
            t_cols = t_vals = np.zeros(0, dtype=np.int64)
        t_rows = np.repeat(np.arange(len(te_idx)), t_lens)
        ok = t_cols >= 0
        order = np.lexsort((t_cols[ok], t_rows[ok]))  # a row's terms are distinct: one order
        xte = _csr(t_rows[ok][order], t_cols[ok][order], t_vals[ok][order], len(te_idx), n_keep)
        tf = TfidfTransformer(sublinear_tf=True).fit(xtr)
        return tf.transform(xtr, copy=False), tf.transform(xte, copy=False)


def _csr(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n_rows: int, n_cols: int) -> sp.csr_matrix:
    """A float32 CSR matrix with int32 indices holding the entries in the given order (rows ascending)."""
    import scipy.sparse as sp

    indptr = np.zeros(n_rows + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    return sp.csr_matrix(
        (vals.astype(np.float32), cols.astype(np.int32), indptr), shape=(n_rows, n_cols), dtype=np.float32
    )


def cached_analyzer(features: dict[str, list[str]]):
    """The TF-IDF baseline's own analyzer (:func:`tfidf_vectorizer`'s lower-cased word uni- and bigrams),
    memoised in ``features`` by response text."""
    analyze = tfidf_vectorizer().build_analyzer()

    def cached(doc: str) -> list[str]:
        got = features.get(doc)
        if got is None:
            got = features[doc] = analyze(doc)
        return got

    return cached


def score_within_test(out: SliceScores, trained: TrainedBaselines) -> None:
    """Each trained baseline by :func:`cv_scores` on the slice (no train data) into ``out``. Through
    ``trained`` (the audit's :class:`TrainedBaselines`), the scores of the same test rows are computed once
    per audit (a category x task cell holding one source is the same rows as that source's slice) and each
    response tokenised once."""
    for name in FITTERS:
        s = trained.cv_scores(out.te, name)
        if s is None:
            out.baselines[name], out.pairwise[name] = None, None
            out.notes[name] = f"no train data and too few pairs / classes for {CV_FOLDS}-fold CV within the test slice"
            continue
        why = out.add(name, s)
        out.notes[name] = (
            why or f"no train data: {CV_FOLDS}-fold cross-validation within the test slice, grouped by pair"
        )
