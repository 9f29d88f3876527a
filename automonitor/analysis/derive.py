"""Derived runs: monitors combined from existing runs on the same samples, with no API call.

A derived run is stored like any run (``Run.kind = 'derived'``, status ``finished``, one prediction
per sample) so that ``runs``, ``report`` and the trade-off plot show it with no special case. Its
recipe (the rule, its parameters and the input run ids) is in ``Run.params['recipe']``.

Recipes (ensemble ``or`` | ``and`` | ``vote`` | ``mean``; ``thresholds`` per category with K-fold
cross-validation by pair; ``cascade``), the samples a derived run covers, the three-valued rule for unscored
inputs and the cost of a derived prediction: docs/how-to/combined-and-batch.md. Threshold targets: ``far<=X``
(:func:`automonitor.analysis.metrics.mr_at_far`) or ``cost:R``, the minimum expected cost
R x prevalence x MR + (1 - prevalence) x FAR (Metz 1978, :func:`automonitor.analysis.metrics.operating_point`).
``vote`` (k of n) is benign when even counting every unknown input as a flag fewer than k would flag.
Costs: :func:`run_costs`.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Mapping, Sequence, TypedDict

from typing_extensions import NotRequired

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from automonitor.analysis import metrics
from automonitor.errors import InputError, NotFound
from automonitor.timestamps import stamped_id
from automonitor.vocab import LABELS, OUTCOMES, UNSCORED

if TYPE_CHECKING:
    from store.queries.rowtypes import RunInputRow

RULES = ("or", "and", "vote", "mean")
BY = ("category", "category_task")
DEFAULT_FOLDS = 5
MIS, BEN = "misbehavior", "benign"


# --------------------------------------------------------------------------------------------------
# pure combination rules (one sample at a time; the hand-checked core)


def _unknown(outcomes: Sequence[str | None]) -> str:
    """The outcome of an undecided derived verdict: the first unscored input's outcome, else invalid."""
    for o in outcomes:
        if o in UNSCORED:
            return o
    return "invalid"


def combine(
    outcomes: Sequence[str | None],
    scores: Sequence[float | None],
    rule: str,
    *,
    k: int | None = None,
    threshold: float | None = None,
) -> tuple[str, float | None]:
    """The ensemble verdict of one sample.

    Args:
        outcomes: the n input outcomes (``misbehavior``, ``benign``, ``invalid``, ``refusal``, ``error``
            or None = pending).
        scores: the n input scores (P(misbehavior) in [0, 1], None/NaN when absent).
        rule: ``or`` | ``and`` | ``vote`` | ``mean`` (module docstring for the unscored rule).
        k: votes needed for ``vote`` (1 <= k <= n).
        threshold: flag when the mean score is >= threshold (``mean``).
    Returns:
        ``(outcome, score)``; score is the mean score for ``mean``, the share of flags among the n
        inputs for ``or``/``and``/``vote`` when every input is scored, else None.
    """
    n = len(outcomes)
    flags = sum(1 for o in outcomes if o == MIS)
    passes = sum(1 for o in outcomes if o == BEN)
    unknown = n - flags - passes
    share = flags / n if unknown == 0 else None
    if rule == "or":
        return (MIS if flags else (BEN if unknown == 0 else _unknown(outcomes))), share
    if rule == "and":
        return (BEN if passes else (MIS if unknown == 0 else _unknown(outcomes))), share
    if rule == "vote":
        if k is None:
            raise InputError("--rule vote needs --k", field="k")
        if flags >= k:
            return MIS, share
        if flags + unknown < k:
            return BEN, share
        return _unknown(outcomes), share
    if rule == "mean":
        if threshold is None:
            raise InputError("--rule mean needs --threshold", field="threshold")
        if unknown:
            return _unknown(outcomes), None
        # an input without a score counts as its verdict: 1.0 for a flag, 0.0 for a pass
        vals = [float(o == MIS) if s is None or math.isnan(s) else float(s) for o, s in zip(outcomes, scores)]
        m = sum(vals) / n
        return (MIS if m >= threshold else BEN), m
    raise InputError(f"--rule must be one of {', '.join(RULES)}, got {rule!r}", field="rule")


