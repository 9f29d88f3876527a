"""Splits and leakage: the train/test/controls frames of an audit, MinHash near-duplicates, shared
Human/Assistant conversations and tiny-diff pairs of test against train (:class:`Leakage`).
"""

from __future__ import annotations

import bisect
from collections import Counter
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from automonitor.data.audit.params import JACCARD, NUM_PERM, SHINGLE, TINY_DIFF_TOKENS, WORD, norm
from automonitor.data.families import families
from automonitor.data.gates import code_tokens, few_tokens_differ
from automonitor.data.sources import SourcePair
from automonitor.vocab import CONTROLS_SPLIT, NEGATIVE, POSITIVE


_word_hash_cache: dict[str, int] = {}


def _shingle_hashes(text: str, k: int = SHINGLE) -> np.ndarray:
    """Unique 32-bit hashes of the lower-cased word ``k``-shingles of ``text`` (the whole text is one
    shingle when shorter than ``k`` words; empty text gives an empty array). Word hashes are CRC-32,
    combined per shingle with a polynomial hash: deterministic across processes."""
    words = WORD.findall(text.lower())
    if not words:
        return np.zeros(0, dtype=np.uint64)
    cache = _word_hash_cache
    wh = np.fromiter(
        (cache.get(w) or cache.setdefault(w, zlib.crc32(w.encode()) or 1) for w in words),
        dtype=np.uint64,
        count=len(words),
    )
    if len(wh) < k:
        k = len(wh)
    h = np.zeros(len(wh) - k + 1, dtype=np.uint64)
    for j in range(k):  # wraps modulo 2**64: NumPy checks no overflow on arrays (an errstate here cost more)
        h = h * np.uint64(1_000_003) + wh[j : len(wh) - k + 1 + j]
    return np.unique(h & np.uint64(0xFFFFFFFF))


def near_duplicates(
    train_texts: list[str], test_texts: list[str], *, threshold: float = JACCARD, num_perm: int = NUM_PERM
) -> list[tuple[int, int, float]]:
    """Near-duplicate (test index, train index, estimated Jaccard) triples between two lists of texts.

    MinHash signatures (``datasketch.MinHash``, ``num_perm`` permutations, seed 1) over word
    :data:`SHINGLE`-shingles (:func:`_shingle_hashes`); candidates from ``datasketch.MinHashLSH`` at
    ``min(threshold, 0.8)``, kept when their estimated Jaccard similarity is >= ``threshold``. Empty texts never
    match. Raises ``ValueError`` for a threshold outside (0, 1]."""
    from datasketch import MinHash, MinHashLSH

    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    ident = int

    def sigs(texts: list[str]) -> list[MinHash | None]:
        hs = [_shingle_hashes(t) for t in texts]
        nonempty = [i for i, h in enumerate(hs) if len(h)]
        mhs = MinHash.bulk([hs[i].tolist() for i in nonempty], num_perm=num_perm, hashfunc=ident)
        out: list[MinHash | None] = [None] * len(texts)
        for i, m in zip(nonempty, mhs):
            out[i] = m
        return out

    if not train_texts or not any(t.strip() for t in test_texts):
        return []
    tr, te = sigs(train_texts), sigs(test_texts)
    # LSH finds candidates (its banding cannot be tuned above ~0.9 with few permutations); the estimated
    # Jaccard of each candidate decides
    lsh = MinHashLSH(threshold=min(threshold, 0.8), num_perm=num_perm)
    for i, m in enumerate(tr):
        if m is not None:
            lsh.insert(i, m, check_duplication=False)
    out: list[tuple[int, int, float]] = []
    for i, m in enumerate(te):
        if m is None:
            continue
        for j in lsh.query(m):
            jac = float(m.jaccard(tr[j]))  # type: ignore[union-attr]
            if jac >= threshold:
                out.append((i, int(j), jac))
    return out


_TURN = re.compile(r"(?:^|\n+)\s*(Human|Assistant|H|A)\s*:\s*")


