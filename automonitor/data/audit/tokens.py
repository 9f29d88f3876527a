"""Each text's n-grams taken once for every TF-IDF fit over it: :class:`TermIds`.

A cross-validated TF-IDF probe (the certificate's ``char_ngram_cv``, the ladder's probes on a cell without
train data) fits a fresh ``TfidfVectorizer`` per fold, so scikit-learn's analyzer ran on every text once per
fold it is in (five or six times), and the certificate scores each row in two slices (its source's and its
cell's): most of the probes' time was making the same n-grams again. :class:`TermIds` runs the vectorizer's
own analyzer once per distinct text and numbers the terms in their sorted order; the vectorizer is then given
text *numbers* as documents and an analyzer (:meth:`TermIds.analyzer`) that returns a text's term numbers in
the order the original analyzer gave its terms.

A term number stands for its term, numbers compare as their terms do (sorted vocabulary, the same columns, the
same ``max_features`` choice) and each document lists its terms in the same order. Counting them per fit was
still scikit-learn's Python loop over every n-gram of every document (``CountVectorizer._count_vocab``: most
of a cold plan's CPU, five or six fits per cell): :meth:`TermIds.vectorizer` counts each distinct text once
(NumPy) and builds each fit's count matrix from those counts with array operations, the way scikit-learn
builds it (its columns, its entries in its order within a row, ``min_df``, ``max_features`` with
scikit-learn's own tie order), then weighs it with scikit-learn's ``TfidfTransformer``. The matrices are
the same arrays entry for entry and the scores the same floats (``tests/data/test_term_ids.py`` compares
them with the plain vectorizer's).
"""

from __future__ import annotations

from collections import defaultdict
from numbers import Integral
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

if TYPE_CHECKING:
    from scipy import sparse
    from sklearn.feature_extraction.text import TfidfTransformer, TfidfVectorizer

__all__ = ["TermIds", "TermTfidf"]