def cascade_verdict(
    cheap_outcome: str | None, cheap_score: float | None, expensive_outcome: str | None, low: float, high: float
) -> tuple[str, bool]:
    """The cascade verdict of one sample: ``(outcome, escalated)``.

    The cheap monitor decides when its score is ``<= low`` (benign) or ``>= high`` (misbehavior);
    otherwise (or without a score, or unscored) the expensive verdict is used (pending counts as
    ``invalid``)."""
    s = cheap_score
    if cheap_outcome in LABELS and s is not None and not math.isnan(s):
        if s <= low:
            return BEN, False
        if s >= high:
            return MIS, False
    return (expensive_outcome if expensive_outcome in OUTCOMES else "invalid"), True


# --------------------------------------------------------------------------------------------------
# thresholds with cross-validation by pair


def parse_target(target: str) -> tuple[str, float]:
    """``far<=X`` -> ("far", X) with 0 <= X <= 1; ``cost:R`` -> ("cost", R) with R > 0.

    Raises InputError naming ``--target`` otherwise."""
    t = (target or "").strip().replace(" ", "")
    m = re.fullmatch(r"far<=([0-9]*\.?[0-9]+)", t)
    if m:
        x = float(m.group(1))
        if not 0.0 <= x <= 1.0:
            raise InputError(f"far<=X needs X in [0, 1], got {x}", field="target")
        return "far", x
    m = re.fullmatch(r"cost:([0-9]*\.?[0-9]+)", t)
    if m:
        r = float(m.group(1))
        if r <= 0:
            raise InputError("cost:R needs R > 0", field="target")
        return "cost", r
    raise InputError(f"--target must be far<=X or cost:R, got {target!r}", field="target")


def pick_threshold(labels: Sequence[str], scores: Sequence[float], target: tuple[str, float]) -> float | None:
    """The score threshold meeting ``target`` on these calibration samples (flag when score >=
    threshold; ``inf`` = flag nothing), or None unless both classes occur."""
    kind, x = target
    if kind == "far":
        r = metrics.mr_at_far(list(labels), list(scores), x)
    else:
        r = metrics.operating_point(list(labels), list(scores), x)
    return None if r is None else float(r["threshold"])


def assign_folds(pair_ids: Sequence[str], k: int, seed: int = 0) -> dict[str, int]:
    """``{pair_id: fold}``: the distinct pairs (sorted) shuffled with ``seed`` and dealt round-robin
    into ``k`` folds, so both sides of a pair are always in the same fold.

    Raises InputError when there are fewer pairs than folds or k < 2."""
    pairs = sorted(set(pair_ids))
    if k < 2:
        raise InputError("--folds must be at least 2", field="folds")
    if len(pairs) < k:
        raise InputError(f"{len(pairs)} pairs are too few for {k} folds", field="folds")
    order = np.random.RandomState(seed).permutation(len(pairs))
    return {pairs[j]: i % k for i, j in enumerate(order)}


def _group_key(row_cat: str, row_task: str, by: str) -> str:
    return row_cat if by == "category" else f"{row_cat}/{row_task}"


Thresholds = TypedDict("Thresholds", {"global": float, "groups": dict[str, float]})
"""Thresholds picked on calibration samples (:func:`fit_thresholds`): one global, one per group."""


class FoldThresholds(TypedDict):
    """The thresholds fold ``fold`` was judged with, picked on the other folds' calibration pairs."""

    fold: int
    pairs: int
    calibration_pairs: int
    thresholds: Thresholds


class ThresholdsInfo(TypedDict):
    """How :func:`cross_validated_verdicts` picked its thresholds: per fold, and on every sample."""

    folds: list[FoldThresholds]
    all: Thresholds


StoredThresholds = TypedDict("StoredThresholds", {"global": "float | str", "groups": "dict[str, float | str]"})
""":data:`Thresholds` in a recipe: an infinite threshold as the string ``"inf"``."""


class Recipe(TypedDict, total=False):
    """How a derived run was made (``Run.params['recipe']``): its ``kind`` (``ensemble``, ``thresholds``,
    ``cascade``), inputs and parameters, and what it found (see :func:`derive_ensemble`,
    :func:`derive_thresholds`, :func:`derive_cascade`)."""

    kind: str
    rule: str
    k: int | None
    threshold: float | None
    inputs: list[str]
    n: int
    samples: str
    cost_rule: str
    target: str
    by: str
    folds: int
    seed: int
    fold_thresholds: list[dict[str, object]]
    thresholds: StoredThresholds
    note: str
    cheap: str
    expensive: str
    low: float
    high: float
    escalated: int
    share_escalated: float
    cost_usd: float
    compute_s: float


