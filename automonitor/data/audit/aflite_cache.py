"""The adversarial filter's results cached on disk: :func:`cached_aflite`.

:func:`~automonitor.data.audit.aflite.aflite` fits about 140 logistic regressions and 300 TF-IDF
vocabularies per build (most of a build's CPU). Its result depends only on its inputs, so a rebuild with
the same sources and seed, a second store built from the same data, or the next ``make demo`` reads it
back instead of refitting. The key is the SHA-256 of

* the content of the ``test`` and ``train`` frames (every column the filter reads, in order),
* the seed and every field of :class:`~automonitor.data.audit.aflite.AfliteParams`,
* the source text of every module of :mod:`automonitor.data.audit` (a code change is a cache miss, with no
  version number to forget), and the installed numpy, pandas and scikit-learn versions.

One JSON file per key under ``<cache home>/aflite/`` (:func:`automonitor.data.cache_home.cache_home`),
written atomically; an unreadable or corrupt entry is recomputed, an unwritable directory only disables
the cache. A hit and a miss return the same shapes (a miss is passed through the same JSON round trip).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from automonitor.data.audit.aflite import AfliteParams, AfliteResult, aflite
from automonitor.data.cache_home import cache_home, code_digest, frame_digest, write_entry

__all__ = ["cached_aflite", "aflite_key", "cached_certify", "certify_key", "certify_cache_dir"]

_COLUMNS = ("id", "pair_id", "category", "task", "label", "request", "response", "source", "label_source", "split")


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """SHA-256 (hex) of the audit package's module sources (sorted by file name) and the versions of the
    numerical libraries the filter's results depend on."""
    return code_digest(sorted(Path(__file__).resolve().parent.glob("*.py")), ("numpy", "pandas", "scikit-learn"))


def _frame_digest(df: pd.DataFrame) -> str:
    """SHA-256 (hex) of a frame's columns of :data:`_COLUMNS` that it has (names, row order and values)."""
    return frame_digest(df[[c for c in _COLUMNS if c in df.columns]].astype(str))


def aflite_key(test: pd.DataFrame, train: pd.DataFrame, seed: int, params: AfliteParams) -> str:
    """The cache key (hex SHA-256) of one :func:`aflite` call (module doc)."""
    doc = [_code_digest(), _frame_digest(test), _frame_digest(train), int(seed), asdict(params)]
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _plain(obj: Any) -> Any:
    """JSON-ready copy: sets sorted into lists, numpy scalars as Python numbers, tuples as lists."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (set, frozenset)):
        return sorted(_plain(v) for v in obj)
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _to_doc(res: AfliteResult) -> dict[str, Any]:
    return {
        "kept_pairs": sorted(res.kept_pairs),
        "kept_controls": list(res.kept_controls),
        "steps": _plain(res.steps),
        "slices": _plain(res.slices),
        "removed_by_feature": _plain(dict(res.removed_by_feature)),
        "not_achievable": _plain(res.not_achievable),
        "rounds": int(res.rounds),
    }


def _from_doc(doc: dict[str, Any]) -> AfliteResult:
    return AfliteResult(
        kept_pairs=set(doc["kept_pairs"]),
        kept_controls=list(doc["kept_controls"]),
        steps=list(doc["steps"]),
        slices=list(doc["slices"]),
        removed_by_feature=Counter(doc["removed_by_feature"]),
        not_achievable=list(doc["not_achievable"]),
        rounds=int(doc["rounds"]),
    )


def cached_aflite(
    test: pd.DataFrame,
    train: pd.DataFrame,
    seed: int = 0,
    params: AfliteParams = AfliteParams(),
) -> tuple[AfliteResult, bool]:
    """:func:`~automonitor.data.audit.aflite.aflite` through the disk cache (module doc).

    Args: as :func:`aflite`.
    Returns:
        ``(result, hit)``: the :class:`AfliteResult` and whether it came from the cache.
    Raises:
        ValueError as :func:`aflite` (a missing column).
    """
    key = aflite_key(test, train, seed, params)
    path = cache_home() / "aflite" / f"{key}.json"
    if path.is_file():
        try:
            return _from_doc(json.loads(path.read_text(encoding="utf-8"))), True
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a corrupt entry is recomputed and overwritten
    doc = json.loads(json.dumps(_to_doc(aflite(test, train, seed, params))))
    write_entry(path, doc)
    return _from_doc(doc), False


# ------------------------------------------------------------------------------------------- certificates


def certify_cache_dir() -> Path:
    """``<cache home>/certify`` (not created here)."""
    return cache_home() / "certify"


def certify_key(frame: pd.DataFrame, scores: dict[str, Any], seed: int) -> str:
    """The cache key (hex SHA-256) of one :func:`~automonitor.data.audit.certify.certify` call: the frame's
    columns (:data:`_COLUMNS` and ``meta``, which model identity reads), every precomputed score array by
    name, the seed, the audit package's code and library versions, and which in-slice detectors cannot run
    here (the MiniLM probe without the ``train`` extra)."""
    from automonitor.data.audit.certify import certify_unavailable

    h = hashlib.sha256(_frame_digest(frame).encode())
    if "meta" in frame.columns:
        meta = frame["meta"].map(lambda m: json.dumps(m, sort_keys=True, default=str))
        h.update(pd.util.hash_pandas_object(meta, index=False).to_numpy().tobytes())
    for name in sorted(scores):
        h.update(name.encode() + b"\0" + np.ascontiguousarray(scores[name], dtype=float).tobytes())
    doc = ["certify", _code_digest(), h.hexdigest(), int(seed), certify_unavailable()]
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def cached_certify(frame: pd.DataFrame, scores: dict[str, Any], seed: int = 0) -> list[dict[str, Any]]:
    """:func:`~automonitor.data.audit.certify.certify` (default band and sizes) through the disk cache: a
    rebuild of the same data reads the slices back instead of refitting the in-slice probes (a third of a
    warm build). Same shapes on a hit and a miss (JSON round trip); a corrupt entry is recomputed, an
    unwritable directory only disables the cache."""
    from automonitor.data.audit.certify import certify

    path = certify_cache_dir() / f"{certify_key(frame, scores, seed)}.json"
    if path.is_file():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(doc, list):
                return doc
        except (OSError, ValueError):
            pass
    out: list[dict[str, Any]] = json.loads(json.dumps(_plain(certify(frame, scores, seed))))
    write_entry(path, out)
    return out
