"""The audit document of ``automonitor audit --json`` from a frame of samples (:func:`audit_frame`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from automonitor.data.audit.baselines import tfidf_matrices, TrainedBaselines
from automonitor.data.audit.controls import controls_far
from automonitor.data.audit.leakage import audit_splits, find_leakage, leakage_doc
from automonitor.data.audit.params import (
    AUDIT_VERSION,
    FLAG_AUROC,
    JACCARD,
    MIN_TRAIN_PER_CLASS,
    NUM_PERM,
    SHINGLE,
    TINY_DIFF_TOKENS,
)
from automonitor.data.audit.slices import audit_slices


def audit_frame(samples: pd.DataFrame, edition: str = "paper") -> dict[str, Any]:
    """The audit document of ``automonitor audit --json`` from a frame of samples.

    Args:
        samples: one row per sample with columns id, pair_id, category, task, label, request, response,
            source, label_source, split (``train`` | ``test`` | ``controls``; other rows are ignored),
            meta. ``test`` rows are the edition's test set.
        edition: the edition name written into the document.
    Returns:
        ``{"edition", "slices": [SLICE...], "leakage": {"near_duplicate_pairs", "shared_conversations",
        ...}, "controls": {"samples", "far": {baseline: float}}, "tiny_diff_pairs", "n_train", "n_test",
        "params"}`` where SLICE has ``source`` (``"all"`` for a category x task cell), ``category``,
        ``task``, ``kind`` (``source`` | ``cell``), ``pairs``, ``samples``, ``label_source``
        (pairs per provenance), ``baselines`` ({name: AUROC or None}), ``notes`` ({name: why None}),
        ``n_train`` ({misbehavior, benign} used to train), ``trained_on`` (``source`` | ``cell`` |
        None), ``pairwise`` ({name: share of pairs whose misbehavior side the baseline scores higher}),
        ``baseline_method`` (``train`` | ``within_test_cv``), ``flagged`` (any |AUROC - 0.5| >=
        ``FLAG_AUROC`` (0.9) - 0.5), ``flagged_by``, ``near_duplicate_pairs``, ``shared_conversations``,
        ``tiny_diff_pairs``, ``shared_family_pairs``, ``errata_pairs`` (test pairs marked by an erratum);
        ``errata.marked_test_pairs`` per source. AUROCs are in [0, 1], FAR in [0, 1];
        ``leakage.per_slice_agrees``: the source slices' leakage counts sum to the global ones.
    Raises:
        ValueError when a required column is missing.

    Computed with BLAS on one thread (``threadpoolctl``): the baselines' BLAS calls are small (a logistic
    regression on two length features, 45 fits of a cold audit), and OpenBLAS's worker threads waiting
    for a turn on a shared machine cost four times the work itself; the same floats.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        train, test, controls = audit_splits(samples)
        leakage = find_leakage(train, test)
        baselines = TrainedBaselines(train, tfidf_matrices(train, test, controls))
        slices = audit_slices(test, baselines, leakage)
        lk = leakage_doc(leakage)
        # per-slice rows and the global check count the same test pairs (each pair is in one source slice)
        src = [s for s in slices if s["kind"] == "source"]
        lk["per_slice_agrees"] = all(
            sum(s[k] for s in src) == lk[k]
            for k in ("near_duplicate_pairs", "shared_conversations", "shared_family_pairs")
        )
        return {
            "edition": edition,
            "slices": slices,
            "errata": {"marked_test_pairs": {s["source"]: s["errata_pairs"] for s in src if s["errata_pairs"]}},
            "leakage": lk,
            "controls": {
                "samples": int(len(controls)),
                "far": controls_far(controls, baselines),
                "threshold": "trained baselines: P(misbehavior) >= 0.5; answer_equals_suggestion: score 1",
            },
            "tiny_diff_pairs": len(leakage.tiny_pairs),
            "n_train": int(len(train)),
            "n_test": int(len(test)),
            "params": {
                "flag_auroc": FLAG_AUROC,
                "jaccard": JACCARD,
                "num_perm": NUM_PERM,
                "shingle_words": SHINGLE,
                "tiny_diff_tokens": TINY_DIFF_TOKENS,
                "min_train_per_class": MIN_TRAIN_PER_CLASS,
                "audit_version": AUDIT_VERSION,
            },
        }