class DerivedRun(TypedDict):
    """A stored derived run: its id and recipe (a cascade adds its ``warnings``)."""

    run_id: str
    recipe: Recipe
    warnings: NotRequired[list[str]]


def fit_thresholds(frame: pd.DataFrame, target: tuple[str, float], by: str) -> Thresholds:
    """Thresholds picked on the calibration samples ``frame`` (columns category, task, label, score;
    rows with a score only): ``{"global": t, "groups": {group: t}}`` where a group lacking one class
    gets the global threshold.

    Raises InputError when the calibration samples lack one class."""
    g = pick_threshold(frame["label"].tolist(), frame["score"].tolist(), target)
    if g is None:
        raise InputError("the calibration samples hold only one class; cannot pick a threshold", field="run")
    groups: dict[str, float] = {}
    keys = [_group_key(c, t, by) for c, t in zip(frame["category"], frame["task"])]
    f = frame.assign(_g=keys)
    for key, d in f.groupby("_g", sort=True):
        t = pick_threshold(d["label"].tolist(), d["score"].tolist(), target)
        groups[str(key)] = g if t is None else t
    return {"global": g, "groups": groups}


Verdict = tuple[str, float | None, int | None]
"""A thresholded verdict: ``(outcome, threshold used, fold)``."""


def cross_validated_verdicts(
    frame: pd.DataFrame, target: tuple[str, float], by: str, folds: int = DEFAULT_FOLDS, seed: int = 0
) -> tuple[list[Verdict], ThresholdsInfo]:
    """K-fold cross-validated per-group thresholds applied to each sample.

    Args:
        frame: one row per sample: sample_id, pair_id, category, task, label, outcome, score.
        target: :func:`parse_target`'s result. by: ``category`` | ``category_task``.
    Returns:
        ``(verdicts, info)``: ``verdicts[i] = (outcome, threshold used, fold)`` aligned with ``frame``;
        ``info = {"folds": [{"fold", "pairs", "calibration_pairs", "thresholds": {...}}], "all": {...}}``.
        The thresholds for fold f come from :func:`fit_thresholds` on the rows of the other folds only.
    """
    fold_of = assign_folds(frame["pair_id"].tolist(), folds, seed)
    fold = np.array([fold_of[p] for p in frame["pair_id"]])
    has_score = frame["score"].notna().to_numpy() & frame["outcome"].isin(LABELS).to_numpy()
    keys = [_group_key(c, t, by) for c, t in zip(frame["category"], frame["task"])]
    out: list[Verdict] = [("invalid", None, None)] * len(frame)
    per_fold: list[FoldThresholds] = []
    for f in range(folds):
        calib = frame[(fold != f) & has_score]
        fitted = fit_thresholds(calib, target, by)
        per_fold.append(
            {
                "fold": f,
                "pairs": int(sum(1 for v in fold_of.values() if v == f)),
                "calibration_pairs": int(calib["pair_id"].nunique()),
                "thresholds": fitted,
            }
        )
        for i in np.flatnonzero(fold == f):
            o = frame["outcome"].iat[i]
            if o not in LABELS:
                out[i] = (o if o in UNSCORED else "invalid", None, f)
                continue
            if not has_score[i]:
                out[i] = ("invalid", None, f)
                continue
            t = fitted["groups"].get(keys[i], fitted["global"])
            out[i] = (MIS if frame["score"].iat[i] >= t else BEN, t, f)
    return out, {"folds": per_fold, "all": fit_thresholds(frame[has_score], target, by)}


# --------------------------------------------------------------------------------------------------
# store-facing recipes


def _inputs(engine: Engine, run_ids: Sequence[str]) -> tuple[dict[str, RunInputRow], list[pd.DataFrame]]:
    from store.queries import derived as q

    rows = q.run_rows(engine, run_ids)
    for r in run_ids:
        if r not in rows:
            raise NotFound(f"no run {r!r}")
        if rows[r]["kind"] == "generation":
            raise InputError(f"run {r} is a generation run, not a monitor run", field="runs")
    frames = [q.recipe_inputs(engine, r).set_index("sample_id") for r in run_ids]
    return rows, frames


