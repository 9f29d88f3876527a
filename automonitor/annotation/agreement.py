"""Inter-annotator agreement: raw agreement, Cohen's kappa, Krippendorff's alpha, Gwet's AC1 and PABAK,
each with a seeded bootstrap interval over items; overall, per category and per category x task;
annotator-vs-annotator confusion matrices; per-annotator time per item.

The CLI (``automonitor agreement``) and the app's agreement page both call :func:`agreement`, so they
show the same figures.

Definitions (``n`` analysed items = items with at least two labels; ``c_ik`` = number of labels of
category ``k`` on item ``i``; ``r_i`` = labels on item ``i``; ``q`` = number of categories):

* **Treatment of ``unsure``**: with ``unsure="category"`` (the default) ``unsure`` is a third nominal
  category in every coefficient (``q = 3``): an ``unsure`` against a ``misbehavior`` is a disagreement,
  two ``unsure`` agree. With ``unsure="missing"`` ``unsure`` labels are dropped as missing values
  (``q = 2``), so items left with fewer than two labels leave the analysis.
* **percent_agreement**: mean over items of the share of agreeing label pairs,
  ``sum_k c_ik (c_ik - 1) / (r_i (r_i - 1))`` (the raw agreement of two annotators).
* **cohen_kappa**: Cohen (1960), ``sklearn.metrics.cohen_kappa_score`` on the items two annotators
  share. With exactly two annotators it is their kappa; with more it is Light's (1971) kappa, the
  mean of the pairwise Cohen's kappas over annotator pairs sharing at least two items (pairs with an
  undefined kappa are left out). ``null`` when no pair gives a defined kappa.
* **krippendorff_alpha**: Krippendorff (2004), ``krippendorff.alpha`` with
  ``level_of_measurement="nominal"`` on the annotators x items matrix with missing labels as NaN.
  ``null`` when undefined (fewer than two distinct values).
* **gwet_ac1**: Gwet (2008), multi-rater form: ``(pa - pe) / (1 - pe)`` with ``pa`` the percent
  agreement, ``pe = sum_k pi_k (1 - pi_k) / (q - 1)``, ``pi_k = mean_i c_ik / r_i``.
* **fleiss_kappa**: Fleiss (1971), ``(P - Pe) / (1 - Pe)`` with ``P`` the mean over items of
  ``sum_k c_ik (c_ik - 1) / (r (r - 1))`` and ``Pe = sum_k p_k^2``, ``p_k`` the share of labels in
  category ``k``; it needs the same number of labels ``r`` on every item, so it is computed on the
  items carrying the most common ``r`` (ties: the larger ``r``); checked against
  ``statsmodels.stats.inter_rater.fleiss_kappa``. Reported next to Light's kappa for 3+ annotators.
* **pabak**: prevalence- and bias-adjusted kappa, Byrt, Bishop & Carlin (1993), generalised to ``q``
  categories: ``(q * pa - 1) / (q - 1)``.
* **Bootstrap**: ``n_boot`` replicates resampling analysed items with replacement
  (``numpy.random.default_rng(seed)``, the same seed for every slice); 95 % percentile interval;
  replicates where a coefficient is undefined are dropped. The replicates use closed-form weighted
  versions of the same formulas (checked against the libraries in the tests).

What the figures mean for a session, ``too_few`` slices (fewer than ``min_items`` items: no interval),
intervals when all resamples agree (Wilson for raw agreement and PABAK, ``ci_method`` says which) and
the monitor-vs-humans comparison (:func:`monitor_agreement`): ``docs/how-to/annotation.md``.
"""

from __future__ import annotations

import warnings
from itertools import combinations
from typing import Mapping, TypedDict, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
from sqlalchemy.engine import Engine
from typing_extensions import NotRequired
from statsmodels.stats.proportion import proportion_confint

from automonitor.annotation.span_agreement import SpanAgreement, span_agreement
from store.queries.analysis import load_predictions, load_runs, load_sample_texts
from automonitor.annotation.accounts import Account, require_admin
from automonitor.errors import InputError
from automonitor.vocab import ANNOTATION_LABELS, CATEGORIES, TASKS

UNSURE_POLICIES: tuple[str, ...] = ("category", "missing")
Codes = npt.NDArray[np.int_]
"""Items x annotators category codes (``-1`` = missing)."""
Floats = npt.NDArray[np.float64]


