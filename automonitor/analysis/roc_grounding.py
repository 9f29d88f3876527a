"""Per-run additions to the report: the ROC summary of score runs (:func:`roc_summary`; AUROC, MR at
FAR targets, cost-minimising operating point, curve) and the evidence grounding of evidence runs
(:mod:`automonitor.analysis.grounding`).
"""

from __future__ import annotations

import hashlib
import itertools
import pickle
from collections import Counter
from typing import Any, Sequence, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from automonitor.analysis import grounding as gr
from automonitor.analysis import metrics as mt
from automonitor.analysis.encoding import Encoded
from automonitor.analysis.memo import memo_active, recall_many
from automonitor.jsontypes import JSONValue
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

    Every run not kept by :func:`automonitor.analysis.memo.recall_many` is grounded in one
    :func:`grounding_summaries` call: each distinct (sample, text quote) of those runs is located once
    (:func:`automonitor.analysis.grounding.locate_quote` depends only on the sample's texts and the quote) and
    the statuses are counted per run with ``numpy.bincount``; each run's value is the one :func:`grounding_summary`
    of that run alone gives. ``memo`` (optional) is filled with ``(response, quote) -> (start, end)`` of every
    quote found in the response (``None`` when not found there), the memo
    :func:`automonitor.analysis.localisation.evidence_intervals` reads, so the localisation of the same report does
    not ground the quotes again."""
    codes = sorted(enc.run_index[r] for r in evidence_run_ids(runs, df))
    if not codes:
        return
    run_codes = np.asarray(enc.run)
    rows = np.flatnonzero(np.isin(run_codes, codes))
    rows = rows[np.argsort(run_codes[rows], kind="stable")]  # by run (in the order of ``codes``), rows kept in order
    n_rows = np.bincount(run_codes[rows], minlength=max(codes) + 1)[codes]
    bounds = np.concatenate(([0], np.cumsum(n_rows))).tolist()
    sids = df["sample_id"].to_numpy(dtype=object)[rows].tolist()
    evs = df["evidence"].to_numpy(dtype=object)[rows].tolist()
    run_of_row = np.repeat(np.arange(len(codes)), n_rows)

    def compute(todo: list[int]) -> list[GroundingSummary]:
        keep = np.isin(run_of_row, todo)
        picked = np.flatnonzero(keep).tolist()
        rank = np.zeros(len(codes), dtype=np.intp)
        rank[todo] = np.arange(len(todo))
        return grounding_summaries(
            rank[run_of_row[keep]], [sids[i] for i in picked], [evs[i] for i in picked], len(todo), texts, memo
        )

    if memo_active():
        digests = _text_digests(texts)
        inputs = [_grounding_inputs(sids[a:b], evs[a:b], digests) for a, b in zip(bounds, bounds[1:])]
        values = recall_many("grounding", inputs, compute)
    else:
        values = compute(list(range(len(codes))))
    for code, value in zip(codes, values):
        entries[code]["grounding"] = value


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


_STATUS_CODE = {st: k for k, st in enumerate(gr.STATUSES)}

#: one run's grounding summary (:func:`automonitor.analysis.grounding.summary_of_counts` plus ``predictions``)
GroundingSummary = dict[str, int | float | None]


def grounding_summaries(
    run: Sequence[int] | npt.NDArray[np.intp],
    sids: list[str],
    evs: Sequence[JSONValue],
    n_runs: int,
    texts: dict[str, tuple[str, str]],
    memo: dict[tuple[str, str], tuple[int, int] | None] | None = None,
) -> list[GroundingSummary]:
    """:func:`grounding_summary` of each of ``n_runs`` runs at once: row ``i`` (sample ``sids[i]``, evidence
    ``evs[i]``) belongs to run ``run[i]`` (0 to ``n_runs - 1``); the same summaries, in run order, and the same
    ``memo`` entries. Each distinct (sample, text quote) is located once (``pandas.factorize`` of the pairs) and
    the statuses counted per run with ``numpy.bincount`` (one dictionary lookup per quoted span and a ``Counter``
    per run were most of grounding a report's 150,000 spans)."""
    run = np.asarray(run, dtype=np.intp)
    with_ev = np.fromiter(map(bool, evs), dtype=bool, count=len(evs))
    predictions = np.bincount(run, minlength=n_runs).tolist()
    n_with = np.bincount(run[with_ev], minlength=n_runs).tolist()
    quoting = np.flatnonzero(with_ev)
    lists = [evs[i] for i in quoting.tolist()]
    if set(map(type, lists)) <= {list}:  # (the types counted in C, not a generator step per list)
        every = cast(list[list[JSONValue]], lists)
        quotes: list[JSONValue] = list(itertools.chain.from_iterable(every))
        q_row = np.repeat(quoting, np.fromiter(map(len, every), dtype=np.intp, count=len(every)))
    else:  # a value that is not a list is one quote
        quotes, rows_of = [], []
        for i, ev in zip(quoting.tolist(), lists):
            one = ev if isinstance(ev, list) else [ev]
            quotes += one
            rows_of += [i] * len(one)
        q_row = np.asarray(rows_of, dtype=np.intp)
    status = np.empty(len(quotes), dtype=np.intp)  # per quoted span: index in gr.STATUSES
    in_request = np.zeros(len(quotes), dtype=bool)
    q_sids = list(map(sids.__getitem__, q_row.tolist()))
    if set(map(type, quotes)) <= {str}:  # every quote a text (as a rule): no isinstance per quote, no copies
        is_text = np.ones(len(quotes), dtype=bool)
        text_sids, text_quotes = np.asarray(q_sids, dtype=object), np.asarray(quotes, dtype=object)
    else:
        is_text = np.fromiter((isinstance(q, str) for q in quotes), dtype=bool, count=len(quotes))
        at = np.flatnonzero(is_text).tolist()
        text_sids = np.asarray([q_sids[j] for j in at], dtype=object)
        text_quotes = np.asarray([quotes[j] for j in at], dtype=object)
    text_at = np.flatnonzero(is_text)
    # the text quotes: one location per distinct (sample, quote), shared by every row and run that quotes it
    s_codes, _ = pd.factorize(text_sids, use_na_sentinel=False)
    q_codes, q_uniques = pd.factorize(text_quotes, use_na_sentinel=False)
    pair_codes, _ = pd.factorize(s_codes.astype(np.int64) * max(len(q_uniques), 1) + q_codes)
    n_pairs = int(pair_codes.max()) + 1 if len(pair_codes) else 0
    # factorize numbers the pairs in order of first appearance: a pair's first row is where the running maximum grows
    first = np.flatnonzero(np.diff(np.maximum.accumulate(pair_codes), prepend=-1) > 0)
    u_status = np.empty(n_pairs, dtype=np.intp)
    u_request = np.zeros(n_pairs, dtype=bool)
    get, exact = texts.get, _STATUS_CODE["exact"]
    for k, j in enumerate(text_at[first].tolist()):
        q = quotes[j]
        if not q or q.isspace():  # a blank quote: never found (locate_quote)
            u_status[k], u_request[k] = _locate_one(q_sids[j], q, texts, memo)
            continue
        req, resp = get(q_sids[j], _NO_TEXTS)
        i = resp.find(q) if resp else -1
        if i >= 0:  # most quotes: verbatim in the response (locate_quote's first step)
            u_status[k] = exact
            if memo is not None:
                memo[(resp, q)] = (i, i + len(q))
            continue
        # locate_quote's next steps, without searching the response verbatim again
        found, start, end, field = gr.locate_text(resp, req, q)
        u_status[k], u_request[k] = _STATUS_CODE[found], field == "request"
        if memo is not None:
            memo[(resp, q)] = (start or 0, end or 0) if field == "response" else None
    status[text_at] = u_status[pair_codes]
    in_request[text_at] = u_request[pair_codes]
    for j in np.flatnonzero(~is_text).tolist():  # other quotes (a dict with a "quote"): each located on its own
        status[j], in_request[j] = _locate_one(q_sids[j], quotes[j], texts, memo)
    q_run = run[q_row]
    counts = np.bincount(q_run * len(gr.STATUSES) + status, minlength=n_runs * len(gr.STATUSES))
    counts = counts.reshape(n_runs, len(gr.STATUSES)).tolist()
    requested = np.bincount(q_run[in_request], minlength=n_runs).tolist()
    out = []
    for r in range(n_runs):
        by_status = dict(zip(gr.STATUSES, counts[r]))
        summary = gr.summary_of_counts(sum(counts[r]), by_status, requested[r], n_with[r])
        summary["predictions"] = predictions[r]
        out.append(summary)
    return out


def _locate_one(
    sid: str,
    q: JSONValue,
    texts: dict[str, tuple[str, str]],
    memo: dict[tuple[str, str], tuple[int, int] | None] | None,
) -> tuple[int, bool]:
    """``(index of the status in gr.STATUSES, found in the request)`` of quote ``q`` of sample ``sid``, and its
    ``memo`` entry, as :func:`grounding_summary` locates it."""
    req, resp = texts.get(sid, _NO_TEXTS)
    status, start, end, field = gr.locate_quote(resp, req, q)
    if memo is not None:
        memo[(resp, q if isinstance(q, str) else repr(q))] = (start or 0, end or 0) if field == "response" else None
    return _STATUS_CODE[status], field == "request"