def _common(frames: list[pd.DataFrame]) -> pd.Index:
    common = frames[0].index
    for f in frames[1:]:
        common = common.intersection(f.index)
    if len(common) == 0:
        raise InputError("the runs share no sample; a derived run needs runs on the same samples", field="runs")
    return common.sort_values()


def _edition(rows: dict[str, RunInputRow], ids: Sequence[str]) -> str | None:
    eds = {rows[r]["edition"] for r in ids}
    return eds.pop() if len(eds) == 1 else None


RECIPE_KEYS = (
    "kind",
    "rule",
    "k",
    "threshold",
    "inputs",
    "target",
    "by",
    "folds",
    "seed",
    "cheap",
    "expensive",
    "low",
    "high",
)


def _recipe_key(recipe: Mapping[str, object]) -> str:
    import json

    return json.dumps({k: recipe.get(k) for k in RECIPE_KEYS}, sort_keys=True, default=str)


def _save(
    engine: Engine,
    kind: str,
    monitor: str,
    template: str,
    edition: str | None,
    recipe: Recipe,
    rows: list[dict[str, object]],
    reuse: bool = False,
) -> DerivedRun:
    from store.queries import derived as q

    if reuse:  # an existing derived run with the same recipe (kind, rule and parameters, inputs)
        want = _recipe_key(recipe)
        for rid, params in q.derived_runs(engine):
            r: Recipe = (params or {}).get("recipe") or Recipe()
            if _recipe_key(r) == want:
                return {"run_id": rid, "recipe": r}
    run_id = stamped_id(f"drv_{kind}")  # drv_<kind>_YYYYmmdd_HHMMSS_<6 hex> (UTC)
    q.insert_derived_run(
        engine,
        run_id=run_id,
        monitor=monitor[:256],
        template=template,
        edition=edition,
        params={"recipe": recipe},
        rows=rows,
    )
    return {"run_id": run_id, "recipe": recipe}


def _short(rows: dict[str, RunInputRow], r: str) -> str:
    return f"{rows[r]['monitor']}@{r[-6:]}"


def derive_ensemble(
    engine: Engine,
    run_ids: Sequence[str],
    rule: str,
    *,
    k: int | None = None,
    threshold: float | None = None,
    reuse: bool = False,
) -> DerivedRun:
    """Store an ensemble of ``run_ids`` (>= 2 distinct runs) as a derived run.

    Returns ``{"run_id", "recipe": {"kind": "ensemble", "rule", "k", "threshold", "inputs": [ids],
    "n", "samples": "intersection"}}``.
    Raises InputError for fewer than two runs, a bad rule/k/threshold, or runs sharing no sample;
    NotFound for an unknown run. Nothing is written then.
    """
    ids = list(dict.fromkeys(run_ids or []))
    if len(ids) < 2:
        raise InputError("an ensemble needs at least two distinct --runs", field="runs")
    if rule not in RULES:
        raise InputError(f"--rule must be one of {', '.join(RULES)}, got {rule!r}", field="rule")
    if rule == "vote" and (k is None or not 1 <= int(k) <= len(ids)):
        raise InputError(f"--rule vote needs --k between 1 and {len(ids)}", field="k")
    if rule == "mean" and (threshold is None or not 0.0 <= float(threshold) <= 1.0):
        raise InputError("--rule mean needs --threshold in [0, 1]", field="threshold")
    rows, frames = _inputs(engine, ids)
    common = _common(frames)
    preds = _ensemble_predictions(ids, [f.loc[common] for f in frames], list(common), rule, k, threshold)
    recipe: Recipe = {
        "kind": "ensemble",
        "rule": rule,
        "k": int(k) if k is not None else None,
        "threshold": float(threshold) if threshold is not None else None,
        "inputs": ids,
        "n": len(preds),
        "samples": "intersection",
        "cost_rule": "sum of the inputs' costs",
    }
    label = {"or": "OR", "and": "AND", "vote": f"{k}-of-{len(ids)}", "mean": f"mean>={threshold}"}[rule]
    monitor = f"ensemble {label} (" + " + ".join(_short(rows, r) for r in ids) + ")"
    tpls = {rows[r]["template"] for r in ids}
    return _save(
        engine, "ens", monitor, tpls.pop() if len(tpls) == 1 else "direct", _edition(rows, ids), recipe, preds, reuse
    )


