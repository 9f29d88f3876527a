"""Per-run additions to the report: the ROC summary of score runs (:func:`roc_summary`; AUROC, MR at
FAR targets, cost-minimising operating point, curve) and the evidence grounding of evidence runs
(:mod:`automonitor.analysis.grounding`).
"""

from __future__ import annotations

import hashlib
import pickle
from collections import Counter
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from automonitor.analysis import grounding as gr
from automonitor.analysis import metrics as mt
from automonitor.analysis.encoding import Encoded
from automonitor.analysis.memo import memo_active, recall
from automonitor.ranks import roc_curve


FAR_TARGETS: tuple[float, ...] = (0.01, 0.05)


def evidence_run_ids(runs: pd.DataFrame, preds: pd.DataFrame, quoted: npt.NDArray[np.bool_] | None = None) -> set[str]:
    """The evidence runs: those of ``runs`` with an ``evidence*`` template and those with a prediction in
    ``preds`` that quotes evidence (``quoted``: :func:`has_evidence` of ``preds`` when the caller has it)."""
    ev = set(runs.loc[runs["template"].astype(str).str.startswith("evidence"), "run_id"])
    if len(preds):
        rows = has_evidence(preds) if quoted is None else quoted
        ev |= set(pd.unique(preds["run_id"].to_numpy()[rows]).tolist())
    return ev


def has_evidence(preds: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """Whether each prediction of ``preds`` quotes evidence (a non-empty ``evidence``), as a boolean array (one
    ``bool`` per row in C: half of ``Series.map(bool)``)."""
    return np.fromiter(map(bool, preds["evidence"].tolist()), dtype=bool, count=len(preds))


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

    A quote is grounded once per sample for all runs (:func:`automonitor.analysis.grounding.ground_quote`
    depends only on the sample's texts and the quote: runs that quote the same text of a sample share it).
    ``memo`` (optional) is filled with ``(response, quote) -> (start, end)`` of every quote found in the
    response (``None`` when not found there), the memo :func:`automonitor.analysis.localisation.evidence_intervals`
    reads, so the localisation of the same report does not ground the quotes again."""
    sample_ids, evidence = df["sample_id"].tolist(), df["evidence"].tolist()
    grounded: dict[tuple[str, str], tuple[str, str | None]] = {}  # (sample, quote) -> (status, field)
    digests = _text_digests(texts) if memo_active() else None
    for run_id in evidence_run_ids(runs, df):
        rows = np.flatnonzero(enc.run == enc.run_index[run_id])
        sids, evs = [sample_ids[i] for i in rows], [evidence[i] for i in rows]

        def compute(sids: list[str] = sids, evs: list[object] = evs) -> dict[str, object]:
            return grounding_summary(sids, evs, texts, memo, grounded)

        entries[enc.run_index[run_id]]["grounding"] = (
            compute() if digests is None else recall("grounding", _grounding_inputs(sids, evs, digests), compute)
        )


_NO_TEXTS = ("", "")


def _text_digests(texts: dict[str, tuple[str, str]]) -> dict[str, bytes]:
    """``{sample_id: SHA-256 of repr((request, response))}`` of ``texts`` (what grounding reads of a sample)."""
    return {sid: hashlib.sha256(repr(rr).encode("utf-8", "surrogatepass")).digest() for sid, rr in texts.items()}


def _grounding_inputs(sids: list[str], evs: list[object], digests: dict[str, bytes]) -> list[bytes | str]:
    """Everything :func:`grounding_summary` of one run computes from, for :func:`automonitor.analysis.memo.recall`:
    the run's sample ids and evidence lists in row order and the texts of every sample it quoted (a missing
    sample is grounded in empty texts). The lists go in as their pickles (protocol 5): unpickling gives the value
    back, so two different values never share bytes (equal values built with other sharing of objects could
    differ: a miss, never a wrong hit); about half the CPU of their ``repr`` and no text to encode (100 runs:
    0.08-0.14 -> 0.05-0.07 s for the keys)."""
    missing = hashlib.sha256(repr(_NO_TEXTS).encode()).digest()
    quoted_texts = b"".join(digests.get(sid, missing) for sid, ev in zip(sids, evs) if ev)
    return [pickle.dumps(sids, protocol=5), pickle.dumps(evs, protocol=5), quoted_texts]


def roc_summary(
    labels: mt.LabelsLike,
    scores: Sequence[float] | mt.FloatArray,
    cost_ratio: float = 1.0,
    prevalence: float | None = None,
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


def grounding_summary(
    sids: list[str],
    evs: list[Any],
    texts: dict[str, tuple[str, str]],
    memo: dict[tuple[str, str], tuple[int, int] | None] | None = None,
    grounded: dict[tuple[str, str], tuple[str, str | None]] | None = None,
) -> dict[str, Any]:
    """The run's grounding summary (:func:`automonitor.analysis.grounding.summary_of_counts` plus ``predictions``)
    over its predictions ``sids`` / ``evs``; ``grounded`` keeps each (sample, text quote)'s status and field for
    the other runs of the report."""
    grounded = {} if grounded is None else grounded
    found: list[tuple[str, str | None]] = []  # (status, field) of every quote, counted at the end
    n_with = 0
    for sid, ev in zip(sids, evs):
        if not ev:
            continue
        n_with += 1
        for q in ev if isinstance(ev, list) else [ev]:
            known = grounded.get((sid, q)) if isinstance(q, str) else None
            if known is None:
                req, resp = texts.get(sid, _NO_TEXTS)
                status, start, end, field = gr.locate_quote(resp, req, q)
                known = (status, field)
                if isinstance(q, str):
                    grounded[(sid, q)] = known
                if memo is not None:
                    hit = (start or 0, end or 0) if field == "response" else None
                    memo[(resp, q if isinstance(q, str) else repr(q))] = hit
            found.append(known)
    tally = Counter(found)
    counts = {st: sum(n for (status, _), n in tally.items() if status == st) for st in gr.STATUSES}
    in_request = sum(n for (_, field), n in tally.items() if field == "request")
    out = gr.summary_of_counts(len(found), counts, in_request, n_with)
    out["predictions"] = len(sids)
    return out