class TermIds:
    """The analyzer output of each text of ``texts`` as term numbers (module doc).

    ``analyze``: a vectorizer's ``build_analyzer()``; ``texts``: the texts, addressed by position from then on
    (repeated texts are analysed once)."""

    def __init__(self, analyze: Callable[[str], list[str]], texts: Sequence[str]):
        first: defaultdict[str, int] = defaultdict()
        first.default_factory = first.__len__  # a new term gets the next number (first appearance)
        seen: dict[str, int] = {}
        slot: list[int] = []
        raw: list[list[int]] = []
        for t in texts:
            k = seen.get(t)
            if k is None:
                k = seen[t] = len(raw)
                raw.append(list(map(first.__getitem__, analyze(t))))
            slot.append(k)
        terms = list(first)
        rank = np.empty(len(terms), dtype=np.int64)
        rank[sorted(range(len(terms)), key=terms.__getitem__)] = np.arange(len(terms))
        self._ids = [rank[np.asarray(r, dtype=np.int64)] if r else np.zeros(0, np.int64) for r in raw]
        self._slot = slot
        self._counts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None

    def counts(self, doc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(terms, counts, first)`` of text ``doc``: its distinct term numbers in ascending order, how often
        each occurs, and their positions in order of first occurrence (``terms[first]``: the distinct terms
        in the order the analyzer first gave them)."""
        if self._counts is None:
            self._counts = []
            for ids in self._ids:
                terms, first, n = np.unique(ids, return_index=True, return_counts=True)
                self._counts.append((terms, n, np.argsort(first, kind="stable")))
        return self._counts[self._slot[doc]]

    def __len__(self) -> int:
        return len(self._slot)

    def analyzer(self, doc: int) -> list[int]:
        """The term numbers of text ``doc`` (its position in ``texts``), in the analyzer's order."""
        out: list[int] = self._ids[self._slot[doc]].tolist()
        return out

    def vectorizer(self, **params: object) -> TfidfVectorizer | TermTfidf:
        """A TF-IDF vectorizer over text numbers with ``TfidfVectorizer``'s ``params`` (no ``analyzer``,
        ``ngram_range`` or ``lowercase``: the analysis is done): a :class:`TermTfidf` (the same matrices, its
        counting done with arrays) for the parameters it takes (:data:`TermTfidf.PARAMS`), else a
        ``TfidfVectorizer`` with this object's analyzer."""
        if set(params) <= TermTfidf.PARAMS:
            return TermTfidf(self, **params)  # type: ignore[arg-type]
        from sklearn.feature_extraction.text import TfidfVectorizer

        return TfidfVectorizer(analyzer=self.analyzer, **params)


class TermTfidf:
    """``TfidfVectorizer(analyzer=terms.analyzer, **params)`` for the default ``norm``, ``use_idf`` and
    ``smooth_idf``, with its count matrices built from :meth:`TermIds.counts` (module doc): ``fit_transform``
    and ``transform`` return the same arrays, and raise the same ``ValueError`` on an empty vocabulary."""

    #: the ``TfidfVectorizer`` parameters it takes
    PARAMS = frozenset({"min_df", "max_df", "max_features", "sublinear_tf", "dtype"})

    def __init__(
        self,
        terms: TermIds,
        *,
        min_df: float = 1,
        max_df: float = 1.0,
        max_features: int | None = None,
        sublinear_tf: bool = False,
        dtype: type = np.float64,
    ):
        self.terms, self.min_df, self.max_df, self.max_features = terms, min_df, max_df, max_features
        self.sublinear_tf, self.dtype = sublinear_tf, dtype
        self.vocabulary_: np.ndarray | None = None  # the kept term numbers, ascending (the columns)
        self._tfidf: TfidfTransformer | None = None

    def _matrix(self, data: list[np.ndarray], cols: list[np.ndarray], n_cols: int) -> sparse.csr_matrix:
        from scipy import sparse

        indptr = np.zeros(len(cols) + 1, dtype=np.int64)
        np.cumsum([len(c) for c in cols], out=indptr[1:])
        empty = np.zeros(0, np.int64)
        x = sparse.csr_matrix(
            (
                np.concatenate(data or [empty]).astype(self.dtype),
                np.concatenate(cols or [empty]).astype(np.int32),
                indptr.astype(np.int32),
            ),
            shape=(len(cols), n_cols),
            dtype=self.dtype,
        )
        return x

    def fit_transform(self, docs: Sequence[int]) -> sparse.csr_matrix:
        """Fit on the texts ``docs`` (positions in the :class:`TermIds`) and return their TF-IDF matrix."""
        from sklearn.feature_extraction.text import TfidfTransformer

        counted = [self.terms.counts(d) for d in docs]
        # scikit-learn numbers the terms in order of first occurrence over the documents and keeps each row's
        # entries in that order (its ``sort_indices``); the columns are the terms in ascending order
        seen = np.concatenate([t[f] for t, _, f in counted] or [np.zeros(0, np.int64)])
        vocab, first = np.unique(seen, return_index=True)
        if not len(vocab):
            raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
        order = np.empty(len(vocab), np.int64)
        order[np.argsort(first, kind="stable")] = np.arange(len(vocab))  # column -> first-occurrence number
        data, cols = [], []
        for t, n, _ in counted:
            c = np.searchsorted(vocab, t)
            by = np.argsort(order[c], kind="stable")
            cols.append(c[by])
            data.append(n[by])
        x = self._matrix(data, cols, len(vocab))
        n_doc = x.shape[0]
        high = self.max_df if isinstance(self.max_df, Integral) else self.max_df * n_doc
        low = self.min_df if isinstance(self.min_df, Integral) else self.min_df * n_doc
        if high < low:
            raise ValueError("max_df corresponds to < documents than min_df")
        dfs = np.bincount(x.indices, minlength=x.shape[1])
        mask = (dfs <= high) & (dfs >= low)
        if self.max_features is not None and mask.sum() > self.max_features:
            tfs = np.asarray(x.sum(axis=0)).ravel()
            keep = (-tfs[mask]).argsort()[: self.max_features]
            limited = np.zeros(len(dfs), dtype=bool)
            limited[np.where(mask)[0][keep]] = True
            mask = limited
        if not mask.any():
            raise ValueError("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
        new = np.cumsum(mask) - 1
        sel = [mask[c] for c in cols]
        x = self._matrix([d[s] for d, s in zip(data, sel)], [new[c[s]] for c, s in zip(cols, sel)], int(mask.sum()))
        self.vocabulary_ = vocab[mask]
        self._tfidf = TfidfTransformer(sublinear_tf=self.sublinear_tf)
        self._tfidf.fit(x)
        out: sparse.csr_matrix = self._tfidf.transform(x, copy=False)
        return out

    def transform(self, docs: Sequence[int]) -> sparse.csr_matrix:
        """The TF-IDF matrix of the texts ``docs`` on the fitted vocabulary (entries in column order)."""
        if self.vocabulary_ is None or self._tfidf is None:
            raise ValueError("the vectorizer is not fitted")
        vocab = self.vocabulary_
        data, cols = [], []
        for d in docs:
            t, n, _ = self.terms.counts(d)
            c = np.minimum(np.searchsorted(vocab, t), len(vocab) - 1)
            known = vocab[c] == t
            cols.append(c[known])
            data.append(n[known])
        out: sparse.csr_matrix = self._tfidf.transform(self._matrix(data, cols, len(vocab)), copy=False)
        return out