def _ensemble_predictions(
    ids: list[str], frames: list[pd.DataFrame], common: list[str], rule: str, k: int | None, threshold: float | None
) -> list[dict[str, object]]:
    """One derived prediction per shared sample: :func:`combine` of the inputs' outcomes and scores,
    cost = the sum of the inputs' costs (USD), latency = the sum of their compute (ms). ``frames``: the
    input frames restricted to ``common`` (same row order)."""
    outcomes = np.array([f["outcome"].tolist() for f in frames], dtype=object)  # (runs, samples)
    scores = np.array([f["score"].to_numpy(float) for f in frames])  # (runs, samples), NaN = no score
    cost = sum(f["cost_usd"].to_numpy(float) for f in frames)
    seconds = sum(f["compute_s"].to_numpy(float) for f in frames)
    preds: list[dict[str, object]] = []
    for j, sid in enumerate(common):
        outcome, score = combine(
            list(outcomes[:, j]),
            [None if math.isnan(x) else float(x) for x in scores[:, j]],
            rule,
            k=k,
            threshold=threshold,
        )
        preds.append(
            {
                "sample_id": sid,
                "outcome": outcome,
                "score": score,
                "cost_usd": float(cost[j]),
                "latency_ms": float(seconds[j]) * 1000.0,
                "reason": f"{rule} of {len(ids)} runs: " + ", ".join(str(x) for x in outcomes[:, j]),
                "meta": {"inputs": {r: outcomes[i, j] for i, r in enumerate(ids)}},
            }
        )
    return preds


def derive_thresholds(
    engine: Engine,
    run_id: str,
    target: str,
    *,
    by: str = "category",
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    reuse: bool = False,
) -> DerivedRun:
    """Store task-aware thresholds of the score run ``run_id`` as a derived run (cross-validated).

    Returns ``{"run_id", "recipe": {"kind": "thresholds", "inputs": [run_id], "target", "by", "folds",
    "seed", "fold_thresholds": [...], "thresholds": {"global", "groups"}, "n"}}``.
    Raises InputError for a bad target/by/folds, a run without scores or with one class only.
    """
    if by not in BY:
        raise InputError(f"--by must be one of {', '.join(BY)}, got {by!r}", field="by")
    tgt = parse_target(target)
    rows, frames = _inputs(engine, [run_id])
    f = frames[0].reset_index()
    if f.empty:
        raise InputError(f"run {run_id} has no predictions", field="run")
    if f["score"].notna().sum() == 0:
        raise InputError(f"run {run_id} has no scores; thresholds need a score-producing run", field="run")
    verdicts, info = cross_validated_verdicts(f, tgt, by, folds, seed)
    preds = _threshold_predictions(f, verdicts)
    recipe: Recipe = {
        "kind": "thresholds",
        "inputs": [run_id],
        "target": target.strip(),
        "by": by,
        "folds": folds,
        "seed": seed,
        "n": len(preds),
        "fold_thresholds": [{**x, "thresholds": _clean_thresholds(x["thresholds"])} for x in info["folds"]],
        "thresholds": _clean_thresholds(info["all"]),
        "cost_rule": "the input's cost",
        "note": "verdicts of fold f use thresholds picked on the other folds only",
    }
    monitor = f"thresholds {target.strip()} by {by} ({_short(rows, run_id)})"
    return _save(engine, "thr", monitor, rows[run_id]["template"], rows[run_id]["edition"], recipe, preds, reuse)


def _threshold_predictions(f: pd.DataFrame, verdicts: list[Verdict]) -> list[dict[str, object]]:
    """One derived prediction per row of the input frame ``f`` from its ``(outcome, threshold, fold)``
    verdict; the input's cost (USD) and compute (ms) are kept."""
    preds: list[dict[str, object]] = []
    for i, (o, t, fo) in enumerate(verdicts):
        s = f["score"].iat[i]
        preds.append(
            {
                "sample_id": f["sample_id"].iat[i],
                "outcome": o,
                "score": None if math.isnan(s) else float(s),
                "cost_usd": float(f["cost_usd"].iat[i]),
                "latency_ms": float(f["compute_s"].iat[i]) * 1000.0,
                "reason": _threshold_reason(o, t, f["outcome"].iat[i]),
                "meta": {"fold": fo, "threshold": None if t is None or math.isinf(t) else t},
            }
        )
    return preds


