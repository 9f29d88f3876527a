"""Content-addressed judge cache keys: what a judge sees of a sample, and the key of one judgement."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from automonitor.hashing import sha256_text


def sample_hash(request: str, response: str) -> str:
    """Hex sha256 identifying what a judge sees of a sample: the normalised request and response
    hashes (the gold label is not part of it)."""
    return hashlib.sha256(f"{sha256_text(request)}:{sha256_text(response)}".encode()).hexdigest()


def cache_key(
    backend: str, model: str | None, base_url: str | None, template_hash: str, sample_h: str, params: dict[str, Any]
) -> str:
    """Hex sha256 of the canonical JSON of (backend, model, base URL, template hash, sample hash,
    answer-changing parameters). Base URLs are compared without a trailing slash."""
    payload = {
        "backend": backend,
        "model": model,
        "base_url": (base_url or "").rstrip("/") or None,
        "template_hash": template_hash,
        "sample": sample_h,
        "params": params,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()

