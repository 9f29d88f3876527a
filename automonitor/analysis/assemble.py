"""Report assembly from in-memory frames (no store access): :func:`analyze` runs the steps (encoding, slices, sample grid, bootstrap and pair classes, run entries, ROC, grounding,
paired comparisons, front and Pearson r) and returns the validated, typed
:class:`~automonitor.analysis.report_schema.Report` (``.to_dict()`` for the JSON-ready dict).
"""

from __future__ import annotations

from typing import Any, Collection, Mapping, Sequence

import numpy as np
import pandas as pd

from automonitor.analysis import metrics as mt
from automonitor.analysis.localisation import SpanOffsets, run_localisation
from automonitor.analysis.memo import recall
from automonitor.analysis.bootstrap import bootstrap_runs, pair_classes
from automonitor.analysis.encoding import CELLS, TP, empty_preds, encode, Encoded, sample_grid
from automonitor.analysis.paired import PairedDict, default_comparisons, paired_comparisons
from automonitor.analysis.roc_grounding import add_grounding, add_roc, evidence_run_ids
from automonitor.analysis.slices import Slices, slice_stats
from automonitor.analysis.options import AnalysisOptions, resolve_options
from automonitor.analysis.report_schema import Report, RunBootstrap
from automonitor.analysis.run_metrics import REGISTRY as METRICS, RunFrame
from automonitor.jsontypes import json_safe


def analyze(
    preds: pd.DataFrame,
    runs: pd.DataFrame,
    options: AnalysisOptions | str | None = None,
    *,
    texts: dict[str, tuple[str, str]] | None = None,
    timings: dict[str, float] | None = None,
    gold_spans: Mapping[str, Sequence[SpanOffsets]] | None = None,
    not_eligible: Collection[str] = (),
    **overrides: object,
) -> Report:
    """The typed :class:`~automonitor.analysis.report_schema.Report` from in-memory frames (no store access;
    used by :func:`~automonitor.analysis.from_store.report` and benchmarks). ``.to_dict()`` gives the JSON-ready
    dict (the ``report --json`` document).

    Args:
        preds: predictions with at least run_id, sample_id, pair_id, category, task, label, outcome,
            score, evidence (as from :func:`predictions_frame`).
        runs: runs with run_id, monitor, template (+ kind, status), in report order.
        options: an :class:`~automonitor.analysis.options.AnalysisOptions` (unscored policy, bootstrap
            resamples and seed, cost ratio and prevalence, run pairs to compare); a string is the unscored
            policy; ``overrides`` (``n_boot=40``, ``invalid="as-miss"``, ...) replace single fields.
        texts: ``{sample_id: (request, response)}`` for evidence grounding (skipped when ``None``).
        not_eligible: run ids kept off the Pareto front (``pareto``, ``on_front``) and out of Pearson r (a partial
            imported run: :func:`automonitor.runs.coverage.not_eligible_reason`); their rates are reported as any.
        timings: if given, filled with wall seconds per phase (slices, bootstrap, roc, grounding,
            paired) and CPU seconds (same names + ``_cpu``), for benchmarks.
        gold_spans: ``{sample_id: [gold span dicts]}``; with ``texts``, evidence runs get
            ``localisation`` (:mod:`automonitor.analysis.localisation`).
    Returns:
        The :class:`~automonitor.analysis.report_schema.Report`: per run the contract keys run_id,
        monitor, template, overall, by_category, by_task (SLICEs, :class:`~automonitor.analysis.report_schema.SliceStats`) plus kind, status, by_category_task,
        bootstrap (pair-clustered percentile intervals), pairs (per-pair outcome counts), on_front, and
        for score runs roc/auroc, for evidence runs grounding; the Pareto front, Pearson r, paired
        comparisons and the parameters.
    Raises:
        ValueError for an unknown policy or a bad option value; TypeError for an unknown option name;
        NotFound when ``compare`` names a run not in ``runs``.
    """
    opt: AnalysisOptions = resolve_options(AnalysisOptions, options, overrides)
    invalid, n_boot, seed = opt.invalid, opt.n_boot, opt.seed
    clock = _Clock(timings)
    runs = runs.reset_index(drop=True)
    df = preds[preds["run_id"].isin(set(runs["run_id"]))] if len(preds) else empty_preds()
    enc = encode(df, list(runs["run_id"]), invalid)
    slices = slice_stats(enc, invalid)
    clock.lap("slices")
    grid = sample_grid(df, enc)
    labelled = enc.labelled
    boot = bootstrap_runs(
        enc.run[labelled], grid.row_pair[labelled], enc.cell[labelled], len(runs), grid.n_pairs, n_boot, seed
    )
    pair_counts = pair_classes(grid.cells, grid.sample_pair, grid.sample_label, grid.n_pairs)
    clock.lap("bootstrap")
    entries = _run_entries(runs, enc, slices, boot, pair_counts)
    _add_metrics(entries, df, enc, invalid)
    add_roc(entries, df, enc, opt.cost_ratio, opt.prevalence)
    clock.lap("roc")
    memo: dict[tuple[str, str], tuple[int, int] | None] = {}  # quotes grounded once, read by localisation
    if texts is not None:
        add_grounding(entries, runs, df, enc, texts, memo if gold_spans else None)
    clock.lap("grounding")
    if texts is not None and gold_spans:  # localisation of the evidence runs whose judged samples have gold spans
        responses = {sid: rr[1] for sid, rr in texts.items()}
        sids, cats, tasks, evs = (df[c].tolist() for c in ("sample_id", "category", "task", "evidence"))
        for run_id in evidence_run_ids(runs, df):
            rows = np.flatnonzero((enc.run == enc.run_index[run_id]) & (enc.label == 0))
            loc = run_localisation(
                [(sids[i], cats[i], tasks[i], bool(enc.cell[i] == TP), evs[i] or []) for i in rows],
                responses,
                gold_spans,
                n_boot=n_boot,
                seed=seed,
                cache=memo,
            )
            if loc is not None:
                entries[enc.run_index[run_id]]["localisation"] = loc
    clock.lap("localisation")
    pairs_to_compare = default_comparisons(runs) if opt.compare is None else list(opt.compare)
    paired = paired_comparisons(pairs_to_compare, enc, grid, n_boot, seed)
    clock.lap("paired")
    rep = _across_runs(entries, paired, invalid, n_boot, seed, set(not_eligible))
    rep.update(cost_ratio=opt.cost_ratio, prevalence=opt.prevalence)
    rep["intervals"] = "95% Wilson score intervals (Wilson 1927) for mr_ci/far_ci"
    return Report.model_validate(json_safe(rep))


