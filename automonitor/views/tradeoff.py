"""Report -> frames for the Trade-off and Drill-down pages: the MR-FAR points of a slice, the paper's
reported points for it, the Pareto front as run ids (from :mod:`automonitor.analysis.metrics`, as in the
report), and a run entry's slice."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence, TypedDict

import pandas as pd

from automonitor import vocab
from automonitor.analysis import metrics
from automonitor.analysis.metrics import OperatingPointDict
from automonitor.analysis.report_schema import Report, ReportLike, as_report
from automonitor.analysis.run_metrics import REGISTRY as METRICS
from automonitor.escaping import esc, md_escape
from automonitor.jsontypes import JSONValue
from automonitor.runs.coverage import not_eligible_reason
from automonitor.views.cells import MISSING, cell, display_frame
from automonitor.views.honest_points import DEFAULT_MIN_N, honest_points

CELL_TITLES: dict[str, str] = {
    "tp": "TP: misbehavior flagged",
    "fn": "FN: misbehavior missed",
    "fp": "FP: benign flagged (false alarm)",
    "tn": "TN: benign passed",
    "unscored": "Unscored",
}


def pareto_ids(points: pd.DataFrame) -> list[str]:
    """Run ids on the Pareto front of the MR-FAR plane (both minimised), ordered by FAR ascending.

    A point is on the front when no other point has ``mr <=`` and ``far <=`` with one strictly less
    (:func:`automonitor.analysis.metrics.pareto_front`); of points at exactly the same place only the first (by
    FAR, MR, then input order) is listed. ``points`` needs columns ``run_id, mr, far``; rows with a
    missing MR or FAR are ignored.
    """
    ordered = points.dropna(subset=["mr", "far"]).sort_values(["far", "mr"], kind="mergesort")
    on_front = metrics.pareto_front(list(ordered["mr"]), list(ordered["far"]))
    front: list[str] = []
    seen: set[tuple[float, float]] = set()
    for run_id, mr, far, on in zip(ordered["run_id"], ordered["mr"], ordered["far"], on_front):
        if on and (mr, far) not in seen:
            front.append(run_id)
            seen.add((mr, far))
    return front


def slice_key(category: str | None, task: str | None) -> tuple[str, ...]:
    """The ``analysis.run_points`` slice for an optional category and task filter."""
    if category and task:
        return ("category_task", category, task)
    if category:
        return ("category", category)
    if task:
        return ("task", task)
    return ("overall",)


def tradeoff_points(
    report: ReportLike,
    category: str | None = None,
    task: str | None = None,
    templates: Sequence[str] | None = None,
) -> pd.DataFrame:
    """MR-FAR points of the report's runs for a slice (``analysis.run_points``) plus ``tp, fn, fp, tn``
    and ``on_front`` recomputed over the runs kept by the ``templates`` filter (``None`` = all).

    ``report``: a :class:`automonitor.analysis.report_schema.Report` (or its dict, validated against the schema).
    Columns: run_id, monitor, template, kind, n, mr, far, mr_lo, mr_hi, far_lo, far_hi (Wilson 95%),
    unscored, unscored_rate, tp, fn, fp, tn, on_front (never a ``not_eligible`` run), not_eligible (why the run is
    not eligible whatever its size, :func:`automonitor.runs.coverage.not_eligible_reason`: a partial imported run;
    ``""`` for another), marks (what the run is marked with: ``partial: N of M test
    samples``, ``lenient parse``, ``legacy score``, ``errors N%``; comma-separated, empty when none); on the overall slice, one column per
    registered run metric (:mod:`automonitor.analysis.run_metrics`) under its label (a number as it is,
    another value as its display text; runs without it missing).
    Raises ``pydantic.ValidationError`` for a dict that does not follow the report schema.
    """
    from automonitor import analysis

    typed = as_report(report)
    pts = analysis.run_points(typed, slice_key(category, task))
    if templates is not None:
        pts = pts[pts["template"].isin(list(templates))].reset_index(drop=True)
    slices = {e.run_id: e.slice(category, task) for e in typed.runs}
    for k in ("tp", "fn", "fp", "tn"):
        pts[k] = [getattr(slices[r], k) if slices[r] is not None else None for r in pts["run_id"]]
    why = {e.run_id: not_eligible_reason(e.coverage.partial if e.coverage else None) or "" for e in typed.runs}
    pts["not_eligible"] = [why.get(r, "") for r in pts["run_id"]]
    off = list(pts["not_eligible"] != "")
    mr, far = ([None if o else v for v, o in zip(pts[c], off)] for c in ("mr", "far"))
    pts["on_front"] = metrics.pareto_front(mr, far) if len(pts) else pd.Series(dtype=bool)
    marks = {e.run_id: ", ".join(e.answers.marks) if e.answers else "" for e in typed.runs}
    pts["marks"] = [marks.get(r, "") for r in pts["run_id"]]
    if category is None and task is None:  # a registered metric is over all of a run's samples
        for name, m in METRICS.items():
            vals = {e.run_id: (e.metrics or {}).get(name) for e in typed.runs if name in (e.metrics or {})}
            if vals:
                shown = {r: v if isinstance(v, (int, float)) or v is None else m.show(v) for r, v in vals.items()}
                pts[m.label] = [shown.get(r) for r in pts["run_id"]]
    return pts


@dataclass(frozen=True)
class TradeoffOptions:
    """What the Trade-off page draws: the one options object its loader takes (hashable, so a page cache
    keys on it).

    Attributes:
        invalid: the unscored policy (``exclude``/``as-flag``/``as-miss``, as ``automonitor report --invalid``:
            :func:`automonitor.analysis.metrics.policy_verdict`; an ``error`` is never counted).
        category, task: the slice (``None``: overall).
        templates: prompt templates kept (an empty tuple keeps none).
        min_n: minimum judged samples of the slice for a point to be eligible for the front (>= 1).
        archived: archived run ids; left out unless ``show_archived``.
        edition: only the runs that judged this edition's test set (``None``: every run).
        show_paper: add the paper's reported points of the slice.
        include_incomplete: let cancelled or unfinished runs onto the front.
        show_duplicates: draw derived runs identical to an input (kept off the front).
        show_ladder: draw the detector ladder's runs (kind ``ladder``, written by the build; the loader then
            reports them too); off by default.
    """

    invalid: str = "exclude"
    category: str | None = None
    task: str | None = None
    templates: tuple[str, ...] = ()
    min_n: int = DEFAULT_MIN_N
    archived: tuple[str, ...] = ()
    show_archived: bool = False
    edition: str | None = None
    show_paper: bool = False
    include_incomplete: bool = False
    show_duplicates: bool = False
    show_ladder: bool = False


@dataclass(frozen=True)
class TradeoffSelection:
    """The Trade-off page's points for one :class:`TradeoffOptions` (:func:`tradeoff_selection`).

    Attributes:
        raw: :func:`tradeoff_points` of the slice (generation runs left out).
        points: :func:`automonitor.views.honest_points` of ``raw``, of the edition when one is chosen.
        front: run ids on the Pareto front among ``points``.
        reported: the paper's reported points of the slice (:func:`reported_for`), ``None`` unless ``show_paper``.
        hidden: derived runs left out as copies of an input (rows with ``duplicate_of``; empty when
            ``show_duplicates``).
    """

    raw: pd.DataFrame
    points: pd.DataFrame
    front: list[str]
    reported: pd.DataFrame | None
    hidden: pd.DataFrame


def tradeoff_selection(
    report: Report,
    options: TradeoffOptions,
    *,
    sample_sets: pd.DataFrame | None = None,
    statuses: Mapping[str, str] | None = None,
    duplicates: Mapping[str, str] | None = None,
    reported: pd.DataFrame | None = None,
) -> TradeoffSelection:
    """The points the Trade-off page draws for ``options``: the slice's points of ``report`` without generation
    runs, made honest (:func:`automonitor.views.honest_points`: labels, minimum size, archived, incomplete and
    duplicate runs, one front per edition), filtered to ``options.edition``.

    Args:
        report: the analysis report (:class:`automonitor.analysis.report_schema.Report`).
        options: the page's selection.
        sample_sets: :func:`automonitor.views.run_sample_sets` (edition and sample set of each run).
        statuses: run id -> run status (incomplete runs are flagged).
        duplicates: derived run id -> the input run it repeats (:func:`automonitor.views.identical_derived`).
        reported: the paper's reported points (:func:`automonitor.analysis.reported_points`), used when
            ``options.show_paper``.
    Raises:
        InputError: ``options.min_n < 1`` (field ``min_n``).
    """
    templates = list(options.templates)
    raw = tradeoff_points(report, options.category, options.task, templates)
    if "kind" in raw:
        raw = raw[~raw["kind"].isin(["generation"] if options.show_ladder else ["generation", "ladder"])]

    def points(with_duplicates: bool) -> pd.DataFrame:
        pts = honest_points(
            raw,
            sample_sets,
            min_n=options.min_n,
            archived=options.archived,
            show_archived=options.show_archived,
            statuses=statuses,
            include_incomplete=options.include_incomplete,
            duplicates=duplicates,
            show_duplicates=with_duplicates,
        )
        return pts[pts["edition"] == options.edition].reset_index(drop=True) if options.edition else pts

    pts = points(options.show_duplicates)
    every = pts if options.show_duplicates else points(True)
    hidden = every.iloc[0:0]
    if not options.show_duplicates and len(every) and "duplicate_of" in every:
        hidden = every[every["duplicate_of"].fillna("").astype(bool)]
    paper = (
        reported_for(reported, options.category, options.task, templates)
        if options.show_paper and reported is not None
        else None
    )
    front = list(pts.loc[pts["on_front"], "run_id"]) if len(pts) else []
    return TradeoffSelection(raw=raw, points=pts, front=front, reported=paper, hidden=hidden)


def reported_for(
    reported: pd.DataFrame, category: str | None, task: str | None, templates: Sequence[str] | None = None
) -> pd.DataFrame:
    """The paper's reported points matching a slice (overall, or one category; the paper reports no
    task slices), with a ``label`` column "<monitor> (<template>)" for the plot."""
    if reported is None or reported.empty or task:
        return pd.DataFrame(columns=["label", "mr", "far"])
    if category:
        d = reported[(reported["slice"] == "category") & (reported["category"] == category)]
    else:
        d = reported[reported["slice"] == "overall"]
    if templates is not None:
        d = d[d["template"].isin(list(templates))]
    d = d.copy()
    d["label"] = d["monitor"] + " (" + d["template"] + ")"
    return d.reset_index(drop=True)


class AuditFlag(TypedDict):
    """A flagged audit slice inside the trade-off's slice (:func:`audit_flags`): where, how many pairs, the
    strongest trivial baseline and its AUROC, and the note in words."""

    source: JSONValue
    category: JSONValue
    task: JSONValue
    pairs: JSONValue
    baseline: str
    auroc: float
    note: str


class EditionAuditFlag(AuditFlag):
    """An :class:`AuditFlag` of one edition's audit (:func:`edition_audit_flags`), with its badge text."""

    edition: str
    badge: str


