"""Held-out certification of a paired test set: no held-out detector separates any slice.

A set selected against one family of detectors (the ``hard`` edition: :mod:`automonitor.data.build.hard`)
can still be separable by a feature that family does not read. :func:`certify` scores every slice (one per
category x task x source and one per category x task cell) with detectors the selection never used and
certifies the slice when each one's AUROC lies within ``0.5 +/- BAND`` (:data:`BAND` = 0.15).

* Every slice gets each detector's AUROC with a 95% percentile interval from a bootstrap over *requests*
  (pairs sharing a request are resampled together: :data:`N_BOOT` resamples, seeded), the number of pairs
  and the effective n (distinct requests).
* A slice with at least :data:`MIN_PAIRS` pairs (15) is ``certified`` or
  ``not_certified`` (naming the detectors outside the band); a smaller slice is ``small``: its intervals are
  reported, it is not judged.
* Besides the precomputed scores passed in, three detectors are computed on the slice itself:
  ``minilm_cv`` (all-MiniLM-L6-v2 embeddings of the response + logistic regression, cross-validated within
  the slice like ``char_ngram_cv``; left out, and named by :func:`certify_unavailable`, where the ``train``
  extra is not installed),
  ``char_ngram_cv`` (character 3-5-gram TF-IDF + logistic regression, :data:`FOLDS`-fold cross-validation
  within the slice grouped by request: a separator a fresh model finds in the slice alone) and
  ``model_identity`` (where ``meta.model`` names the writer of both sides of most pairs: each sample scores
  the share of misbehavior among the other requests' samples by the same model).

AUROC: the Mann-Whitney statistic (equal to ``sklearn.metrics.roc_auc_score``), misbehavior positive.
Deterministic for a seed.
"""

from __future__ import annotations

import hashlib
import random
from collections import OrderedDict
from typing import Any, Callable

import numpy as np
import pandas as pd

from automonitor.data.audit.tokens import TermIds
from automonitor.ranks import auc_by_ranks

BAND = 0.15
MIN_PAIRS = 15
N_BOOT = 200
FOLDS = 5
ALL = "all"


def auroc_interval(
    groups: np.ndarray, y: np.ndarray, s: np.ndarray, seed: int = 0, n_boot: int = N_BOOT
) -> tuple[float | None, float | None, float | None]:
    """``(AUROC, low, high)``: the AUROC of scores ``s`` for labels ``y`` (1 = misbehavior; NaN scores left
    out) and its 95% percentile interval from ``n_boot`` bootstrap resamples of the clusters ``groups``
    (rows of a cluster are drawn together). ``(None, None, None)`` with one class only.

    A resample is a vector of cluster multiplicities, so every resample's AUROC is the weighted
    Mann-Whitney statistic over the distinct scores, computed for all resamples at once: the same values as
    concatenating the drawn rows and ranking them (``tests/data/test_certify_auc.py`` keeps that loop as
    the reference), the same seeded draws."""
    a = auc_by_ranks(y, s)
    if a is None:
        return None, None, None
    uniq = sorted(set(groups.tolist()))
    pos = {g: i for i, g in enumerate(uniq)}
    rng = random.Random(f"automonitor:{seed}:certify")
    draws = np.array([[rng.randrange(len(uniq)) for _ in uniq] for _ in range(n_boot)], dtype=np.int64)
    counts = np.zeros((n_boot, len(uniq)))
    np.add.at(counts, (np.arange(n_boot)[:, None], draws), 1.0)
    ok = ~np.isnan(s)
    cluster = np.array([pos[g] for g in groups.tolist()], dtype=np.int64)[ok]
    yy, ss = np.asarray(y)[ok] != 0, s[ok]
    w = counts[:, cluster]  # (n_boot, rows): each row's weight in each resample
    _, inv = np.unique(ss, return_inverse=True)
    n_u = int(inv.max()) + 1
    pw = np.zeros((n_u, n_boot))
    nw = np.zeros((n_u, n_boot))
    np.add.at(pw, inv[yy], w[:, yy].T)
    np.add.at(nw, inv[~yy], w[:, ~yy].T)
    below = np.cumsum(nw, axis=0) - nw  # negative weight strictly below each distinct score
    num = (pw * (below + 0.5 * nw)).sum(axis=0)
    w1, w0 = pw.sum(axis=0), nw.sum(axis=0)
    valid = (w1 > 0) & (w0 > 0)
    if not valid.any():
        return a, None, None
    boots = num[valid] / (w1[valid] * w0[valid])
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return a, float(lo), float(hi)


