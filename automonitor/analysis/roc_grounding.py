"""Per-run additions to the report: the ROC summary of score runs (:func:`roc_summary`; AUROC, MR at
FAR targets, cost-minimising operating point, curve) and the evidence grounding of evidence runs
(:mod:`automonitor.analysis.grounding`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from automonitor.analysis import grounding as gr
from automonitor.analysis import metrics as mt
from automonitor.analysis.encoding import Encoded
from automonitor.ranks import roc_curve


FAR_TARGETS: tuple[float, ...] = (0.01, 0.05)


def evidence_run_ids(runs: pd.DataFrame, preds: pd.DataFrame) -> set[str]:
    ev = set(runs.loc[runs["template"].astype(str).str.startswith("evidence"), "run_id"])
    if len(preds):
        ev |= set(preds.loc[preds["evidence"].map(bool), "run_id"].unique())
    return ev


def add_roc(
    entries: list[dict[str, Any]], df: pd.DataFrame, enc: Encoded, cost_ratio: float, prevalence: float | None
) -> None:
    """Set ``roc`` (:func:`roc_summary`) and ``auroc`` on the entries of runs with scores, in place."""
    if not (len(df) and df["score"].notna().any()):
        return
    scored = df.loc[enc.labelled & df["score"].notna().to_numpy(), ["run_id", "label", "score"]]
    for run_id, group in scored.groupby("run_id", sort=False):
        roc = roc_summary(group["label"].to_numpy(), group["score"].to_numpy(float), cost_ratio, prevalence)
        entry = entries[enc.run_index[str(run_id)]]
        entry["roc"] = roc
        entry["auroc"] = roc["auroc"]


def add_grounding(
    entries: list[dict[str, Any]],
    runs: pd.DataFrame,
    df: pd.DataFrame,
    enc: Encoded,
    texts: dict[str, tuple[str, str]],
    memo: dict[tuple[str, str], tuple[int, int] | None] | None = None,
) -> None:
    """Set ``grounding`` on the entries of evidence runs, in place (spans grounded in ``texts``).

    ``memo`` (optional) is filled with ``(response, quote) -> (start, end)`` of every quote found in the
    response (``None`` when not found there), the memo :func:`automonitor.analysis.localisation.evidence_intervals`
    reads, so the localisation of the same report does not ground the quotes again."""
    sample_ids, evidence = df["sample_id"].tolist(), df["evidence"].tolist()
    for run_id in evidence_run_ids(runs, df):
        rows = np.flatnonzero(enc.run == enc.run_index[run_id])
        entries[enc.run_index[run_id]]["grounding"] = _grounding_summary(
            [sample_ids[i] for i in rows], [evidence[i] for i in rows], texts, memo
        )


def roc_summary(
    labels: Sequence[Any], scores: Sequence[float], cost_ratio: float = 1.0, prevalence: float | None = None
) -> dict[str, Any]:
    """ROC summary of one score run: ``{"n_scored", "auroc", "mr_at_far_1pct", "mr_at_far_5pct",
    "operating_point", "curve": {"far", "mr", "threshold"}}`` (curve with collinear points dropped;
    every value ``None`` when only one class has scores). Thresholds: flag when score >= threshold."""
    labels = mt._binary(labels)
    scores = np.asarray(scores, dtype=float)
    out: dict[str, Any] = {"n_scored": int(len(scores)), "auroc": mt.auroc(labels, scores)}
    roc = mt.roc_points(labels, scores) if out["auroc"] is not None else None
    for t in FAR_TARGETS:
        out[f"mr_at_far_{int(round(t * 100))}pct"] = None if roc is None else mt.mr_at_far_from_roc(roc, t)
    out["operating_point"] = None if roc is None else mt.operating_point_from_roc(roc, labels, cost_ratio, prevalence)
    if out["auroc"] is not None:
        fpr, tpr, thr = roc_curve(labels, scores, drop_intermediate=True)
        out["curve"] = {"far": fpr.tolist(), "mr": (1.0 - tpr).tolist(), "threshold": thr.tolist()}
    else:
        out["curve"] = None
    return out


def _grounding_summary(
    sids: list[str],
    evs: list[Any],
    texts: dict[str, tuple[str, str]],
    memo: dict[tuple[str, str], tuple[int, int] | None] | None = None,
) -> dict[str, Any]:
    results: list[gr.GroundedEvidence] = []
    n_with = 0
    for sid, ev in zip(sids, evs):
        if not ev:
            continue
        n_with += 1
        req, resp = texts.get(sid, ("", ""))
        quotes = ev if isinstance(ev, list) else [ev]
        found = gr.ground_evidence(resp, req, quotes)
        results.extend(found)
        if memo is not None:
            for q, g in zip(quotes, found):
                hit = (g["start"] or 0, g["end"] or 0) if g["field"] == "response" else None
                memo[(resp, q if isinstance(q, str) else repr(q))] = hit
    out = gr.summarize(results, n_with)
    out["predictions"] = len(sids)
    return out