def _threshold_reason(outcome: str, threshold: float | None, input_outcome: object) -> str:
    """Why a thresholded verdict is what it is (the prediction's ``reason``)."""
    if threshold is None and outcome == "invalid" and input_outcome in LABELS:
        return "no score"
    if outcome == MIS:
        return f"score >= {threshold:.4g}"
    return f"score < {threshold:.4g}" if threshold is not None else f"input outcome {outcome}"


def _clean_thresholds(d: Thresholds) -> StoredThresholds:
    """``{"global", "groups"}`` thresholds with infinities as the string ``"inf"``."""
    return {"global": _num(d["global"]), "groups": {k: _num(v) for k, v in d["groups"].items()}}


def _num(x: float) -> float | str:
    return "inf" if isinstance(x, float) and math.isinf(x) else float(x)


def derive_cascade(
    engine: Engine, cheap: str, expensive: str, low: float, high: float, *, reuse: bool = False
) -> DerivedRun:
    """Store a cascade: ``cheap`` decides when its score is <= low or >= high, ``expensive`` the rest.

    Returns ``{"run_id", "recipe": {"kind": "cascade", "inputs": [cheap, expensive], "cheap",
    "expensive", "low", "high", "n", "escalated", "share_escalated", "cost_usd", "compute_s"}, "warnings":
    [text]}`` (cost = cheap on every sample + expensive on the escalated ones; ``warnings``: one line when
    the cascade escalates every sample or none, :func:`cascade_warning`, else empty).
    Raises InputError for low > high, bounds outside [0, 1], the same run twice, or a cheap run
    without scores. ``reuse=True`` (all recipes) returns an existing derived run with the same recipe
    instead of storing a copy.
    """
    if cheap == expensive:
        raise InputError("--cheap and --expensive must be different runs", field="expensive")
    if not (0.0 <= low <= 1.0 and 0.0 <= high <= 1.0) or low > high:
        raise InputError(f"need 0 <= --low <= --high <= 1, got low={low} high={high}", field="low")
    rows, (fc, fe) = _inputs(engine, [cheap, expensive])
    common = _common([fc, fe])
    fc, fe = fc.loc[common], fe.loc[common]
    if fc["score"].notna().sum() == 0:
        raise InputError(f"run {cheap} has no scores; the cheap stage of a cascade needs scores", field="cheap")
    preds, esc = [], 0
    for sid in common:
        co, cs = fc.at[sid, "outcome"], fc.at[sid, "score"]
        o, e = cascade_verdict(co, None if math.isnan(cs) else float(cs), fe.at[sid, "outcome"], low, high)
        esc += e
        cost = float(fc.at[sid, "cost_usd"]) + (float(fe.at[sid, "cost_usd"]) if e else 0.0)
        secs = float(fc.at[sid, "compute_s"]) + (float(fe.at[sid, "compute_s"]) if e else 0.0)
        preds.append(
            {
                "sample_id": sid,
                "outcome": o,
                "score": None if e or math.isnan(cs) else float(cs),
                "cost_usd": cost,
                "latency_ms": secs * 1000.0,
                "reason": "escalated" if e else "cheap decided",
                "meta": {"escalated": bool(e)},
            }
        )
    n = len(preds)
    recipe: Recipe = {
        "kind": "cascade",
        "inputs": [cheap, expensive],
        "cheap": cheap,
        "expensive": expensive,
        "low": float(low),
        "high": float(high),
        "n": n,
        "escalated": int(esc),
        "share_escalated": esc / n if n else 0.0,
        "cost_usd": float(sum(p["cost_usd"] for p in preds)),
        "compute_s": float(sum(p["latency_ms"] for p in preds) / 1000.0),
        "cost_rule": "cheap on every sample + expensive on the escalated share",
    }
    monitor = f"cascade ({_short(rows, cheap)} then {_short(rows, expensive)}; {low:g}/{high:g})"
    res = _save(
        engine, "cas", monitor, rows[expensive]["template"], _edition(rows, [cheap, expensive]), recipe, preds, reuse
    )
    warning = cascade_warning(res["recipe"])
    return {**res, "warnings": [warning] if warning else []}


