"""Each text's n-grams taken once for every TF-IDF fit over it: :class:`TermIds`.

A cross-validated TF-IDF probe (the certificate's ``char_ngram_cv``, the ladder's probes on a cell without
train data) fits a fresh ``TfidfVectorizer`` per fold, so scikit-learn's analyzer ran on every text once per
fold it is in (five or six times), and the certificate scores each row in two slices (its source's and its
cell's): most of the probes' time was making the same n-grams again. :class:`TermIds` runs the vectorizer's
own analyzer once per distinct text and numbers the terms in their sorted order; the vectorizer is then given
text *numbers* as documents and an analyzer (:meth:`TermIds.analyzer`) that returns a text's term numbers in
the order the original analyzer gave its terms.

scikit-learn does the rest unchanged (counting, ``min_df``, ``max_features``, the TF-IDF weights): a term
number stands for its term, numbers compare as their terms do (sorted vocabulary, the same columns, the same
``max_features`` choice) and each document lists its terms in the same order, so the matrices are the same
arrays entry for entry and the scores the same floats (``tests/data/test_term_ids.py`` compares them with the
plain vectorizer's).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

if TYPE_CHECKING:
    from sklearn.feature_extraction.text import TfidfVectorizer

__all__ = ["TermIds"]


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

    def __len__(self) -> int:
        return len(self._slot)

    def analyzer(self, doc: int) -> list[int]:
        """The term numbers of text ``doc`` (its position in ``texts``), in the analyzer's order."""
        out: list[int] = self._ids[self._slot[doc]].tolist()
        return out

    def vectorizer(self, **params: object) -> TfidfVectorizer:
        """A ``TfidfVectorizer`` with ``params`` (no ``analyzer``, ``ngram_range`` or ``lowercase``: the
        analysis is done) over text numbers."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        return TfidfVectorizer(analyzer=self.analyzer, **params)
