"""Honest trade-off points: short labels, the minimum sample size, the Pareto front per edition among
eligible runs (:func:`automonitor.analysis.metrics.pareto_front`), coincident points spread apart, and which
sample sets a plot or its front mixes."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from automonitor.errors import InputError
from automonitor.escaping import md_escape
from automonitor.runs.coverage import PARTIAL_NOT_ELIGIBLE
from automonitor.views.run_labels import BACKEND_PREFIX
from automonitor.vocab import RunStatus


#: Run statuses whose MR/FAR rest on part of the samples only, with the word shown (in a point's label, in parentheses:
#: "monitor (template) (unfinished: running)"; "unfinished (running)" closed two parentheses at once, trial60).
INCOMPLETE_STATUSES: dict[RunStatus, str] = {
    "cancelled": "cancelled",
    "failed": "unfinished: failed",
    "running": "unfinished: running",
    "pending": "unfinished: pending",
}

SHOW_DUPLICATES_LABEL = "Show derived runs identical to an input"
"""The Trade-off control (under Options) that draws the derived runs :func:`honest_points` hides."""

DEFAULT_MIN_N = 100
"""Default minimum number of judged samples (TP+FN+FP+TN) of a slice for a run to enter the Pareto front."""

TOO_FEW = "too few judged samples: not on the front"
"""Why a run under the minimum sample size is drawn hollow (its hover says it)."""


TEMPLATE_SHORT = {
    "direct": "direct",
    "evidence": "evid.",
    "direct-fewshot": "direct-fs",
    "evidence-fewshot": "evid.-fs",
}


#: The backends whose class says ``template_independent = True`` (their verdicts do not depend on the prompt
#: template: ``rules`` reads no prompt; one run stands for every template, their runs are labelled without a
#: template), written out so that labelling a point imports no backend (the registry imports every backend
#: module and the pricing table); ``tests/views/test_run_labels.py`` checks it against
#: :data:`automonitor.runs.monitors.REGISTRY`.
TEMPLATE_INDEPENDENT_BACKENDS: frozenset[str] = frozenset({"rules"})


def short_label(
    monitor: str, template: str, backend: str | None = None, max_len: int = 22, *, whole_path: bool = False
) -> str:
    """A short text label for a measured point: ``"<model> <template>"`` where the model is the last
    path part of the monitor spec after its backend prefix (``llamacpp:/m/gemma-3-270m.gguf`` ->
    ``gemma-3-270m``, ``openai:acme/guard-v1`` -> ``guard-v1``) when the spec is a model path
    (:data:`MODEL_PATH`: segments of letters, digits and ``._-`` between slashes); any other name (with
    spaces, markup such as ``<b>x</b>`` or ``[red]x[/red]``, or a URL) keeps its text from the start.
    ``whole_path``: the model path is kept whole (``acme/guard-v1``), as :func:`honest_points` labels
    runs whose last parts collide. Cut to ``max_len`` characters with an ellipsis; template-independent
    backends (``rules``) get no template. Plain text: escape it where it is shown (``plot_text``)."""
    backend = backend or str(monitor).split(":", 1)[0]
    name = str(monitor)
    if is_derived(name, backend):
        return f"{derived_name(name, max_len=max(max_len, DERIVED_LABEL_MAX))} {TEMPLATE_SHORT.get(template, template)}"
    return _measured_label(name, template, backend, max_len, whole_path=whole_path)


#: A model path as a monitor spec names one (after its backend prefix): ``org/model``, ``/m/x.gguf``,
#: ``./models/x.gguf``, ``C:\\m\\x.gguf`` (either separator); each segment letters, digits and ``._-``.
MODEL_PATH = re.compile(r"^(?:[A-Za-z]:)?[/\\]?(?:[A-Za-z0-9._-]+[/\\])+[A-Za-z0-9._-]+$")


#: A derived run's monitor name as :mod:`automonitor.analysis.derive` writes it: "<recipe> <rule> (<inputs>)"
_DERIVED_NAME = re.compile(r"(ensemble|thresholds|cascade) ")
#: An input of a derived run in its monitor name: "<input monitor>@<last 6 characters of its run id>"
_DERIVED_INPUT = re.compile(r"([^\s(+]+)@([^\s;)+@]{1,6})(?=[\s;)]|$)")
#: The longest recipe-and-inputs part of a derived run's :func:`short_label` (characters)
DERIVED_LABEL_MAX = 40
#: The longest name of one input inside it
_INPUT_MAX = 14


def derived_name(monitor: str, max_len: int = DERIVED_LABEL_MAX) -> str:
    """The recipe and the runs a derived run derives from, short, from its monitor name
    (:mod:`automonitor.analysis.derive`): ``"ensemble OR (rules:rules-v1@b84c59 + probe:tfidf-lr@8fd0c6)"`` ->
    ``"OR: rules-v1 + tfidf-lr"``, ``"cascade (probe:tfidf-lr@8fd0c6 then rules:rules-v1@b84c59; 0.2/0.8)"``
    -> ``"cascade tfidf-lr → rules-v1"``, ``"thresholds far<=0.2 by category (probe:tfidf-lr@8fd0c6)"`` ->
    ``"thresholds far<=0.2: tfidf-lr"``. Each input is named as a measured point is (:func:`short_label`
    without the template, at most 14 characters), so derived runs built on different monitors get different
    labels (two runs on the same monitor are told apart by :func:`honest_points`). A name whose inputs cannot
    be read keeps its recipe and rule ("ensemble or"). At most ``max_len`` characters (cut with "…")."""
    recipe = re.sub(r"\s*\(.*$", "", monitor).strip() or monitor
    inputs = [_measured_label(m, "", None, _INPUT_MAX, template_free=True) for m, _ in _DERIVED_INPUT.findall(monitor)]
    kind, _, rule = recipe.partition(" ")
    if not inputs:
        text = recipe
    elif kind == "cascade" and len(inputs) == 2:
        text = f"cascade {inputs[0]} → {inputs[1]}"
    elif kind == "thresholds":
        text = f"thresholds {rule.split(' by ', 1)[0]}: {', '.join(inputs)}"
    else:
        text = f"{rule or kind}: {' + '.join(inputs)}"
    return text if len(text) <= max_len else text[: max_len - 1] + "…"


def _measured_label(
    monitor: str,
    template: str,
    backend: str | None,
    max_len: int,
    *,
    template_free: bool = False,
    whole_path: bool = False,
) -> str:
    """:func:`short_label` of a measured run (``template_free``: the name only, whatever the backend)."""
    name = monitor
    backend = backend or name.split(":", 1)[0]
    prefix = BACKEND_PREFIX.match(name)
    if prefix:
        name = name[prefix.end() :] or name
    path = bool(MODEL_PATH.match(name))
    if path and not whole_path:  # a model id or a file path: its last part (or the whole path)
        name = re.split(r"[/\\]", name)[-1] or name
    if path or not re.search(r"[\s/\\]", name):  # a file name loses its weights extension
        name = re.sub(r"\.(gguf|bin|safetensors)$", "", name, flags=re.I) or name
    if len(name) > max_len:
        name = name[: max_len - 1] + "…"
    if template_free or backend in TEMPLATE_INDEPENDENT_BACKENDS:
        return name
    return f"{name} {TEMPLATE_SHORT.get(template, template)}"


def judged(points: pd.DataFrame) -> pd.Series:
    """Judged samples per point: ``tp + fn + fp + tn`` (0 where missing)."""
    cols = [c for c in ("tp", "fn", "fp", "tn") if c in points]
    if not cols:
        return pd.Series([0] * len(points), index=points.index)
    return points[cols].fillna(0).astype(int).sum(axis=1)


def pareto_mask(mr: Sequence[float], far: Sequence[float], eligible: Sequence[bool]) -> list[bool]:
    """Pareto front (both rates minimised) over the eligible points only: a point is on the front when
    it is eligible and no other eligible point has ``mr <=`` and ``far <=`` with one strictly less
    (:func:`automonitor.analysis.metrics.pareto_front` over the eligible points). Ineligible points and points
    with a missing rate are never on the front. Source: the paper's Pareto analysis (Sec. 4)."""
    from automonitor.analysis.metrics import pareto_front

    keep = [bool(e) and not (pd.isna(m) or pd.isna(f)) for m, f, e in zip(mr, far, eligible)]
    front = pareto_front([m if k else None for m, k in zip(mr, keep)], [f if k else None for f, k in zip(far, keep)])
    return [bool(x) for x in front]


