"""The audit's parameters (flag AUROC, near-duplicate Jaccard, MinHash permutations, shingle size,
tiny-diff tokens, minimum train samples per class), the editions and baselines it knows, and the
word normalisation shared by the text checks.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from automonitor import vocab

if TYPE_CHECKING:
    import pandas as pd

# 2: |AUROC - 0.5| flag, within-test CV, pairwise, shared families; 3: controls apart, attributed cues;
# 4: the ladder's tiers per cell and (edition hard) the certificate; 5: small slices' AUROC intervals
AUDIT_VERSION = 5
EDITIONS: tuple[str, ...] = vocab.EDITIONS  # the one declared list
FLAG_AUROC = 0.9
JACCARD = 0.8
NUM_PERM = 64
SHINGLE = 5
TINY_DIFF_TOKENS = 3
MIN_TRAIN_PER_CLASS = 5
SYCOPHANCY = "sycophancy_bias"
BASELINES: tuple[str, ...] = ("length", "tfidf", "answer_equals_suggestion")
ALL_SOURCES = "all"
CONTROLS_PREFIX = "controls:"  # pair_id of a benign-only control sample (one side, not a pair)
WORD = re.compile(r"\w+")


def is_control(pair_ids: "pd.Series") -> "pd.Series":
    """Boolean mask of the benign-only controls among ``pair_ids`` (pair_id starts :data:`CONTROLS_PREFIX`)."""
    return pair_ids.astype(str).str.startswith(CONTROLS_PREFIX)


def norm(text: str) -> str:
    return " ".join(WORD.findall(text.lower()))


def check_edition(edition: str) -> str:
    """``edition`` if it is one of :data:`EDITIONS`, else ``InputError`` naming ``--edition``."""
    if edition not in EDITIONS:
        from automonitor.errors import InputError

        raise InputError(f"must be one of {', '.join(EDITIONS)}, got {edition!r}", field="--edition")
    return edition
