"""The ``hard`` edition: the ``verified`` test pairs (of a provenance :func:`~automonitor.data.build.config.hard_eligible`:
never ``constructed_benign``) that survive adversarial filtering against the audit's
trivial baselines (:func:`automonitor.data.audit.aflite.aflite`), plus the sycophancy controls in proportion.

Hooked into :func:`automonitor.data.build.plan.plan_build` by :func:`add_hard_edition`: it reads the planned
rows (``verified`` test pairs, ``train`` pairs, ``controls``), runs the filter with the build seed (through
its disk cache, :func:`~automonitor.data.audit.aflite_cache.cached_aflite`), adds
``hard`` to the editions of the surviving rows and writes ``report["editions"]["hard"]`` and
``report["hard"]`` (per source: verified and surviving pairs; per filter step: the features that removed
pairs; per slice: final AUROCs and status; the slices not achievable; seconds).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict
from typing import Any

import pandas as pd

from automonitor.data.audit.aflite import AfliteParams
from automonitor.data.audit.aflite_cache import cached_aflite
from automonitor.data.build.config import hard_eligible
from automonitor.data.build.rows import Plan
from automonitor.vocab import CONTROLS_SPLIT

HARD = "hard"
_COLS = ("id", "pair_id", "category", "task", "label", "request", "response", "source", "label_source", "split")


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([{c: r.get(c) for c in _COLS} for r in rows], columns=list(_COLS))


def add_hard_edition(plan: Plan, seed: int, params: AfliteParams = AfliteParams()) -> dict[str, Any]:
    """Add edition ``hard`` to ``plan`` in place (module doc) and return its report section.

    Args:
        plan: the build plan after test, candidate, train and control rows are appended.
        seed: the build seed (the filter's folds, tie order and control order).
        params: the filter's parameters.
    Returns:
        ``report["hard"]``: ``{"params", "pairs", "controls", "by_source": {src: {"verified", "hard"}},
        "removed_by_feature", "steps", "slices", "not_achievable", "rounds", "seconds", "cached"}`` (``cached``:
        the filter's result was read from :mod:`automonitor.data.audit.aflite_cache`).
    """
    t0 = time.perf_counter()
    every_verified = [r for r in plan.rows if r["split"] == "test" and "verified" in r.get("editions", ())]
    verified = [r for r in every_verified if hard_eligible(r.get("label_source"))]
    train = [r for r in plan.rows if r["split"] == "train" and r["status"] == "gold"]
    controls = [r for r in plan.rows if r["split"] == CONTROLS_SPLIT]
    test = pd.concat([_frame(verified), _frame(controls)], ignore_index=True)
    res, cached = cached_aflite(test, _frame(train), seed, params)
    keep_ids = set(res.kept_controls)
    for r in plan.rows:
        if (r in verified and r["pair_id"] in res.kept_pairs) or (r["split"] == CONTROLS_SPLIT and r["id"] in keep_ids):
            r["editions"] = (*r.get("editions", ()), HARD)
    ver_src = Counter(r["source"] for r in every_verified if r["label"] == "misbehavior")
    hard_rows = [r for r in verified if r["pair_id"] in res.kept_pairs and r["label"] == "misbehavior"]
    hard_src = Counter(r["source"] for r in hard_rows)
    ct = Counter(f"{r['category']}/{r['task']}" for r in hard_rows)
    ctrl_src = Counter(r["source"] for r in controls if r["id"] in keep_ids)
    plan.report.setdefault("editions", {})[HARD] = {
        "pairs": len(hard_rows),
        "samples": 2 * len(hard_rows),
        "by_category_task": dict(sorted(ct.items())),
        "by_source": dict(sorted(hard_src.items())),
        "controls": len(keep_ids),
    }
    section = {
        "params": asdict(params),
        "pairs": len(hard_rows),
        "controls": len(keep_ids),
        "by_source": {
            s: {"verified": ver_src[s], "hard": hard_src[s], "controls": ctrl_src[s]} for s in sorted(ver_src)
        },
        "removed_by_feature": dict(sorted(res.removed_by_feature.items())),
        "steps": res.steps,
        "slices": res.slices,
        "not_achievable": [s["slice"] for s in res.not_achievable],
        "rounds": res.rounds,
        "seconds": round(time.perf_counter() - t0, 2),
        "cached": cached,
    }
    plan.report[HARD] = section
    return section