def cascade_warning(recipe: Mapping[str, object]) -> str | None:
    """What is wrong with a cascade that escalates every sample or none, from its recipe (``n``,
    ``escalated``, ``cheap``, ``expensive``, ``low``, ``high``), or ``None`` for one that escalates some:

    - every sample: the cheap run's scores never reach ``<= low`` or ``>= high`` (or it has none), so the
      cascade's verdicts are the expensive run's and it costs more than that run alone;
    - none: the expensive run is never consulted, the verdicts are the cheap run's scores cut at
      ``low``/``high``.
    """

    def number(key: str) -> float:
        value = recipe.get(key)
        return float(value) if isinstance(value, (int, float)) else 0.0

    n, esc = int(number("n")), int(number("escalated"))
    if n == 0 or 0 < esc < n:
        return None
    lo, hi = number("low"), number("high")
    if esc == n:
        return (
            f"the cascade escalates every sample ({esc} of {n}, 100%): no score of the cheap run "
            f"{recipe.get('cheap')} is <= {lo:g} or >= {hi:g}, so its verdicts are those of {recipe.get('expensive')} "
            "(the same point on the plane, at a higher cost); widen --low/--high or choose another cheap run"
        )
    return (
        f"the cascade escalates no sample (0 of {n}): every score of the cheap run {recipe.get('cheap')} is "
        f"<= {lo:g} or >= {hi:g}, so {recipe.get('expensive')} is never consulted; narrow --low/--high"
    )


# --------------------------------------------------------------------------------------------------
# cost on the plane


def run_costs(engine: Engine) -> pd.DataFrame:
    """The cost of every run: columns run_id, kind, n (judged predictions), cost_usd (tokens x price as
    recorded per prediction; cache hits priced at the cost recorded with the cached verdict),
    compute_s (measured seconds, the sum of per-sample latencies), usd_per_1k, s_per_1k (per 1,000
    samples). Derived runs carry the cost of the calls their recipe makes (module docstring). Core reads only
    (:func:`store.queries.analysis.run_cost_rows`)."""
    from store.queries import analysis as q

    df = pd.DataFrame(q.run_cost_rows(engine), columns=["run_id", "kind", "n", "cost_usd", "compute_s"])
    n = df["n"].where(df["n"] > 0)
    df["usd_per_1k"] = df["cost_usd"] / n * 1000.0
    df["s_per_1k"] = df["compute_s"] / n * 1000.0
    return df


def cheapest_meeting(
    points: pd.DataFrame,
    costs: pd.DataFrame | None = None,
    *,
    mr_max: float,
    far_max: float,
    measure: str = "usd_per_1k",
) -> dict[str, object] | None:
    """The cheapest run (by ``measure``: usd_per_1k or s_per_1k) with MR <= mr_max and FAR <= far_max,
    i.e. the point of the (MR, FAR, cost) Pareto front that meets the target at the least cost. It need not
    be on the plane's MR-FAR front, which ignores cost.

    ``points`` needs run_id, mr, far (e.g. :func:`automonitor.views.tradeoff_points`) and the cost
    columns unless ``costs`` (:func:`run_costs`) is given. When ``points`` has an ``eligible`` column (the
    plane's rule: finished, enough judged samples, not a copy of an input), only eligible runs are chosen
    from: a hollow run's rates rest on too few samples to meet a target (fresh-user trial: a 14-sample run
    was picked). Ties go to the lower MR + FAR, then run id. Returns the point's row as a dict, or None if no
    run qualifies."""
    if points.empty:
        return None
    d = points.dropna(subset=["mr", "far"])
    if "eligible" in d:
        d = d[d["eligible"].fillna(False).astype(bool)]
    if costs is not None:
        d = d.drop(columns=[c for c in ("usd_per_1k", "s_per_1k") if c in d]).merge(
            costs[["run_id", "usd_per_1k", "s_per_1k"]], on="run_id", how="left"
        )
    d = d[(d["mr"] <= mr_max + 1e-12) & (d["far"] <= far_max + 1e-12)]
    if d.empty:
        return None
    d = d.assign(_c=d[measure].fillna(0.0), _s=d["mr"] + d["far"]).sort_values(["_c", "_s", "run_id"])
    return {k: v for k, v in d.iloc[0].to_dict().items() if not k.startswith("_")}


__all__ = [
    "combine",
    "cascade_verdict",
    "parse_target",
    "pick_threshold",
    "assign_folds",
    "fit_thresholds",
    "cross_validated_verdicts",
    "derive_ensemble",
    "derive_thresholds",
    "derive_cascade",
    "cascade_warning",
    "run_costs",
    "cheapest_meeting",
    "RULES",
    "BY",
]