class MetricValues(TypedDict):
    """The coefficients of a slice (module docstring; ``None`` when undefined)."""

    percent_agreement: float | None
    cohen_kappa: float | None
    fleiss_kappa: float | None
    krippendorff_alpha: float | None
    gwet_ac1: float | None
    pabak: float | None


#: The coefficients' names, in report order.
METRICS: tuple[str, ...] = tuple(MetricValues.__annotations__)


def _metric_values(values: Mapping[str, float | None]) -> MetricValues:
    """``values`` of the :data:`METRICS` (a missing one ``None``), in their order."""
    return cast(MetricValues, {k: values.get(k) for k in METRICS})  # METRICS are MetricValues' keys


class SliceAgreement(MetricValues):
    """The agreement of one slice of labels (:func:`slice_agreement`)."""

    items: int
    annotators: list[str]
    ci: dict[str, list[float] | None]
    ci_method: dict[str, str | None]
    n_boot: int
    too_few: bool
    fleiss_items: int


class PairConfusion(TypedDict):
    """Two annotators' labels on the items they share (:func:`confusion_matrices`)."""

    a: str
    b: str
    items: int
    labels: list[str]
    matrix: list[list[int]]


class AnnotatorTime(TypedDict):
    """An annotator's time per item (:func:`time_per_item`)."""

    labels: int
    timed: int
    median_s: float | None
    mean_s: float | None


class BinaryConfusion(TypedDict):
    """Human labels (rows) against a monitor's verdicts (columns)."""

    labels: list[str]
    matrix: list[list[int]]


class BinaryAgreement(TypedDict):
    """Two binary raters' agreement (:func:`binary_agreement`)."""

    items: int
    cohen_kappa: float | None
    percent_agreement: float | None
    ci: dict[str, list[float] | None]
    ci_method: dict[str, str | None]
    too_few: bool
    confusion: BinaryConfusion


class MonitorAgreement(TypedDict):
    """A monitor run against the humans (:func:`monitor_agreement`)."""

    run_id: str
    monitor: str
    template: str
    judged: int
    unscored: int
    vs_gold: BinaryAgreement
    vs_annotators: dict[str, BinaryAgreement]


class AgreementDoc(SliceAgreement):
    """The agreement document (:func:`compute_agreement`; :func:`agreement` adds ``submitted_only``,
    ``spans`` and, for a run, ``monitor``)."""

    by_category: dict[str, SliceAgreement]
    by_category_task: dict[str, dict[str, SliceAgreement]]
    confusion: list[PairConfusion]
    time_per_item: dict[str, AnnotatorTime]
    labels: int
    unsure: str
    seed: int
    min_items: int
    submitted_only: NotRequired[bool]
    spans: NotRequired[SpanAgreement]
    monitor: NotRequired[MonitorAgreement]


DEFAULT_BOOT = 1000
DEFAULT_SEED = 0
#: Slices with fewer analysed items than this are flagged ``too_few`` and get no interval.
DEFAULT_MIN_ITEMS = 10
#: The verdicts of a monitor run compared with human labels (other outcomes are unscored).
BINARY_LABELS: tuple[str, ...] = ("misbehavior", "benign")