def spread_coincident(
    x: Sequence[float], y: Sequence[float], radius: float = 0.012
) -> tuple[list[float], list[float], list[int]]:
    """Plot positions that keep coincident points apart: points with identical (rounded to 1e-9)
    coordinates are placed on a small circle of ``radius`` (plot units) around the true position, so
    each stays visible and clickable. Returns ``(x_plot, y_plot, group_size)`` (``group_size`` = how many
    points share the position; 1 = drawn at its true place)."""
    keys = [(round(float(a), 9), round(float(b), 9)) for a, b in zip(x, y)]
    groups: dict[tuple[float, float], list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    xp, yp, size = [float(v) for v in x], [float(v) for v in y], [1] * len(keys)
    for members in groups.values():
        if len(members) < 2:
            continue
        for j, i in enumerate(members):
            ang = 2 * math.pi * j / len(members) + math.pi / 4
            xp[i] = xp[i] + radius * math.cos(ang)
            yp[i] = yp[i] + radius * math.sin(ang)
            size[i] = len(members)
    return xp, yp, size


def honest_points(
    points: pd.DataFrame,
    sets: pd.DataFrame | None = None,
    *,
    min_n: int = DEFAULT_MIN_N,
    archived: Iterable[str] = (),
    show_archived: bool = False,
    backends: Mapping[str, str] | None = None,
    statuses: Mapping[str, str] | None = None,
    include_incomplete: bool = False,
    duplicates: Mapping[str, str] | None = None,
    show_duplicates: bool = False,
) -> pd.DataFrame:
    """Trade-off points ready to draw: honest labels, coincident points, the minimum sample size, archived
    and incomplete runs, one front per edition.

    Args:
        points: :func:`automonitor.views.tradeoff_points` output (``run_id, monitor, template, mr, far,
            tp, fn, fp, tn, ...``).
        sets: :func:`run_sample_sets` output (adds ``edition, fingerprint, sample_set``).
        min_n: minimum judged samples of the slice to be eligible for the front (>= 1).
        archived: archived run ids; left out unless ``show_archived`` (then flagged ``archived``).
        backends: run id -> backend (for template-independent labels); default: monitor prefix.
        statuses: run id -> run status. A run whose status is in :data:`INCOMPLETE_STATUSES`
            (cancelled, or unfinished: failed/running/pending) is flagged ``incomplete``, its label and
            ``status_text`` name it, and it stays off the front unless ``include_incomplete``.
        duplicates: derived run id -> the input run id whose verdicts it repeats exactly
            (:func:`automonitor.views.identical_derived`); such runs are left out unless
            ``show_duplicates`` (then flagged ``duplicate_of`` and kept off the front).

    Returns:
        the points with MR/FAR defined plus ``judged`` (int), ``eligible`` (bool: at least ``min_n`` judged, not
        ``not_eligible`` in ``points`` (a partial imported run, :func:`automonitor.views.tradeoff_points`), complete
        unless ``include_incomplete``, no hidden duplicate), ``not_eligible`` (why a run is drawn hollow, for its
        hover: the points' reason, else :data:`TOO_FEW` under ``min_n``; ``""`` otherwise), ``on_front`` (the
        Pareto front among eligible points *of the same edition*), ``label`` (short text; a run judged
        under a monitor view other than ``full`` ends with ``[view]``),
        ``x_plot``/``y_plot`` (coincident points spread apart), ``coincide`` (group size), ``archived``.
        A point with ``marks`` (:func:`automonitor.views.tradeoff_points`: ``partial: N of M test
        samples``, ``lenient parse``, ``legacy score``, ``errors N%``) has them in brackets at the end of its label.
    Raises:
        InputError: ``min_n < 1`` (field ``min_n``).
    """
    if min_n < 1:
        raise InputError("the minimum number of judged samples must be a positive integer", field="min_n")
    p = _shown_points(points, set(archived), show_archived)
    dup = dict(duplicates or {})
    p["duplicate_of"] = [dup.get(r, "") for r in p["run_id"]]
    if not show_duplicates:
        p = p[p["duplicate_of"] == ""].reset_index(drop=True)
    st = dict(statuses or {})
    p["status"] = [st.get(r, "finished") for r in p["run_id"]]
    p["status_text"] = [INCOMPLETE_STATUSES.get(x, "") for x in p["status"]]
    p["incomplete"] = p["status_text"] != ""
    p = _with_sample_sets(p, sets)
    p["judged"] = judged(p)
    if "not_eligible" not in p:
        p["not_eligible"] = ""
    p["not_eligible"] = p["not_eligible"].fillna("").astype(str)
    p["eligible"] = (
        (p["judged"] >= min_n)
        & (p["not_eligible"] == "")
        & (include_incomplete | ~p["incomplete"].astype(bool))
        & (p["duplicate_of"] == "")
    )
    p["not_eligible"] = [why or (TOO_FEW if n < min_n else "") for why, n in zip(p["not_eligible"], p["judged"])]
    p["on_front"] = front_by_edition(p)
    bk = backends or {}
    views = p["view"] if "view" in p else pd.Series(["full"] * len(p), dtype=object)
    marks = list(p["marks"]) if "marks" in p else [""] * len(p)
    suffixes = [
        (f" [{v}]" if v and v != "full" else "")
        + (f" ({txt})" if txt else "")
        + (" (= input)" if d else "")
        + (f" [{mk}]" if mk else "")
        for txt, d, v, mk in zip(p["status_text"], p["duplicate_of"], views, marks)
    ]
    labels = distinct_measured_labels(list(p["run_id"]), list(p["monitor"]), list(p["template"]), suffixes, bk)
    p["label"] = distinct_derived_labels(labels, list(p["run_id"]), list(p["monitor"]), bk)
    xp, yp, size = spread_coincident(list(p["far"]), list(p["mr"])) if len(p) else ([], [], [])
    p["x_plot"], p["y_plot"], p["coincide"] = xp, yp, size
    return p


def is_derived(monitor: str, backend: str | None = None) -> bool:
    """Whether a run is derived (:mod:`automonitor.analysis.derive`): its backend is ``derived`` or its monitor
    name is a recipe's ("ensemble ...", "thresholds ...", "cascade ...")."""
    return backend == "derived" or bool(_DERIVED_NAME.match(str(monitor)))


def distinct_measured_labels(
    run_ids: Sequence[str],
    monitors: Sequence[str],
    templates: Sequence[str],
    suffixes: Sequence[str] | None = None,
    backends: Mapping[str, str] | None = None,
) -> list[str]:
    """The labels of points (:func:`short_label` plus each point's ``suffixes``: view, status, marks) with
    no two measured runs under one label: where measured runs of different monitors collide, they are
    labelled with their whole model path (``acme/guard-v1 direct``, ``other/guard-v1 direct``); runs still
    sharing a label get `` #`` and the last 6 characters of their run id appended (the whole id where
    those collide too). Derived runs keep :func:`short_label` (:func:`distinct_derived_labels` handles
    them). Same length and order as ``run_ids``."""
    bk = backends or {}
    sfx = list(suffixes) if suffixes is not None else [""] * len(run_ids)
    measured = [not is_derived(m, bk.get(r)) for r, m in zip(run_ids, monitors)]

    def label(i: int, whole_path: bool = False) -> str:
        return short_label(monitors[i], templates[i], bk.get(run_ids[i]), whole_path=whole_path) + sfx[i]

    labels = [label(i) for i in range(len(run_ids))]
    for group in _measured_collisions(labels, measured):
        if len({monitors[i] for i in group}) > 1:
            for i in group:
                labels[i] = label(i, whole_path=True)
    for tail in (lambda rid: rid[-6:], lambda rid: rid):
        for group in _measured_collisions(labels, measured):
            for i in group:
                labels[i] = f"{label(i, whole_path=True)} #{tail(str(run_ids[i]))}"
    return labels


def _measured_collisions(labels: Sequence[str], measured: Sequence[bool]) -> list[list[int]]:
    """Index groups of measured points sharing a label with another point (measured or derived)."""
    groups: dict[str, list[int]] = {}
    for i, lab in enumerate(labels):
        groups.setdefault(lab, []).append(i)
    return [[i for i in g if measured[i]] for g in groups.values() if len(g) > 1 and any(measured[i] for i in g)]


def distinct_derived_labels(
    labels: Sequence[str], run_ids: Sequence[str], monitors: Sequence[str], backends: Mapping[str, str] | None = None
) -> list[str]:
    """``labels`` with every derived run's label made unique: a derived run whose label another point also
    has gets `` #`` and the last 6 characters of its run id appended (the id tail its monitor name gives
    each input), so two derived runs with the same recipe on runs of the same monitor (a cascade on each of
    two llamacpp runs) are never drawn under one name. Measured runs keep their labels. Same length and
    order as ``labels``."""
    bk = backends or {}
    counts = Counter(labels)
    return [
        f"{lab} #{rid[-6:]}" if counts[lab] > 1 and is_derived(mon, bk.get(rid)) else lab
        for lab, rid, mon in zip(labels, run_ids, monitors)
    ]


def _shown_points(points: pd.DataFrame, archived: set[str], show_archived: bool) -> pd.DataFrame:
    """A copy of the points with MR and FAR defined (an empty frame with the base columns when
    ``points`` has none), flagged ``archived``; archived runs left out unless ``show_archived``.
    Index reset."""
    p = points.dropna(subset=["mr", "far"]).copy() if not points.empty else points.copy()
    if "mr" not in p:
        p = pd.DataFrame(columns=["run_id", "monitor", "template", "mr", "far"])
    p["archived"] = p["run_id"].isin(archived)
    if not show_archived:
        p = p[~p["archived"]]
    return p.reset_index(drop=True)


def _with_sample_sets(points: pd.DataFrame, sets: pd.DataFrame | None) -> pd.DataFrame:
    """The points with ``edition, fingerprint, sample_set`` from ``sets`` (:func:`run_sample_sets`
    output, replacing any such columns); runs without a row get ``paper``, ``""``, ``""``."""
    p = points
    if sets is not None and not sets.empty:
        p = p.drop(columns=[c for c in ("edition", "fingerprint", "sample_set", "n_samples") if c in p])
        p = p.merge(sets[["run_id", "edition", "fingerprint", "sample_set"]], on="run_id", how="left")
    for c, default in (("edition", "paper"), ("fingerprint", ""), ("sample_set", "")):
        if c not in p:
            p[c] = default
        p[c] = p[c].fillna(default)
    return p


def front_by_edition(points: pd.DataFrame) -> pd.Series:
    """``on_front`` per point: the Pareto front (:func:`pareto_mask`) among the ``eligible`` points of
    the same ``edition``; a bool Series aligned with ``points``."""
    on_front = pd.Series(False, index=points.index)
    for _, g in points.groupby("edition"):
        on_front.loc[g.index] = pareto_mask(list(g["mr"]), list(g["far"]), list(g["eligible"]))
    return on_front


def set_summary(points: pd.DataFrame) -> list[dict[str, Any]]:
    """One entry per edition among the drawn points: ``{"edition", "runs", "sample_sets": [sample_set,
    ...]}``, largest first. More than one entry means the plot mixes test sets (the page says so)."""
    out: list[dict[str, Any]] = []
    if points.empty:
        return out
    for ed, g in points.groupby("edition"):
        out.append({"edition": ed, "runs": int(len(g)), "sample_sets": sorted(set(g["sample_set"]))})
    return sorted(out, key=lambda d: (-d["runs"], d["edition"]))


def front_sample_sets(points: pd.DataFrame) -> list[str]:
    """Distinct sample sets (``sample_set`` text: edition, size, fingerprint) of the runs on a Pareto front
    in :func:`honest_points` output, sorted; more than one means the front compares MR/FAR estimated on
    different samples (the page says so). ``[]`` when there is no front or no sample-set column."""
    if points.empty or "on_front" not in points or "sample_set" not in points:
        return []
    on = points[points["on_front"].fillna(False).astype(bool)]
    return sorted({str(x) for x in on["sample_set"].dropna()})


def hidden_duplicates_caption(
    points: pd.DataFrame, names: Mapping[str, str] | None = None, *, limit: int = 3
) -> str | None:
    """The Trade-off caption naming the derived runs hidden because their verdicts equal an input's, as
    markdown with every name escaped (:func:`automonitor.escaping.md_escape`): "1 derived run hidden:
    X gives the same verdicts as Y; turn on 'Show derived runs identical to an input' (Options) to draw
    it." (at most ``limit`` named, then "and N more").

    Args:
        points: :func:`honest_points` output with ``show_duplicates=True`` for the view shown (same
            slice, templates, archive and edition filters); its rows with ``duplicate_of`` set are the
            runs the default view hides.
        names: run id -> the label to show (default: the run id).
    Returns:
        the caption, or ``None`` when no run of the view is hidden so.
    """
    if points.empty or "duplicate_of" not in points:
        return None
    hidden = [(str(r), str(d)) for r, d in zip(points["run_id"], points["duplicate_of"]) if d]
    if not hidden:
        return None
    label = dict(names or {})
    pairs = [
        f"{md_escape(label.get(r, r))} gives the same verdicts as {md_escape(label.get(d, d))}"
        for r, d in hidden[: max(1, limit)]
    ]
    more = len(hidden) - len(pairs)
    n = len(hidden)
    return (
        f"{n} derived run{'s' if n > 1 else ''} hidden: "
        + "; ".join(pairs)
        + (f"; and {more} more" if more else "")
        + f"; turn on *{md_escape(SHOW_DUPLICATES_LABEL)}* (Options) to draw {'them' if n > 1 else 'it'}."
    )


def small_subset_note(limit: int | None, min_n: int = DEFAULT_MIN_N) -> str | None:
    """The launch form's warning for a subset of ``limit`` test samples below the trade-off plane's
    minimum ``min_n`` (its default :data:`DEFAULT_MIN_N`): such a run is drawn hollow, left off the
    Pareto front and out of Pearson r. ``None`` for no subset (``limit`` 0 or ``None``: every test
    sample) or one of at least ``min_n``."""
    if not limit or limit >= min_n:
        return None
    return (
        f"A subset of {limit} sample{'' if limit == 1 else 's'} is below the trade-off plane's minimum of "
        f"{min_n} judged samples: the run will be drawn hollow, off the Pareto front and out of Pearson r "
        f"(use {min_n} or more, or lower the plane's minimum there)."
    )


def small_runs_note(small: int, min_n: int) -> str:
    """The trade-off caption's sentence on runs drawn hollow: ``small`` runs have fewer than ``min_n``
    judged samples (TP+FN+FP+TN) in the slice shown and are left off the Pareto front. Says how many, with
    singular and plural right ("1 judged sample", "2 runs"), or that none is below the minimum."""
    need = f"{min_n} judged sample{'' if min_n == 1 else 's'}"
    if small == 0:
        return f"Every run shown has at least {need} in this slice (runs with fewer are drawn hollow, off the front)."
    runs = "1 run has" if small == 1 else f"{small} runs have"
    return f"Hollow: {runs} fewer than {need} in this slice, so not on the front."


#: The reasons :func:`hollow_reasons` gives, in the order :func:`hollow_runs_note` names them.
HOLLOW_REASONS = ("too few", "partial import", "unfinished", "identical to an input", "not eligible")


def hollow_reasons(points: pd.DataFrame, min_n: int) -> list[str]:
    """Why each run of ``points`` (:func:`honest_points` output: ``eligible``, ``not_eligible``, ``judged``,
    ``incomplete``, ``duplicate_of``) is drawn hollow, one of :data:`HOLLOW_REASONS`, or ``""`` for an eligible
    run. A run with several reasons gets the first that holds of: a partial imported file (``not_eligible`` is
    :data:`automonitor.runs.coverage.PARTIAL_NOT_ELIGIBLE`: off the front whatever its size), unfinished or
    cancelled (``incomplete``), a derived run identical to its input (``duplicate_of``), fewer than ``min_n``
    judged samples; any other ineligible run is ``"not eligible"``. So a partial import with exactly ``min_n``
    judged samples is counted as a partial import, never as too small (trial48)."""
    out = []
    n = len(points)
    col = lambda name, default: list(points[name]) if name in points else [default] * n  # noqa: E731
    for ok, why, judged_n, incomplete, dup in zip(
        col("eligible", True), col("not_eligible", ""), col("judged", min_n), col("incomplete", False),
        col("duplicate_of", ""),
    ):  # fmt: skip
        if bool(ok):
            out.append("")
        elif why == PARTIAL_NOT_ELIGIBLE:
            out.append("partial import")
        elif bool(incomplete):
            out.append("unfinished")
        elif dup:
            out.append("identical to an input")
        elif int(judged_n) < min_n:
            out.append("too few")
        else:
            out.append("not eligible")
    return out


def hollow_runs_note(points: pd.DataFrame, min_n: int) -> str:
    """The trade-off caption's sentence on the runs of ``points`` (:func:`honest_points` output) drawn hollow,
    each counted under its reason (:func:`hollow_reasons`), as the text report's hollow line does: "Hollow: 2
    runs have fewer than 100 judged samples in this slice; 1 run is a partial import (...); 1 run is
    unfinished or cancelled, so not on the front." With no hollow run, :func:`small_runs_note`'s sentence for none."""
    counts = Counter(r for r in hollow_reasons(points, min_n) if r)
    if not counts:
        return small_runs_note(0, min_n)
    need = f"{min_n} judged sample{'' if min_n == 1 else 's'}"
    n_of = lambda k, one, many: f"1 {one}" if counts[k] == 1 else f"{counts[k]} {many}"  # noqa: E731
    text = {
        "too few": n_of("too few", "run has", "runs have") + f" fewer than {need} in this slice",
        "partial import": n_of("partial import", "run is a partial import", "runs are partial imports")
        + " (part of the test set: not comparable)",
        "unfinished": n_of("unfinished", "run is unfinished or cancelled", "runs are unfinished or cancelled"),
        "identical to an input": n_of("identical to an input", "derived run repeats", "derived runs repeat")
        + " an input's verdicts",
        "not eligible": n_of("not eligible", "run is", "runs are") + " not eligible",
    }
    return "Hollow: " + "; ".join(text[r] for r in HOLLOW_REASONS if counts[r]) + ", so not on the front."