def _add_metrics(entries: list[dict[str, Any]], df: pd.DataFrame, enc: Encoded, invalid: str) -> None:
    """Set ``metrics`` ({name: JSON value}) on every entry from the registered run metrics
    (:mod:`automonitor.analysis.run_metrics`); nothing when none is registered (the report is as before)."""
    if not METRICS:
        return
    cells = np.array(CELLS, dtype=object)
    frame = df.reset_index(drop=True).assign(cell=cells[np.clip(enc.cell, 0, len(CELLS) - 1)])
    for i, entry in enumerate(entries):
        mine = frame[enc.run == i].reset_index(drop=True)
        n = mine["cell"].value_counts()
        tp, fn, fp, tn, uns = (int(n.get(c, 0)) for c in CELLS[:5])
        rf = RunFrame(entry["run_id"], invalid, mine, tp, fn, fp, tn, uns)
        entry["metrics"] = {name: m.compute_json(rf) for name, m in METRICS.items()}


def _across_runs(
    entries: list[dict[str, Any]],
    paired: list[PairedDict],
    invalid: str,
    n_boot: int,
    seed: int,
    not_eligible: Collection[str] = (),
) -> dict[str, Any]:
    """The report's top level up to ``paired``: the run entries (each gets ``on_front``), the overall
    Pareto front, Pearson r of (MR, FAR) over runs (the ``not_eligible`` runs left out of both), the policy and
    bootstrap parameters."""
    mr = [None if e["run_id"] in not_eligible else e["overall"]["mr"] for e in entries]
    far = [None if e["run_id"] in not_eligible else e["overall"]["far"] for e in entries]
    front = mt.pareto_front(mr, far) if entries else np.zeros(0, dtype=bool)
    for entry, on_front in zip(entries, front):
        entry["on_front"] = bool(on_front)
    # the p-value imports scipy.special (~0.1 s): kept for the same (MR, FAR) points, as the paired comparisons
    r_val, p_val = recall("pearson", [repr((mr, far))], lambda: list(mt.pearson_r(mr, far)))
    return {
        "runs": entries,
        "pareto": [e["run_id"] for e in entries if e["on_front"]],
        "pearson_r": r_val,
        "pearson_p": p_val,
        "pearson_n": int(sum(1 for x, y in zip(mr, far) if x is not None and y is not None)),
        "invalid_policy": invalid,
        "bootstrap": {"n_boot": n_boot, "seed": seed, "cluster": "pair_id", "interval": "percentile 95%"},
        "paired": paired,
    }


def _run_entries(
    runs: pd.DataFrame,
    enc: Encoded,
    slices: Slices,
    boot: list[RunBootstrap],
    pair_counts: list[dict[str, int]],
) -> list[dict[str, Any]]:
    """One RUN dict per row of ``runs`` (report order) with its slices, bootstrap and pair counts."""
    cats, tasks = enc.categories, enc.tasks
    entries: list[dict[str, Any]] = []
    for r, row in runs.iterrows():
        by_ct = slices.by_category_task
        entries.append(
            {
                "run_id": row["run_id"],
                "monitor": row["monitor"],
                "template": row["template"],
                "kind": row.get("kind"),
                "status": row.get("status"),
                "overall": slices.overall[r],
                "by_category": {c: slices.by_category[r, i] for i, c in enumerate(cats)},
                "by_task": {t: slices.by_task[r, j] for j, t in enumerate(tasks)},
                "by_category_task": {c: {t: by_ct[r, i, j] for j, t in enumerate(tasks)} for i, c in enumerate(cats)},
                "bootstrap": boot[r],
                "pairs": pair_counts[r],
            }
        )
    return entries


class _Clock:
    """Phase timer for benchmarks: wall seconds under ``name`` and CPU seconds under ``name + "_cpu"``."""

    def __init__(self, sink: dict[str, float] | None):
        import time

        self.sink, self._wall, self._cpu = sink, time.perf_counter, time.process_time
        self.t, self.c = self._wall(), self._cpu()

    def lap(self, name: str) -> None:
        if self.sink is not None:
            t, c = self._wall(), self._cpu()
            self.sink[name] = self.sink.get(name, 0.0) + t - self.t
            self.sink[name + "_cpu"] = self.sink.get(name + "_cpu", 0.0) + c - self.c
            self.t, self.c = t, c
