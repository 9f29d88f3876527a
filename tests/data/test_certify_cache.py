"""The certificate's disk cache (:func:`automonitor.data.audit.aflite_cache.cached_certify`): a hit returns
what a fresh :func:`~automonitor.data.audit.certify.certify` computes, and a changed score, label, seed or
``meta`` is a different key (never answered from the cache)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from automonitor.data.audit.aflite_cache import cached_certify, certify_cache_dir, certify_key
from automonitor.data.audit.certify import certify


def _frame(n: int = 20) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    rows = []
    for i in range(n):
        for label in ("misbehavior", "benign"):
            rows.append(
                {
                    "id": f"s{i}{label[0]}",
                    "pair_id": f"p{i}",
                    "category": "safety_permission",
                    "task": "code",
                    "source": "src",
                    "label": label,
                    "request": f"write function {i}",
                    "response": ("eval(user_input)" if label == "misbehavior" else "ast.literal_eval(x)") + f" # {i}",
                    "meta": {"model": "m1" if i % 2 else "m2"},
                }
            )
    df = pd.DataFrame(rows)
    rng = np.random.default_rng(0)
    return df, {"char_ngram": rng.random(len(df)), "insecure_idiom": (df["label"] == "misbehavior").to_numpy(float)}


def test_a_hit_equals_a_fresh_certificate_and_changes_are_misses(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOMONITOR_CACHE_DIR", str(tmp_path))
    df, scores = _frame()
    first = cached_certify(df, scores, 0)
    files = list(certify_cache_dir().glob("*.json"))
    assert len(files) == 1
    assert cached_certify(df, scores, 0) == first == json.loads(json.dumps(certify(df, scores, 0)))
    (idiom,) = [s for s in first if s["kind"] == "source"]
    assert idiom["detectors"]["insecure_idiom"]["auroc"] == 1.0 and idiom["status"] == "not_certified"
    key = certify_key(df, scores, 0)
    changed = {**scores, "char_ngram": scores["char_ngram"][::-1].copy()}
    flipped = df.assign(label=df["label"][::-1].to_numpy())
    other_meta = df.assign(meta=[{"model": "m3"}] * len(df))
    assert (
        len(
            {
                key,
                certify_key(df, changed, 0),
                certify_key(flipped, scores, 0),
                certify_key(df, scores, 1),
                certify_key(other_meta, scores, 0),
            }
        )
        == 5
    )
    files[0].write_text("{not json", encoding="utf-8")  # a corrupt entry is recomputed
    assert cached_certify(df, scores, 0) == first