def audit_flags(doc: Mapping[str, JSONValue] | None, category: str | None, task: str | None) -> list[AuditFlag]:
    """The audit's flagged slices (``automonitor audit`` document) inside the trade-off's
    slice (``category``/``task``; ``None`` = all): ``[{"source", "category", "task", "pairs",
    "baseline", "auroc", "note"}]`` with the strongest trivial baseline of each (largest |AUROC - 0.5|)
    and the note "a trivial baseline reaches AUROC 0.98 here"; strongest first. ``[]`` without a
    document."""
    out: list[AuditFlag] = []
    slices = (doc or {}).get("slices")
    for s in slices if isinstance(slices, list) else []:
        if not isinstance(s, dict) or not s.get("flagged"):
            continue
        if (category and s.get("category") != category) or (task and s.get("task") != task):
            continue
        baselines = s.get("baselines")
        items = baselines.items() if isinstance(baselines, dict) else ()
        base = {k: float(v) for k, v in items if isinstance(v, (int, float))}
        if not base:
            continue
        name = max(base, key=lambda k: abs(base[k] - 0.5))
        auroc = base[name]
        out.append(
            {
                "source": s.get("source"),
                "category": s.get("category"),
                "task": s.get("task"),
                "pairs": s.get("pairs"),
                "baseline": name,
                "auroc": auroc,
                "note": f"a trivial baseline ({name}) reaches AUROC {auroc:.2f} here",
            }
        )
    return sorted(out, key=lambda d: -abs(d["auroc"] - 0.5))


