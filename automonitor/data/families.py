"""Problem families: pairs that are versions of one problem, so that a whole family
sits on one side of the train/test split.

Two pairs are in one family when (connected components of, union-find):

* **problem versions**: both requests say "This is the easy / hard / ... version of the problem" and,
  with those version paragraphs removed (:func:`version_stem`), their statements share at least
  :data:`VERSION_JACCARD` of their word :data:`SHINGLE`-shingles (exact Jaccard; versions differ in
  their limits, so the bar is lower than for paraphrases): Codeforces easy/hard pairs;
* **one function at two commits**: the same repository (from ``meta.commit_link``
  ``github.com/<owner>/<repo>/commit/...``), file (``meta.file_name``) and function
  (``meta.func_name``, not ``(anonymous)``): SafeCoder/SVEN fixes of one function, across sources;
* **paraphrased requests**: MinHash (``datasketch``, :data:`NUM_PERM` permutations, CRC32 of lower-cased
  word :data:`SHINGLE`-shingles, so the result is the same in every process) over the request with the
  lines a source repeats in more than :data:`BOILERPLATE_DF` requests removed (few-shot examples,
  instruction templates: shared text is no paraphrase), ``MinHashLSH`` at Jaccard >= :data:`JACCARD`
  within a source, each candidate pair re-checked on its estimated Jaccard; requests with fewer than
  :data:`SHINGLE` words after that are left out of this rule.

Pure over :class:`~automonitor.data.sources.SourcePair`; :mod:`automonitor.data.build.selection` drops a train
pair whose family has a pair in the test set or the candidate pool.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from typing import Sequence

from automonitor.data.sources import SourcePair

VERSION_JACCARD = 0.5
NUM_PERM = 64
SHINGLE = 3
JACCARD = 0.8
BOILERPLATE_DF = 5

_VERSION = re.compile(r"(?i)\bthis is the \w+ version of (?:the|this) problem\b")
_VERSION_PARA = re.compile(r"(?i)\bversions?\b.*\b(easy|hard|differ|hack)|\b(easy|hard|extreme) version\b")
_REPO = re.compile(r"github\.com/([^/\s]+/[^/\s]+)/commit/")


def version_stem(request: str) -> str | None:
    """The problem statement of a request that names its version ("This is the easy version of the
    problem"): the request without "Problem:" and its version paragraphs, whitespace-collapsed,
    lower-cased; ``None`` for a request naming no version."""
    if not _VERSION.search(request):
        return None
    text = request.strip().removeprefix("Problem:")
    paras = [p for p in re.split(r"\n\s*\n", text) if p.strip() and not _VERSION_PARA.search(p)]
    stem = " ".join(" ".join(paras).split()).lower()
    return stem or None


def function_key(p: SourcePair) -> str | None:
    """``repo|file|function`` of a vulnerable/fixed code pair, or ``None`` without all three."""
    m = _REPO.search(str(p.meta.get("commit_link") or ""))
    file_name, func = p.meta.get("file_name"), p.meta.get("func_name")
    if not m or not file_name or not func or str(func).startswith("("):
        return None
    return f"{m.group(1).lower()}|{file_name}|{func}"


def _shingles(text: str) -> set[str]:
    words = re.findall(r"\w+", text.lower())
    return {" ".join(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def _strip_boilerplate(requests: Sequence[str]) -> list[str]:
    """Each request without the lines that more than :data:`BOILERPLATE_DF` requests of the list share."""
    df: Counter[str] = Counter()
    split = [[" ".join(line.split()) for line in r.splitlines()] for r in requests]
    for lines in split:
        df.update({line for line in lines if line})
    return ["\n".join(line for line in lines if line and df[line] <= BOILERPLATE_DF) for lines in split]


def _paraphrase_edges(requests: Sequence[str]) -> list[tuple[int, int]]:
    """Index pairs of ``requests`` (one source) whose estimated Jaccard is >= :data:`JACCARD`."""
    from datasketch import MinHash, MinHashLSH

    texts = _strip_boilerplate(requests)
    lsh = MinHashLSH(threshold=JACCARD, num_perm=NUM_PERM)
    template = MinHash(num_perm=NUM_PERM, seed=1, hashfunc=zlib.crc32)
    perms = template.permutations
    sigs: dict[int, MinHash] = {}
    by_text: dict[str, int] = {}
    edges: list[tuple[int, int]] = []
    for i, t in enumerate(texts):
        sh = _shingles(t)
        if not sh:
            continue
        key = " ".join(sorted(sh))
        if key in by_text:  # the same shingles: Jaccard 1, no need to hash again
            edges.append((by_text[key], i))
            continue
        by_text[key] = i
        # seed 1's permutations drawn once, not per request (a third of this function)
        m = MinHash(num_perm=NUM_PERM, seed=1, hashfunc=zlib.crc32, permutations=perms, scheme=template.scheme)
        m.update_batch([s.encode("utf-8") for s in sh])
        edges.extend((j, i) for j in lsh.query(m) if sigs[j].jaccard(m) >= JACCARD)
        lsh.insert(i, m)
        sigs[i] = m
    return edges


def families(pairs: Sequence[SourcePair]) -> list[int]:
    """The family index of each pair (0..k-1, numbered by first appearance; module doc for the rules).

    Args:
        pairs: every pair of the build, any sources.
    Returns:
        One family index per pair, in the order of ``pairs``.
    """
    from scipy.cluster.hierarchy import DisjointSet  # here, not at import: scipy.cluster costs ~0.5 s

    sets = DisjointSet(range(len(pairs)))  # union-find (scipy)
    union = sets.merge

    first: dict[str, int] = {}
    versions: list[tuple[int, set[str]]] = []
    for i, p in enumerate(pairs):
        stem = version_stem(p.request)
        if stem:
            sh = _shingles(stem)
            for j, other in versions:
                if sh and len(sh & other) >= VERSION_JACCARD * len(sh | other):
                    union(i, j)
            versions.append((i, sh))
        key = function_key(p)
        if key is None:
            continue
        if key in first:
            union(i, first[key])
        else:
            first[key] = i
    by_source: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        by_source.setdefault(p.source, []).append(i)
    for idx in by_source.values():
        for a, b in _paraphrase_edges([pairs[i].request for i in idx]):
            union(idx[a], idx[b])
    ids: dict[int, int] = {}
    return [ids.setdefault(sets[i], len(ids)) for i in range(len(pairs))]


def shared_families(family: dict[str, int], train: set[str], test: set[str]) -> set[int]:
    """Families (values of ``family``: pair_id -> family) with a pair in both ``train`` and ``test``."""
    fam_train = {family[p] for p in train if p in family}
    return {family[p] for p in test if p in family} & fam_train