def char_ngram_cv(te: pd.DataFrame, groups: np.ndarray, terms: TermIds | None = None) -> np.ndarray | None:
    """Out-of-fold P(misbehavior) of a character 3-5-gram TF-IDF + logistic regression within ``te`` alone
    (:data:`FOLDS` folds grouped by ``groups``); ``None`` with fewer groups than folds or one class in a fold.
    ``terms``: the n-grams of every row of the frame ``te`` is a slice of (:func:`char_terms`; ``te.index``
    addresses them), so each response is analysed once for all folds and slices (the same matrices)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    if len(set(groups.tolist())) < FOLDS:
        return None
    y = (te["label"] == "misbehavior").to_numpy(dtype=int)
    if terms is None:
        terms = char_terms(te["response"])
        docs = list(range(len(te)))
    else:
        docs = te.index.tolist()
    out = np.full(len(te), np.nan)
    for tr, ts in GroupKFold(n_splits=FOLDS).split(docs, y, groups):
        if y[tr].min() == y[tr].max():
            return None
        vec = terms.vectorizer(min_df=2, sublinear_tf=True, max_features=30_000)
        try:
            x = vec.fit_transform([docs[i] for i in tr])
        except ValueError:
            return None
        lr = LogisticRegression(max_iter=2000, solver="liblinear", random_state=0).fit(x, y[tr])
        out[ts] = lr.predict_proba(vec.transform([docs[i] for i in ts]))[:, 1]
    return out


def char_terms(responses: pd.Series) -> TermIds:
    """The character 3-5-grams (``char_wb``, lower-cased) of the first 6,000 characters of each response, as
    :func:`char_ngram_cv`'s vectorizer makes them (:class:`~automonitor.data.audit.tokens.TermIds`)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    analyze = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5)).build_analyzer()
    return TermIds(analyze, [t[:6000] for t in responses.astype(str)])