def audit_editions(edition: str | None, shown: Iterable[object] = ()) -> list[str]:
    """The editions whose audits flag the trade-off's slices: ``[edition]`` for one selected edition;
    for all editions (``edition`` ``None``) every edition among the points ``shown`` (their
    ``edition`` column), in :data:`automonitor.vocab.EDITIONS` order then by name, or ``["paper"]``
    (the default edition) when no point names one."""
    if edition:
        return [str(edition)]
    found = {str(e) for e in shown if isinstance(e, str) and e}
    ordered = [e for e in vocab.EDITIONS if e in found] + sorted(found - set(vocab.EDITIONS))
    return ordered or [vocab.EDITIONS[0]]


def edition_audit_flags(
    docs: Mapping[str, Mapping[str, JSONValue] | None], category: str | None, task: str | None
) -> list[EditionAuditFlag]:
    """The flagged slices of several editions' audits (``{edition: automonitor audit document or
    None}``) inside the trade-off's slice: the :func:`audit_flags` rows of each edition plus
    ``"edition"`` and ``"badge"`` (the badge text naming its edition: ``"audit flag (paper): source ·
    category / task"``); strongest first (largest |AUROC - 0.5|), then by edition order given. An
    edition without a document contributes nothing."""
    out: list[EditionAuditFlag] = []
    for edition, doc in docs.items():
        for f in audit_flags(doc, category, task):
            badge = f"audit flag ({edition}): {f['source']} · {f['category']} / {f['task']}"
            out.append({**f, "edition": edition, "badge": badge})
    return sorted(out, key=lambda d: -abs(d["auroc"] - 0.5))


