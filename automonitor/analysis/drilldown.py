"""Drill-down views of one run for the app and CLI: the samples of a confusion cell and the ROC curve."""

from __future__ import annotations


import pandas as pd
from sqlalchemy.engine import Engine

from automonitor.analysis import metrics as mt
from automonitor.analysis.encoding import CELLS, FN, FP, PEND, TN, TP, sample_codes
from automonitor.analysis.from_store import predictions_frame, split_controls
from automonitor.data.monitor_views import render
from automonitor.vocab import NEGATIVE, POSITIVE, UNSCORED


def cell_samples(
    engine: Engine,
    run_id: str,
    cell: str,
    category: str | None = None,
    task: str | None = None,
    invalid: str = "exclude",
) -> pd.DataFrame:
    """The samples of one confusion cell of a run (for drill-down), with their texts: the samples its
    MR/FAR count, so the benign-only controls slice (reported apart as controls FAR) is left out.

    Args:
        cell: ``tp`` | ``fn`` | ``fp`` | ``tn`` | ``unscored`` | ``pending``. Under ``as-flag``/``as-miss``
            the invalid/refusal samples also appear in the cell the policy puts them in (an ``error`` never
            does: :func:`automonitor.analysis.metrics.policy_verdict`); ``unscored`` always lists them.
        category, task: optional filters.
    Returns:
        The :func:`predictions_frame` columns plus request, response and view, ordered by sample id: the
        response as the monitor saw it, i.e. its rendering under the run's monitor view
        (:mod:`automonitor.data.monitor_views`; the stored response for ``full``).
    Raises:
        ValueError for an unknown cell or policy; NotFound for an unknown run.
    """
    if cell not in CELLS:
        raise ValueError(f"cell must be one of {', '.join(CELLS)}, got {cell!r}")
    mt.check_policy(invalid)
    from store.queries import analysis as q

    df = split_controls(predictions_frame(engine, [run_id]))[0]  # the plane's samples: no controls
    if category is not None:
        df = df[df["category"] == category]
    if task is not None:
        df = df[df["task"] == task]
    if cell == "unscored":
        sel = df["outcome"].isin(UNSCORED).to_numpy()
    else:
        _, _, code = sample_codes(df, invalid)
        sel = code == {"tp": TP, "fn": FN, "fp": FP, "tn": TN, "pending": PEND}[cell]
    df = df[sel]
    texts = q.sample_frame(engine, df["sample_id"])[["sample_id", "request", "response"]]
    out = df.merge(texts, on="sample_id", how="left").sort_values("sample_id").reset_index(drop=True)
    view = q.run_views(engine, [run_id]).get(run_id, "full")
    out["view"] = view
    if view != "full" and len(out):
        from store import session_scope
        from store.queries.runs import view_inputs

        with session_scope(engine) as s:
            inputs = view_inputs(s, list(out["sample_id"]))
        shown = {i["id"]: render(i["response"], view, source=i["source"], meta=i["meta"]) for i in inputs}
        out["response"] = [r.text if (r := shown.get(sid)) is not None else None for sid in out["sample_id"]]
    return out


def roc_frame(engine: Engine, run_id: str, preds: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ROC curve of a score run on the samples its MR/FAR count (the benign-only controls slice left
    out, as in the report): columns threshold, far, mr, fpr, tpr (all thresholds; first row
    ``inf`` = flag nothing). Empty frame (same columns) when the run has no scores or only one class
    has scores. ``preds``: the run's light predictions (``predictions_frame(engine, [run_id], light=True)``)
    when the caller has read them already; else they are read. Raises NotFound for an unknown run."""
    if preds is None:
        preds = predictions_frame(engine, [run_id], light=True)
    df = split_controls(preds)[0]  # as the report's AUROC: no controls
    df = df[df["score"].notna() & df["label"].isin([POSITIVE, NEGATIVE])]
    cols = ["threshold", "far", "mr", "fpr", "tpr"]
    if df.empty or df["label"].nunique() < 2:
        return pd.DataFrame(columns=cols)
    roc = mt.roc_points(df["label"].to_numpy(), df["score"].to_numpy(float))
    return pd.DataFrame({k: roc[k] for k in cols})