def minilm_cv(te: pd.DataFrame, groups: np.ndarray) -> np.ndarray | None:
    """Out-of-fold P(misbehavior) of MiniLM embeddings (first 400 characters of the response) + logistic
    regression within ``te`` (:data:`FOLDS` folds grouped by ``groups``); ``None`` when the encoder is not
    installed, with fewer groups than folds or one class in a fold."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    from automonitor.data.minilm import encode, unavailable

    if unavailable() or len(set(groups.tolist())) < FOLDS:
        return None
    y = (te["label"] == "misbehavior").to_numpy(dtype=int)
    x = encode([t[:400] for t in te["response"].astype(str)], max_seq_length=96)  # each distinct text once
    out = np.full(len(te), np.nan)
    for tr, ts in GroupKFold(n_splits=FOLDS).split(x, y, groups):
        if y[tr].min() == y[tr].max():
            return None
        lr = LogisticRegression(max_iter=2000, solver="liblinear", random_state=0).fit(x[tr], y[tr])
        out[ts] = lr.predict_proba(x[ts])[:, 1]
    return out


def certify_unavailable() -> dict[str, str]:
    """``{detector: why}`` for the in-slice detectors that cannot run here (``minilm_cv`` without the
    ``train`` extra)."""
    from automonitor.data.minilm import unavailable

    why = unavailable()
    return {"minilm_cv": why} if why else {}


def model_identity(te: pd.DataFrame, groups: np.ndarray) -> np.ndarray | None:
    """Leave-one-request-out share of misbehavior samples written by each sample's model (``meta.model``);
    ``None`` when fewer than half the samples name their model."""
    models = te["meta"].map(lambda m: (m or {}).get("model") if isinstance(m, dict) else None)
    if models.notna().sum() < len(te) / 2 or models.nunique() < 2:
        return None
    y = (te["label"] == "misbehavior").to_numpy(dtype=float)
    out = np.full(len(te), np.nan)
    mods = models.to_numpy()
    for i in range(len(te)):
        if mods[i] is None:
            continue
        same = (mods == mods[i]) & (groups != groups[i])
        out[i] = float(y[same].mean()) if same.any() else 0.5
    return out


def certify(
    frame: pd.DataFrame,
    scores: dict[str, np.ndarray],
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Certify every slice of ``frame`` against the held-out detectors (module doc).

    Args:
        frame: paired samples (no controls) with columns pair_id, category, task, source, label, request,
            response and (optional) meta.
        scores: ``{detector: scores aligned with frame rows}`` (NaN where the detector does not apply).
        seed: bootstrap and nothing else.
    Returns:
        One dict per slice: ``slice`` (``cat/task`` or ``cat/task/source``), ``kind`` (``source`` | ``cell``),
        ``source``, ``category``, ``task``, ``pairs``, ``effective_n`` (distinct requests), ``detectors``
        ``{name: {"auroc", "low", "high"}}``, ``status`` (``certified`` | ``not_certified`` | ``small`` |
        ``empty``) and ``outside`` (detectors whose AUROC is outside ``0.5 +/- BAND``, judged slices only).
    """
    frame = frame.reset_index(drop=True)
    if "meta" not in frame.columns:
        frame = frame.assign(meta=[{}] * len(frame))
    keys = sorted({("source", s, c, t) for c, t, s in zip(frame["category"], frame["task"], frame["source"])})
    keys += sorted({("cell", ALL, c, t) for _, _, c, t in keys})
    probes = _SliceProbes(frame)
    out = []
    for kind, src, cat, task in keys:
        m = (frame["category"] == cat) & (frame["task"] == task)
        if kind == "source":
            m &= frame["source"] == src
        te = frame[m]
        idx = te.index.to_numpy()
        # each row's cluster: its request text (pairs sharing a request form one cluster)
        groups = te["request"].astype(str).map(lambda r: hashlib.sha1(r.encode("utf-8")).hexdigest()).to_numpy()
        y = (te["label"] == "misbehavior").to_numpy(dtype=int)
        pairs = int(te["pair_id"].nunique())
        here = {k: np.asarray(v, dtype=float)[idx] for k, v in scores.items()}
        for name, fn in (
            ("char_ngram_cv", char_ngram_cv),
            ("minilm_cv", minilm_cv),
            ("model_identity", model_identity),
        ):
            s = probes.score(name, fn, te, groups) if len(te) else None
            if s is not None:
                here[name] = s
        dets: dict[str, dict[str, float | None]] = {}
        for name, s in here.items():
            if np.isnan(s).all():
                continue
            a, lo, hi = auroc_interval(groups, y, s, seed)
            if a is not None:
                dets[name] = {"auroc": round(a, 4), "low": _r(lo), "high": _r(hi)}
        outside = sorted(n for n, d in dets.items() if abs(float(d["auroc"] or 0.5) - 0.5) > BAND + 1e-12)
        status = "empty" if not pairs else "small" if pairs < MIN_PAIRS else "not_certified" if outside else "certified"
        out.append(
            {
                "slice": f"{cat}/{task}" + ("" if kind == "cell" else f"/{src}"),
                "kind": kind,
                "source": src,
                "category": cat,
                "task": task,
                "pairs": pairs,
                "effective_n": int(len(set(groups.tolist()))),
                "detectors": dets,
                "status": status,
                "outside": outside if status != "small" else [],
            }
        )
    return out


class _SliceProbes:
    """The in-slice detectors of one :func:`certify` call: the character n-grams of the frame's responses
    taken once (:func:`char_terms`, when a slice first needs them), and each detector's scores kept by what
    they are a function of (the slice's responses, labels and request clusters), so a cell holding one
    source's rows, or a slice :func:`certify` scores again on the next call, is not refitted. Process-wide,
    the :data:`_KEEP` most recent."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame
        self.terms: TermIds | None = None

    def score(self, name: str, fn: Callable[..., np.ndarray | None], te: pd.DataFrame, groups: np.ndarray):
        if name == "model_identity":  # cheap, and reads meta
            return fn(te, groups)
        cut = 6000 if name == "char_ngram_cv" else 400
        content = hashlib.blake2b(digest_size=20)  # (a digest, so the kept keys do not hold the texts)
        for t in te["response"].astype(str):
            b = t[:cut].encode("utf-8", "surrogatepass")
            content.update(len(b).to_bytes(8, "little") + b)
        content.update(repr((te["label"].astype(str).tolist(), groups.tolist())).encode())
        key = (fn, certify_unavailable().get(name), content.digest())
        if key in _SCORES:
            _SCORES.move_to_end(key)
            got = _SCORES[key]
            return None if got is None else got.copy()
        if name == "char_ngram_cv":
            if self.terms is None:
                self.terms = char_terms(self.frame["response"])
            s = fn(te, groups, self.terms)
        else:
            s = fn(te, groups)
        _SCORES[key] = None if s is None else s.copy()
        while len(_SCORES) > _KEEP:
            _SCORES.popitem(last=False)
        return s


_KEEP = 128
_SCORES: OrderedDict[tuple[object, ...], np.ndarray | None] = OrderedDict()


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 4)