#: How many audit-flag badges the trade-off shows above its note (the rest: Benchmark health page).
MAX_AUDIT_BADGES = 6


def audit_badges_html(flags: Sequence[EditionAuditFlag], limit: int = MAX_AUDIT_BADGES) -> str:
    """The trade-off's audit-flag badges (:func:`edition_audit_flags` rows, the first ``limit``) as one
    ``<div data-testid="audit-flags">`` of escaped, red-outlined ``<span>`` badges, each with its
    edition, and a dashed "+N more" badge when more than ``limit`` slices are flagged; ``""`` without
    flags."""
    if not flags:
        return ""
    style = (
        "display:inline-block;margin:0 0.4rem 0.3rem 0;padding:0.15rem 0.55rem;border-radius:0.8rem;"
        "border:1px solid #b3261e;color:#b3261e;font-size:0.85rem;font-weight:600"
    )
    spans = "".join(
        f'<span data-edition="{esc(f.get("edition"))}" style="{style}">{esc(f.get("badge"))}</span>'
        for f in list(flags)[:limit]
    )
    rest = len(flags) - min(len(flags), limit)
    if rest > 0:  # the note counts every flagged slice: say how many badges are not drawn
        spans += f'<span data-testid="audit-flags-more" style="{style};border-style:dashed">+{rest} more</span>'
    return f'<div data-testid="audit-flags">{spans}</div>'


