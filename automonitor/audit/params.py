"""The audit's parameters (flag AUROC, near-duplicate Jaccard, MinHash permutations, shingle size,
tiny-diff tokens, minimum train samples per class), the editions and baselines it knows, and the
word normalisation shared by the text checks.
"""

from __future__ import annotations

import re

from automonitor.vocab import EDITIONS as VOCAB_EDITIONS


AUDIT_VERSION = 1
EDITIONS: tuple[str, ...] = VOCAB_EDITIONS
FLAG_AUROC = 0.9
JACCARD = 0.8
NUM_PERM = 64
SHINGLE = 5
TINY_DIFF_TOKENS = 3
MIN_TRAIN_PER_CLASS = 5
SYCOPHANCY = "sycophancy_bias"
BASELINES: tuple[str, ...] = ("length", "tfidf", "answer_equals_suggestion")
ALL_SOURCES = "all"
_WORD = re.compile(r"\w+")


def _norm(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))