def _num(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if not np.isfinite(x) else x


# -------------------------------------------------------------------------------- point estimates
def _codes(df: pd.DataFrame, cats: list[str]) -> tuple[Codes, list[str], list[str]]:
    """Items x annotators matrix of category codes (``-1`` = missing)."""
    items = sorted(df["sample_id"].unique())
    raters = sorted(df["annotator"].unique())
    m = np.full((len(items), len(raters)), -1, dtype=int)
    ii = {s: i for i, s in enumerate(items)}
    ri = {a: j for j, a in enumerate(raters)}
    ci = {c: k for k, c in enumerate(cats)}
    for s, a, lab in df[["sample_id", "annotator", "label"]].itertuples(index=False):
        m[ii[s], ri[a]] = ci[lab]
    return m, items, raters


def _counts(m: Codes, q: int) -> Floats:
    """Items x categories label counts."""
    return np.stack([(m == k).sum(axis=1) for k in range(q)], axis=1).astype(float)


def _item_terms(m: Codes, q: int) -> dict[str, Floats]:
    """Per-item additive terms from which every coefficient (and its bootstrap) is assembled."""
    c = _counts(m, q)
    r = c.sum(axis=1)
    pa_i = (c * (c - 1)).sum(axis=1) / (r * (r - 1))
    share = c / r[:, None]
    # Krippendorff coincidences of each item: o_ck = (c_c c_k - [c == k] c_c) / (r - 1)
    o = (c[:, :, None] * c[:, None, :] - np.einsum("ik,kl->ikl", c, np.eye(q))) / (r - 1)[:, None, None]
    return {"pa": pa_i, "share": share, "coinc": o.reshape(len(m), q * q), "fleiss": _fleiss_mask(r)}


def _fleiss_mask(r: Floats) -> Floats:
    """1.0 on the items with the most common number of labels (ties: the larger), else 0.0: the
    items Fleiss' kappa is computed on (it needs the same number of raters per item)."""
    if len(r) == 0:
        return np.zeros(0)
    values, counts = np.unique(r, return_counts=True)
    best = values[counts == counts.max()].max()
    mask: npt.NDArray[np.float64] = (r == best).astype(float)
    return mask


def _pairs_terms(m: Codes, q: int) -> list[tuple[int, int, Floats]]:
    """For each annotator pair sharing >= 2 items: items x q^2 one-hot (row = first annotator's label,
    column = second's)."""
    out = []
    for a, b in combinations(range(m.shape[1]), 2):
        both = (m[:, a] >= 0) & (m[:, b] >= 0)
        if both.sum() < 2:
            continue
        onehot = np.zeros((len(m), q * q))
        idx = np.nonzero(both)[0]
        onehot[idx, m[idx, a] * q + m[idx, b]] = 1.0
        out.append((a, b, onehot))
    return out


def _kappa_from_conf(conf: Floats, q: int) -> Floats:
    """Cohen's kappa of each row of ``conf`` (replicates x q^2 flattened confusion counts)."""
    conf = conf.reshape(len(conf), q, q)
    n = conf.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(conf, axis1=1, axis2=2) / n
        pe = (conf.sum(axis=2) * conf.sum(axis=1)).sum(axis=1) / n**2
        k: npt.NDArray[np.float64] = (po - pe) / (1 - pe)
    k[~np.isfinite(k)] = np.nan
    return k


def _coefficients(
    w: Floats, terms: dict[str, Floats], pairs: list[tuple[int, int, Floats]], q: int
) -> dict[str, Floats]:
    """Every coefficient for each row of item weights ``w`` (replicates x items)."""
    tot = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        pa = w @ terms["pa"] / tot
        pi = (w @ terms["share"]) / tot[:, None]
        pe = (pi * (1 - pi)).sum(axis=1) / (q - 1)
        ac1 = (pa - pe) / (1 - pe)
        pabak = (q * pa - 1) / (q - 1)
        o = (w @ terms["coinc"]).reshape(len(w), q, q)
        nc = o.sum(axis=2)
        n = nc.sum(axis=1)
        off = ~np.eye(q, dtype=bool)
        do = o[:, off].sum(axis=1)
        de = (nc[:, :, None] * nc[:, None, :])[:, off].sum(axis=1)
        alpha = 1 - (n - 1) * do / de
        wf = w * terms["fleiss"][None, :]
        tf = wf.sum(axis=1)
        p_bar = wf @ terms["pa"] / tf
        p_k = (wf @ terms["share"]) / tf[:, None]
        pe_f = (p_k**2).sum(axis=1)
        fleiss = (p_bar - pe_f) / (1 - pe_f)
    if pairs:
        ks = np.stack([_kappa_from_conf(w @ oh, q) for _, _, oh in pairs], axis=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            kappa = np.nanmean(ks, axis=1)
    else:
        kappa = np.full(len(w), np.nan)
    res = {
        "percent_agreement": pa,
        "cohen_kappa": kappa,
        "fleiss_kappa": fleiss,
        "krippendorff_alpha": alpha,
        "gwet_ac1": ac1,
        "pabak": pabak,
    }
    for v in res.values():
        v[~np.isfinite(v)] = np.nan
    return res


def _library_point(m: Codes, cats: list[str]) -> tuple[float | None, float | None]:
    """Cohen's/Light's kappa with scikit-learn and Krippendorff's alpha with ``krippendorff``."""
    import krippendorff
    from sklearn.metrics import cohen_kappa_score

    q = len(cats)
    kappas = []
    for a, b, _ in _pairs_terms(m, q):
        both = (m[:, a] >= 0) & (m[:, b] >= 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            k = cohen_kappa_score(m[both, a], m[both, b], labels=list(range(q)))
        if np.isfinite(k):
            kappas.append(float(k))
    kappa = float(np.mean(kappas)) if kappas else None
    data = np.where(m >= 0, m, np.nan).T.astype(float)  # annotators x items
    alpha = None
    if len(np.unique(data[~np.isnan(data)])) >= 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            alpha = _num(
                krippendorff.alpha(reliability_data=data, level_of_measurement="nominal", value_domain=list(range(q)))
            )
    return kappa, alpha


def slice_agreement(
    df: pd.DataFrame,
    *,
    unsure: str = "category",
    n_boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_SEED,
    min_items: int = DEFAULT_MIN_ITEMS,
) -> SliceAgreement:
    """Agreement of one slice of labels.

    Args:
        df: one row per label with columns ``sample_id``, ``annotator``, ``label``
            (``misbehavior|benign|unsure``).
        unsure: ``category`` or ``missing`` (see the module docstring).
        n_boot: bootstrap replicates (0 = no intervals). seed: bootstrap seed.
        min_items: slices with fewer analysed items are ``too_few`` (no intervals).

    Returns:
        ``{"items", "annotators", "percent_agreement", "cohen_kappa", "fleiss_kappa",
        "krippendorff_alpha", "gwet_ac1", "pabak", "ci": {metric: [lo, hi] | None}, "ci_method":
        {metric: how the interval was made | None} (:func:`_interval`), "n_boot",
        "too_few", "fleiss_items"}``; coefficients are ``None`` when undefined (e.g. no item with
        two labels).
    """
    if unsure not in UNSURE_POLICIES:
        raise InputError(f"unsure must be one of {', '.join(UNSURE_POLICIES)}", field="unsure")
    cats = list(ANNOTATION_LABELS) if unsure == "category" else [c for c in ANNOTATION_LABELS if c != "unsure"]
    q = len(cats)
    df = df[df["label"].isin(cats)]
    empty: SliceAgreement = {
        "items": 0,
        "annotators": [],
        **_metric_values({}),
        "ci": {k: None for k in METRICS},
        "ci_method": {k: None for k in METRICS},
        "n_boot": n_boot,
        "too_few": True,
        "fleiss_items": 0,
    }
    if df.empty:
        return empty
    m, items, raters = _codes(df, cats)
    keep = (m >= 0).sum(axis=1) >= 2
    m = m[keep]
    if len(m) == 0:
        return empty
    used = (m >= 0).any(axis=0)
    m = m[:, used]
    raters = [r for r, u in zip(raters, used) if u]
    terms = _item_terms(m, q)
    pairs = _pairs_terms(m, q)
    point: dict[str, float | None] = {k: v[0] for k, v in _coefficients(np.ones((1, len(m))), terms, pairs, q).items()}
    kappa, alpha = _library_point(m, cats)
    point["cohen_kappa"], point["krippendorff_alpha"] = kappa, alpha
    too_few = len(m) < min_items
    ci, how = _bootstrap_ci(point, terms, pairs, q, len(m), 0 if too_few else n_boot, seed)
    return {
        "items": int(len(m)),
        "annotators": raters,
        **_metric_values({k: _num(point[k]) for k in METRICS}),
        "ci": ci,
        "ci_method": how,
        "n_boot": n_boot,
        "too_few": bool(too_few),
        "fleiss_items": int(terms["fleiss"].sum()),
    }


PERCENTILE = "percentile bootstrap"
WILSON_ALL_AGREE = "wilson: all resamples agree"
NONE_ALL_AGREE = "none: all resamples agree"


def _interval(
    metric: str, values: Floats, point: float | None, n_items: int, q: int
) -> tuple[list[float] | None, str | None]:
    """The 95 % interval of one metric from its bootstrap ``values`` and how it was made (``ci_method``:
    :data:`PERCENTILE`, :data:`WILSON_ALL_AGREE` or :data:`NONE_ALL_AGREE`): the percentile interval; when
    every finite replicate is the same (it would read as certainty), the Wilson (1927) score interval of
    raw agreement over ``n_items`` (``q`` categories mapped through ``(q * pa - 1) / (q - 1)`` for PABAK)
    or none.
    ``(None, None)`` with no finite replicate or an undefined ``point``."""
    finite = values[np.isfinite(values)]
    value = _num(point)
    if not len(finite) or value is None:
        return None, None
    lo, hi = np.percentile(finite, [2.5, 97.5])
    if float(np.ptp(finite)) > 0:
        return [float(lo), float(hi)], PERCENTILE
    if metric in ("percent_agreement", "pabak"):
        pa = value if metric == "percent_agreement" else (value * (q - 1) + 1) / q
        wl, wh = (round(float(x), 12) for x in proportion_confint(pa * n_items, n_items, alpha=0.05, method="wilson"))
        if metric == "pabak":
            wl, wh = (q * wl - 1) / (q - 1), (q * wh - 1) / (q - 1)
        return [wl, wh], WILSON_ALL_AGREE
    return None, NONE_ALL_AGREE


def _bootstrap_ci(
    point: Mapping[str, float | None],
    terms: dict[str, Floats],
    pairs: list[tuple[int, int, Floats]],
    q: int,
    n_items: int,
    n_boot: int,
    seed: int,
) -> tuple[dict[str, list[float] | None], dict[str, str | None]]:
    """95 % intervals ``{metric: [lo, hi] | None}`` from ``n_boot`` item-bootstrap replicates
    (multinomial item weights drawn with ``numpy.random.default_rng(seed)``), and how each was made
    (:func:`_interval`); ``None`` for a metric whose point value is undefined or with no finite
    replicate, and for all when ``n_boot == 0``. ``terms``/``pairs``: the per-item terms of
    :func:`_item_terms` and :func:`_pairs_terms`."""
    ci: dict[str, list[float] | None] = {k: None for k in METRICS}
    how: dict[str, str | None] = {k: None for k in METRICS}
    if n_boot <= 0:
        return ci, how
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_items, np.full(n_items, 1.0 / n_items), size=n_boot).astype(float)
    for k, values in _coefficients(weights, terms, pairs, q).items():
        ci[k], how[k] = _interval(k, values, point[k], n_items, q)
    return ci, how


def confusion_matrices(df: pd.DataFrame) -> list[PairConfusion]:
    """Annotator-vs-annotator confusion matrices over the items each pair shares: a list of
    ``{"a", "b", "items", "labels": [misbehavior, benign, unsure], "matrix": rows = a's label,
    columns = b's label}`` (all three labels always shown, whatever the ``unsure`` policy)."""
    cats = list(ANNOTATION_LABELS)
    if df.empty:
        return []
    m, _, raters = _codes(df[df["label"].isin(cats)], cats)
    out: list[PairConfusion] = []
    for a, b in combinations(range(len(raters)), 2):
        both = (m[:, a] >= 0) & (m[:, b] >= 0)
        if not both.any():
            continue
        mat = np.zeros((3, 3), dtype=int)
        np.add.at(mat, (m[both, a], m[both, b]), 1)
        out.append({"a": raters[a], "b": raters[b], "items": int(both.sum()), "labels": cats, "matrix": mat.tolist()})
    return out


def time_per_item(df: pd.DataFrame) -> dict[str, AnnotatorTime]:
    """Per annotator: ``{"labels", "timed", "median_s", "mean_s"}`` over labels with a recorded time
    (``seconds_spent``, summed over edits), ``None`` when nothing was timed."""
    out: dict[str, AnnotatorTime] = {}
    for name, g in df.groupby("annotator", sort=True):
        t = pd.to_numeric(g["seconds_spent"], errors="coerce").dropna()
        out[str(name)] = {
            "labels": int(len(g)),
            "timed": int(len(t)),
            "median_s": _num(t.median()) if len(t) else None,
            "mean_s": _num(t.mean()) if len(t) else None,
        }
    return out


def compute_agreement(
    df: pd.DataFrame,
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_SEED,
    min_items: int = DEFAULT_MIN_ITEMS,
    unsure: str = "category",
) -> AgreementDoc:
    """The full agreement document from a label table.

    Args:
        df: one row per label with ``sample_id``, ``annotator``, ``label``, ``category`` (the item's
            category), ``task`` and ``seconds_spent``.

    Returns:
        the contract's ``{"items", "annotators", "percent_agreement", "cohen_kappa",
        "krippendorff_alpha", "by_category": {cat: {...same}}}`` plus ``gwet_ac1``, ``pabak``, ``ci``
        (95 % bootstrap intervals), ``by_category_task`` (``{cat: {task: {...same}}}``),
        ``confusion`` (:func:`confusion_matrices`), ``time_per_item`` (:func:`time_per_item`),
        ``labels`` (total labels), ``unsure`` policy, ``n_boot``, ``seed``, ``min_items`` and per
        slice ``too_few`` (fewer than ``min_items`` items: no intervals). Only categories/tasks
        with labels appear in the breakdowns. ``annotators`` lists everybody with a label.
    """
    cols = ["sample_id", "annotator", "label", "category", "task", "seconds_spent"]
    df = df.reindex(columns=cols) if not df.empty else pd.DataFrame(columns=cols)

    def one(part: pd.DataFrame) -> SliceAgreement:
        return slice_agreement(part, unsure=unsure, n_boot=n_boot, seed=seed, min_items=min_items)

    overall = one(df)
    overall["annotators"] = sorted(df["annotator"].unique().tolist())
    by_cat: dict[str, SliceAgreement] = {}
    by_ct: dict[str, dict[str, SliceAgreement]] = {}
    order = {c: i for i, c in enumerate(CATEGORIES)}
    for cat in sorted(df["category"].dropna().unique(), key=lambda c: (order.get(c, 99), c)):
        g = df[df["category"] == cat]
        by_cat[cat] = one(g)
        tord = {t: i for i, t in enumerate(TASKS)}
        by_ct[cat] = {t: one(gt) for t, gt in sorted(g.groupby("task"), key=lambda kv: (tord.get(kv[0], 99), kv[0]))}
    return {
        **overall,
        "by_category": by_cat,
        "by_category_task": by_ct,
        "confusion": confusion_matrices(df),
        "time_per_item": time_per_item(df),
        "labels": int(len(df)),
        "unsure": unsure,
        "seed": seed,
        "min_items": min_items,
    }


def label_table(engine: Engine, actor: Account, *, submitted_only: bool = False) -> pd.DataFrame:
    """All labels on candidate, gold or rejected items as a DataFrame (admin only): ``sample_id``,
    ``annotator``, ``label``, ``category`` (the item's category), ``task``, ``seconds_spent``,
    ``submitted``, ``evidence_start``/``evidence_end`` (the hull of the marked spans, or None) and
    ``evidence_spans`` (the marked spans, ``[[start, end], ...]``, or None)."""
    from automonitor.annotation._common import transaction
    from automonitor.annotation.queries import label_rows

    require_admin(actor)

    rows = transaction(
        engine, lambda s: label_rows(s, actor, submitted_only=submitted_only, with_sample=True), actor=actor
    )
    return pd.DataFrame(
        [
            {
                "sample_id": r["sample_id"],
                "annotator": r["annotator"],
                "label": r["label"],
                "category": r["item_category"],
                "task": r["task"],
                "seconds_spent": r["seconds_spent"],
                "submitted": r["submitted_at"] is not None,
                "evidence_start": r.get("evidence_start"),
                "evidence_end": r.get("evidence_end"),
                "evidence_spans": r.get("evidence_spans"),
            }
            for r in rows
        ],
        columns=[
            "sample_id",
            "annotator",
            "label",
            "category",
            "task",
            "seconds_spent",
            "submitted",
            "evidence_start",
            "evidence_end",
            "evidence_spans",
        ],
    )


def label_fingerprint(engine: Engine, actor: Account) -> tuple[str, ...]:
    """A cheap fingerprint of the label table (admin only): ``(count, newest update, newest
    submission)`` as text; it changes whenever a label is saved or submitted (a cache key for
    :func:`agreement`)."""
    from automonitor.annotation._common import transaction
    from store.queries.annotation import label_fingerprint as stored_fingerprint

    require_admin(actor)

    return transaction(engine, lambda s: tuple(str(x) for x in stored_fingerprint(s)), actor=actor)


def agreement(
    engine: Engine,
    actor: Account,
    *,
    unsure: str = "category",
    n_boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_SEED,
    submitted_only: bool = True,
    min_items: int = DEFAULT_MIN_ITEMS,
    run_id: str | None = None,
) -> AgreementDoc:
    """Agreement over the labels in the store (admin only): :func:`compute_agreement` of
    :func:`label_table`. Only submitted labels count by default (the contract's
    ``agreement``); ``submitted_only=False`` counts draft labels too. This is the one function
    behind both ``automonitor agreement --json`` and the app's agreement page. With ``run_id`` the
    document gains ``"monitor"``: :func:`monitor_agreement` of that run against the same labels. ``spans``: agreement on
    the marked evidence spans (:func:`automonitor.annotation.span_agreement.span_agreement`: span F1, token-level
    Krippendorff's alpha).

    Raises:
        PermissionDenied: ``actor`` is not an admin. InputError: bad ``unsure``/``n_boot``/
        ``min_items``. NotFound: unknown ``run_id``.
    """
    require_admin(actor)
    if unsure not in UNSURE_POLICIES:
        raise InputError(f"unsure must be one of {', '.join(UNSURE_POLICIES)}", field="unsure")
    if not 0 <= n_boot <= 100_000:
        raise InputError("n_boot must be an integer in [0, 100000]", field="n_boot")
    if min_items < 1:
        raise InputError("min_items must be a positive integer", field="min_items")
    table = label_table(engine, actor, submitted_only=submitted_only)
    doc = compute_agreement(table, unsure=unsure, n_boot=n_boot, seed=seed, min_items=min_items)
    doc["submitted_only"] = submitted_only
    marked = table[table["evidence_start"].notna()] if len(table) else table
    texts = load_sample_texts(engine, marked["sample_id"].unique().tolist()) if len(marked) else {}
    doc["spans"] = span_agreement(
        marked.to_dict("records"), {k: v[1] for k, v in texts.items()}, min_items=min_items, n_boot=n_boot, seed=seed
    )
    if run_id is not None:
        doc["monitor"] = monitor_agreement(engine, actor, run_id, table, n_boot=n_boot, seed=seed, min_items=min_items)
    return doc


def binary_agreement(
    pairs: list[tuple[str, str]],
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_SEED,
    min_items: int = DEFAULT_MIN_ITEMS,
) -> BinaryAgreement:
    """Cohen's kappa and raw agreement of two binary raters (e.g. a human and a monitor).

    Args:
        pairs: ``(human label, monitor verdict)`` per item, each ``misbehavior`` or ``benign``.

    Returns:
        ``{"items", "cohen_kappa", "percent_agreement", "ci": {metric: [lo, hi] | None}, "ci_method"
        (:func:`_interval`), "too_few",
        "confusion": {"labels": [misbehavior, benign], "matrix": rows = human, columns = monitor}}``.
        Cohen's kappa from ``sklearn.metrics.cohen_kappa_score`` (``None`` when undefined); 95 %
        percentile item-bootstrap intervals (``numpy.random.default_rng(seed)``), none when the slice
        is ``too_few`` (fewer than ``min_items`` items).
    """
    from sklearn.metrics import cohen_kappa_score

    cats = list(BINARY_LABELS)
    idx = {c: i for i, c in enumerate(cats)}
    mat = np.zeros((2, 2), dtype=int)
    onehot = np.zeros((len(pairs), 4))
    for i, (h, mv) in enumerate(pairs):
        mat[idx[h], idx[mv]] += 1
        onehot[i, idx[h] * 2 + idx[mv]] = 1.0
    n = len(pairs)
    out: BinaryAgreement = {
        "items": n,
        "cohen_kappa": None,
        "percent_agreement": None,
        "ci": {"cohen_kappa": None, "percent_agreement": None},
        "ci_method": {"cohen_kappa": None, "percent_agreement": None},
        "too_few": n < min_items,
        "confusion": {"labels": cats, "matrix": mat.tolist()},
    }
    if n == 0:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["cohen_kappa"] = _num(cohen_kappa_score([h for h, _ in pairs], [m for _, m in pairs], labels=cats))
    out["percent_agreement"] = float(np.trace(mat) / n)
    if n_boot > 0 and n >= min_items:
        rng = np.random.default_rng(seed)
        w = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)
        conf = w @ onehot
        reps = {"cohen_kappa": _kappa_from_conf(conf, 2), "percent_agreement": (conf[:, 0] + conf[:, 3]) / n}
        point = {"cohen_kappa": out["cohen_kappa"], "percent_agreement": out["percent_agreement"]}
        for k, values in reps.items():
            out["ci"][k], out["ci_method"][k] = _interval(k, values, point[k], n, 2)
    return out


def resolved_labels(engine: Engine, actor: Account, table: pd.DataFrame) -> dict[str, str]:
    """``{sample_id: misbehavior|benign}``: the resolution ``finalize`` uses for each labelled item:
    the latest adjudication when it accepted a gold label, else a unanimous ``misbehavior``/``benign``
    among at least two labels of ``table`` (:func:`label_table`). Admin only."""
    from automonitor.annotation._common import transaction
    from automonitor.annotation.queries import latest_adjudications

    require_admin(actor)

    decided = transaction(engine, lambda s: latest_adjudications(s, actor), actor=actor)
    out: dict[str, str] = {}
    for sid, g in table.groupby("sample_id"):
        labs = set(g["label"])
        if len(g) >= 2 and len(labs) == 1 and next(iter(labs)) in BINARY_LABELS:
            out[str(sid)] = next(iter(labs))
    for sid, row in decided.items():
        gold = row["gold_label"]
        if row["decision"] == "accept" and gold is not None and gold in BINARY_LABELS:
            out[sid] = gold
        else:
            out.pop(sid, None)
    return out


def monitor_agreement(
    engine: Engine,
    actor: Account,
    run_id: str,
    table: pd.DataFrame | None = None,
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_SEED,
    min_items: int = DEFAULT_MIN_ITEMS,
) -> MonitorAgreement:
    """A monitor run against the humans (admin only): :func:`binary_agreement` of the
    run's verdicts with the resolved labels (``vs_gold``, :func:`resolved_labels`) and with each
    annotator's ``misbehavior``/``benign`` labels (``vs_annotators``: ``{name: ...}``).

    Returns:
        ``{"run_id", "monitor", "template", "judged" (labelled items the run judged), "unscored"
        (of those, outcomes other than misbehavior/benign: left out), "vs_gold", "vs_annotators"}``.

    Raises:
        PermissionDenied: not an admin. NotFound: unknown ``run_id``.
    """
    require_admin(actor)
    if table is None:
        table = label_table(engine, actor)
    run = load_runs(engine, [run_id]).iloc[0]  # raises NotFound
    preds = load_predictions(engine, [run_id], light=True)
    labelled = set(table["sample_id"])
    preds = preds[preds["sample_id"].isin(labelled)]
    verdict = {str(r.sample_id): r.outcome for r in preds.itertuples() if r.outcome in BINARY_LABELS}
    gold = resolved_labels(engine, actor, table)
    kw = {"n_boot": n_boot, "seed": seed, "min_items": min_items}
    vs_gold = binary_agreement([(g, verdict[sid]) for sid, g in sorted(gold.items()) if sid in verdict], **kw)
    vs_ann: dict[str, BinaryAgreement] = {}
    for name, g in table.groupby("annotator", sort=True):
        pairs = [
            (lab, verdict[str(sid)])
            for sid, lab in sorted(zip(g["sample_id"], g["label"]))
            if lab in BINARY_LABELS and str(sid) in verdict
        ]
        vs_ann[str(name)] = binary_agreement(pairs, **kw)
    return {
        "run_id": run_id,
        "monitor": str(run["monitor"]),
        "template": str(run["template"]),
        "judged": int(len(preds)),
        "unscored": int(len(preds) - len(verdict)),
        "vs_gold": vs_gold,
        "vs_annotators": vs_ann,
    }


def flat_rows(doc: AgreementDoc, *, methods: bool = False) -> list[dict[str, object]]:
    """The overall, per-category and per-category x task slices of an agreement document as flat
    table rows (``slice``, ``category``, ``task``, ``items``, ``too_few`` and each metric with
    ``_lo``/``_hi``; with ``methods`` also ``_ci_method``, how its interval was made)."""

    def row(name, cat, task, s):
        r = {"slice": name, "category": cat, "task": task, "items": s["items"], "too_few": s.get("too_few", False)}
        for k in METRICS:
            r[k] = s[k]
            ci = s["ci"].get(k)
            r[f"{k}_lo"], r[f"{k}_hi"] = ci if ci else (None, None)
            if methods:
                r[f"{k}_ci_method"] = s.get("ci_method", {}).get(k)
        return r

    out = [row("overall", None, None, doc)]
    for cat, s in doc["by_category"].items():
        out.append(row("category", cat, None, s))
        for task, st in doc["by_category_task"].get(cat, {}).items():
            out.append(row("category x task", cat, task, st))
    return out