def audit_flags_note(flags: Sequence[EditionAuditFlag], editions: Sequence[str]) -> str:
    """The note under the trade-off plot saying which editions' audits flag this view (``editions``,
    from :func:`audit_editions`), how many slices per edition, and the strongest shortcut, e.g.
    "Benchmark health (edition paper): in 2 slice(s) of this view a trivial baseline (tfidf) reaches
    AUROC 0.98 here (edition paper; the strongest; others on the Benchmark health page), so MR/FAR
    here partly measure a shortcut, not monitoring." Plain text (no markdown; escape it for
    markdown); ``""`` without flags."""
    if not flags:
        return ""
    counts = {e: sum(1 for f in flags if f.get("edition") == e) for e in editions}
    which = ", ".join(editions)
    per = "; ".join(f"{n} in {e}" for e, n in counts.items() if n)
    top = flags[0]
    many = len(flags) > 1
    return (
        f"Benchmark health (edition{'s' if len(editions) > 1 else ''} {which}): in {len(flags)} slice(s) of "
        f"this view{f' ({per})' if len(editions) > 1 else ''} {top['note']} (edition {top.get('edition')}"
        + ("; the strongest; others on the Benchmark health page" if many else "")
        + "), so MR/FAR here partly measure a shortcut, not monitoring."
    )


def localisation_shares(report: ReportLike, category: str | None, task: str | None) -> pd.DataFrame:
    """Per run, the localised hits share of the slice shown: frame ``run_id,
    localised_share, localised, loc_tp`` (share = localised / TP in [0, 1], ``None`` with no TP),
    from ``runs[].localisation`` of the report (present only for evidence runs whose judged samples
    have gold spans; other runs are left out). The slice: the category's with ``category``, else the
    task's with ``task``, else overall (localisation is not reported per category x task cell)."""
    rep = as_report(report)
    rows = []
    for r in rep.runs:
        loc = r.localisation
        if loc is None:
            continue
        sl = loc.by_category.get(category) if category else (loc.by_task.get(task) if task else loc.overall)
        if sl is None:
            continue
        rows.append(
            {
                "run_id": r.run_id,
                "localised_share": sl["localised_share"],
                "localised": sl["localised"],
                "loc_tp": sl["tp"],
            }
        )
    return pd.DataFrame(rows, columns=["run_id", "localised_share", "localised", "loc_tp"])


#: Columns of the Trade-off page's "Runs in this slice" table (:func:`slice_runs_table`), in order.
SLICE_RUNS_COLUMNS: list[str] = [
    "run_id",
    "label",
    "monitor",
    "template",
    "sample_set",
    "judged",
    "eligible",
    "tp",
    "fn",
    "fp",
    "tn",
    "unscored",
    "mr",
    "mr_lo",
    "mr_hi",
    "far",
    "far_lo",
    "far_hi",
    "on_front",
    "archived",
]

#: The cost columns of :func:`slice_runs_table` (missing for runs without cost records).
COST_COLUMNS: tuple[str, ...] = ("usd_per_1k", "s_per_1k")


def slice_runs_table(points: pd.DataFrame) -> pd.DataFrame:
    """The Trade-off page's "Runs in this slice" table from the drawn points (:func:`honest_points`
    output, with the cost columns where known): :data:`SLICE_RUNS_COLUMNS` plus the present
    :data:`COST_COLUMNS` and the registered run metrics' columns (:func:`tradeoff_points`), no missing cell: a cost column with a run without costs is text
    (:data:`MISSING` there, 4 significant digits elsewhere), else it stays numeric like the rates.
    Rows keep the points' order."""
    metric_cols = {m.label: m.fmt for m in METRICS.values() if m.label in points}
    cols = SLICE_RUNS_COLUMNS + [c for c in COST_COLUMNS if c in points] + list(metric_cols)
    return display_frame(points.reindex(columns=cols), {c: ".4g" for c in COST_COLUMNS} | metric_cols)


def difficulty_rows(report: ReportLike) -> list[dict[str, object]]:
    """The Trade-off page's Difficulty table: one row per run with difficulty rates (``run``,
    ``monitor``, ``template``, ``mr (verified)``, ``far (verified)``, ``mr (hard)``, ``far (hard)``
    with three decimals, ``judged (hard)``); a rate the run has no samples for, or an edition it has
    no members of, is :data:`MISSING`. ``[]`` when no run has difficulty rates."""
    rows = []
    for r in as_report(report).runs:
        if not r.difficulty:
            continue
        row: dict[str, object] = {"run": r.run_id, "monitor": r.monitor, "template": r.template}
        for e in vocab.DIFFICULTY_EDITIONS:
            d = r.difficulty.get(e)
            for m in ("mr", "far"):
                row[f"{m} ({e})"] = cell(getattr(d.slice, m) if d else None, ".3f")
        hard = r.difficulty.get("hard")
        row["judged (hard)"] = hard.judged if hard else MISSING
        rows.append(row)
    return rows