def dialogue_turns(request: str, response: str) -> list[tuple[str, str]] | None:
    """The Human/Assistant turns of a hh_rlhf-style sample (request = dialogue so far, response = the
    final assistant turn), each ``(role, normalised text)``; ``None`` when the request is not such a
    dialogue (it must start with a ``Human:`` turn)."""
    if not re.match(r"\s*(?:Human|H)\s*:", request):
        return None
    parts = _TURN.split(request)
    turns = [("human" if role[0] == "H" else "assistant", norm(text)) for role, text in zip(parts[1::2], parts[2::2])]
    if turns and turns[-1][0] == "assistant" and not turns[-1][1]:
        turns[-1] = ("assistant", norm(response))
    else:
        turns.append(("assistant", norm(response)))
    return turns


def shared_conversations(train: list[tuple[str, str]], test: list[tuple[str, str]]) -> list[int]:
    """Indices of ``test`` dialogues (``(request, response)``) that share a conversation with a ``train``
    dialogue: the same first human turn, or one full dialogue (request + response, normalised) is a prefix
    of the other. Non-dialogue samples (see :func:`dialogue_turns`) never match."""

    def flat(turns):
        return "\n".join(f"{r}: {t}" for r, t in turns)

    first: set[str] = set()
    full: list[str] = []
    for req, resp in train:
        t = dialogue_turns(req, resp)
        if t is None:
            continue
        first.update(x for r, x in t[:1] if r == "human")
        full.append(flat(t))
    full.sort()
    full_set = set(full)
    out: list[int] = []
    for i, (req, resp) in enumerate(test):
        t = dialogue_turns(req, resp)
        if t is None:
            continue
        if t[0][0] == "human" and t[0][1] in first:
            out.append(i)
            continue
        s = flat(t)
        k = bisect.bisect_left(full, s)
        if k < len(full) and full[k].startswith(s):  # a train dialogue continues this test dialogue
            out.append(i)
            continue
        if any(flat(t[:n]) in full_set for n in range(1, len(t))):  # this one continues a train dialogue
            out.append(i)
    return out


def tiny_diff_pairs(test: pd.DataFrame, limit: int = TINY_DIFF_TOKENS) -> set[str]:
    """``pair_id`` of the test pairs whose misbehavior and benign responses differ by <= ``limit`` tokens.

    ``difflib`` (:func:`automonitor.data.gates._diff`) runs only on the pairs that can be that close:
    its count is at least ``max(len(a), len(b))`` minus the tokens the two sides share as multisets (each
    equal block matches equal tokens one to one; a non-equal block counts its longer side), so a pair above
    ``limit`` by that bound is above it by the diff too (the diff was 60% of a cold audit's leakage checks).
    It runs through :func:`automonitor.data.gates.few_tokens_differ` (the build's gate): the common prefix
    and suffix are skipped first, so two long responses that differ at one end never reach ``difflib`` whole
    (a pair of 1 MB responses held ``automonitor report`` for over ten minutes in a quadratic diff)."""
    out: set[str] = set()
    sides = test[test["label"].isin([POSITIVE, NEGATIVE])]
    by_pair: dict[object, list[tuple[object, str]]] = {}
    for pid, label, response in zip(sides["pair_id"], sides["label"], sides["response"]):
        if not pd.isna(pid):
            by_pair.setdefault(pid, []).append((label, response))
    for pid, rows in by_pair.items():
        if len(rows) != 2 or rows[0][0] == rows[1][0]:
            continue
        a, b = rows[0][1], rows[1][1]
        ta, tb = code_tokens(a), code_tokens(b)
        if abs(len(ta) - len(tb)) > limit:
            continue
        if max(len(ta), len(tb)) - sum((Counter(ta) & Counter(tb)).values()) > limit:
            continue
        if few_tokens_differ(a, b, limit):  # difflib on the middle only: not on a long shared prefix/suffix
            out.add(str(pid))
    return out


def leakage_doc(leakage: Leakage) -> dict[str, Any]:
    """The document's ``leakage``: test pairs with a near-duplicate / a shared conversation, test samples
    with a near-duplicate, and how both were found."""
    return {
        "near_duplicate_pairs": len(leakage.duplicate_pairs),
        "shared_conversations": len(leakage.shared_pairs),
        "shared_family_pairs": len(leakage.family_pairs),
        "near_duplicate_samples": len({i for i, _, _ in leakage.duplicates}),
        "method": {
            "near_duplicate": f"MinHash ({NUM_PERM} permutations) over lower-cased word {SHINGLE}-shingles "
            f"of request + response, MinHashLSH, estimated Jaccard >= {JACCARD}",
            "shared_conversations": "same first human turn, or one dialogue a prefix of the other",
            "shared_families": "automonitor.data.families: problem versions, one function at two commits "
            "(repo+file+function), paraphrased requests (MinHash, Jaccard >= 0.8)",
        },
    }