def operating_point_row(run: str, auroc: float | None, op: OperatingPointDict) -> dict[str, object]:
    """One row of the Trade-off page's operating-point table: the run's label, its AUROC, the
    cost-minimising threshold (``flag nothing`` for an infinite one), MR, FAR and expected cost, each
    with three decimals; an undefined value (AUROC of a one-class run) is :data:`MISSING`."""
    thr = op.get("threshold")
    return {
        "run": run,
        "AUROC": cell(auroc, ".3f"),
        "threshold": "flag nothing" if thr == float("inf") else cell(thr, ".3f"),
        "MR": cell(op.get("mr"), ".3f"),
        "FAR": cell(op.get("far"), ".3f"),
        "expected cost": cell(op.get("expected_cost"), ".3f"),
    }


#: How many runs :func:`unplotted_runs_caption` names before "and K more".
UNPLOTTED_NAMED = 5


def unplotted_runs(
    raw: pd.DataFrame,
    points: pd.DataFrame,
    statuses: Mapping[str, str] | None = None,
    archived: Iterable[str] = (),
) -> list[tuple[str, str, str]]:
    """The runs of ``raw`` (:attr:`TradeoffSelection.raw`) that are not in ``points`` (:attr:`TradeoffSelection.points`)
    because they have no MR/FAR here or are archived: ``[(monitor, run_id, why)]`` in ``raw``'s order, ``why`` in the
    words ``automonitor report`` uses: ``failed`` (the run's status, its "pending" cell), ``errors 100%`` (every call
    failed: the run's mark), ``unscored 100%`` (every answer invalid or a refusal, not all errors), ``nothing judged``, joined by ", " when several
    hold; ``archived`` for a run with MR/FAR that is archived. A run left out for another reason (edition, a
    duplicate) is not listed."""
    if raw is None or raw.empty or "mr" not in raw:
        return []
    shown = set(points["run_id"]) if points is not None and len(points) else set()
    st_, arch = statuses or {}, set(archived)
    out: list[tuple[str, str, str]] = []
    for r in raw.to_dict("records"):
        rid = str(r["run_id"])
        if rid in shown:
            continue
        if pd.isna(r.get("mr")) or pd.isna(r.get("far")):
            why = []
            if st_.get(rid) == "failed":
                why.append("failed")
            n, uns = r.get("n"), r.get("unscored")
            if "errors 100%" in str(r.get("marks") or ""):  # errors are unscored too: this says more
                why.append("errors 100%")
            elif n and not pd.isna(n) and uns is not None and not pd.isna(uns) and uns >= n:
                why.append("unscored 100%")
            elif not why and (not n or pd.isna(n)):
                why.append("nothing judged")
            out.append((str(r.get("monitor", "")), rid, ", ".join(why) or "no MR/FAR"))
        elif rid in arch:
            out.append((str(r.get("monitor", "")), rid, "archived"))
    return out


def unplotted_runs_caption(rows: Sequence[tuple[str, str, str]], limit: int = UNPLOTTED_NAMED) -> str:
    """Markdown for the Trade-off page under the plane naming the runs :func:`unplotted_runs` lists: "Not on the plane:
    monitor `run_id` (failed), ...", at most ``limit`` (>= 1) named then "and K more"; monitor names and run ids are
    user/model-supplied text, markdown-escaped (:func:`automonitor.escaping.md_escape`). ``""`` when ``rows`` is empty."""
    if not rows:
        return ""
    named = [f"{md_escape(m)} · {md_escape(r)} ({md_escape(w)})" for m, r, w in rows[: max(1, limit)]]
    more = len(rows) - len(named)
    return f"Not on the plane ({len(rows)}): " + "; ".join(named) + (f"; and {more} more" if more > 0 else "")