def audit_splits(samples: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(train, test, controls)`` frames (indexes 0..n-1) of the labelled train/test rows and the
    controls rows; text columns as str (missing = ""), ``label_source`` ``user`` when the column is
    absent. Raises ``ValueError`` when a required column is missing."""
    need = {"id", "pair_id", "category", "task", "label", "request", "response", "source", "split"}
    missing = need - set(samples.columns)
    if missing:
        raise ValueError(f"samples frame lacks column(s) {sorted(missing)}")
    df = samples.copy()
    if "label_source" not in df:
        df["label_source"] = "user"
    for c in ("request", "response", "source"):
        df[c] = df[c].fillna("").astype(str)
    df = df.reset_index(drop=True)
    labelled = df["label"].isin([POSITIVE, NEGATIVE])
    train = df[(df["split"] == "train") & labelled].reset_index(drop=True)
    test = df[(df["split"] == "test") & labelled].reset_index(drop=True)
    controls = df[df["split"] == CONTROLS_SPLIT].reset_index(drop=True)
    return train, test, controls


@dataclass
class Leakage:
    """Leakage of train into test: ``duplicates`` (test index, train index, Jaccard) near-duplicates;
    the pair ids of test pairs with a near-duplicate, sharing a conversation with train, or whose two
    sides differ by at most TINY_DIFF_TOKENS tokens."""

    duplicates: list[tuple[int, int, float]]
    duplicate_pairs: set[str]
    shared_pairs: set[str]
    tiny_pairs: set[str]
    family_pairs: set[str] = field(default_factory=set)


def shared_family_pairs(train: pd.DataFrame, test: pd.DataFrame) -> set[str]:
    """``pair_id`` of the test pairs in a problem family (:func:`automonitor.data.families.families`:
    versions of one problem, one function at two commits, paraphrased requests) that also has a train
    pair; one record per pair (its first row: request, source, ``meta``)."""
    if train.empty or test.empty:  # no family can hold a train pair and a test pair
        return set()
    recs: list[SourcePair] = []
    sides: list[str] = []
    for part, frame in (("train", train), ("test", test)):
        firsts = frame[frame["pair_id"].notna()].drop_duplicates("pair_id")  # groupby's first row, in its order
        metas = firsts["meta"].tolist() if "meta" in frame.columns else [None] * len(firsts)
        for pid, src, cat, task, req, meta in zip(
            firsts["pair_id"], firsts["source"], firsts["category"], firsts["task"], firsts["request"], metas
        ):
            recs.append(
                SourcePair(
                    source=str(src),
                    pair_id=str(pid),
                    category=str(cat),
                    task=str(task),
                    request=str(req),
                    misbehavior="",
                    benign="",
                    mis_file="",
                    ben_file="",
                    mis_record="",
                    ben_record="",
                    meta=meta if isinstance(meta, dict) else {},
                )
            )
            sides.append(part)
    fam = families(recs)
    in_train = {f for f, side in zip(fam, sides) if side == "train"}
    return {r.pair_id for r, f, side in zip(recs, fam, sides) if side == "test" and f in in_train}


def find_leakage(train: pd.DataFrame, test: pd.DataFrame) -> Leakage:
    """Near-duplicates (request + response, Jaccard >= :data:`JACCARD`), shared conversations and tiny-diff
    pairs over the whole test set, attributed to pairs."""
    dup = near_duplicates(
        (train["request"] + "\n" + train["response"]).tolist(), (test["request"] + "\n" + test["response"]).tolist()
    )
    shared_idx = shared_conversations(
        list(zip(train["request"], train["response"])), list(zip(test["request"], test["response"]))
    )
    return Leakage(
        duplicates=list(dup),
        duplicate_pairs={str(test.at[i, "pair_id"]) for i, _, _ in dup},
        shared_pairs={str(test.at[i, "pair_id"]) for i in shared_idx},
        tiny_pairs=tiny_diff_pairs(test),
        family_pairs=shared_family_pairs(train, test),
    )
