"""Paper-style tables of a report: rows = monitors, columns = MR/FAR per template per slice.

Column layout (as in the paper's results table): for the overall slice and each category, MR for every
template present (direct, evidence, then the few-shot variants), then FAR for every template; the
overall slice also has the unscored rate per template (it is always shown beside MR and FAR). When a
monitor has several runs with the same template, it gets one row per run (``monitor #2``, ...).

Formats: markdown (GitHub table), LaTeX (booktabs ``tabular``), CSV (one header row with column keys
such as ``overall_mr_direct``). Rates are printed with 2 decimals; a missing rate is ``-`` (CSV: empty).
"""

from __future__ import annotations

import csv
import io
from itertools import groupby
from typing import Iterable, TypedDict, cast

from automonitor.escaping import md_escape  # names are data: no markup, links or HTML in the table
from automonitor.analysis.report_schema import Report, ReportLike, RunReport, as_report
from automonitor.analysis.run_metrics import REGISTRY as METRICS
from automonitor.data.audit.report_md import fmt2
from automonitor.runs.coverage import PARTIAL_NOT_ELIGIBLE
from automonitor.vocab import CATEGORIES, CATEGORY_NAMES, DIFFICULTY_EDITIONS, TEMPLATES

FORMATS = ("markdown", "latex", "csv")


def errata_lines(rep: ReportLike, editions: Iterable[str] | None = None) -> list[str]:
    """One plain line per edition of ``rep.errata`` (only ``editions`` when given) whose scored samples an
    erratum marks, e.g. ``paper edition: 40 scored samples are marked wrong and 38 doubtful by errata; the
    verified edition leaves them out.`` (``[]`` when none is marked). Plain text: escape it for its medium."""
    notes = as_report(rep).errata or {}
    keep = None if editions is None else set(editions)
    out = []
    for ed, n in notes.items():
        if (keep is not None and ed not in keep) or not (n.wrong or n.doubtful):
            continue
        verb = "is" if n.wrong == 1 else "are"
        # the edition that leaves them out holds none after a build; one marked there (an older build) is named
        # without that clause
        tail = "." if ed == n.left_out_by else f"; the {n.left_out_by} edition leaves them out."
        out.append(
            f"{ed} edition: {n.wrong} scored sample{'' if n.wrong == 1 else 's'} {verb} marked wrong and "
            f"{n.doubtful} doubtful by errata{tail}"
        )
    return out


def coverage_lines(rep: ReportLike) -> list[str]:
    """One plain line per partial run (``coverage.partial``: an imported file covering part of its edition's test
    set, :mod:`automonitor.runs.coverage`), e.g. ``run imp-1 (Vendor) is partial: the imported file covers 100 of
    the 2,966 test samples of the paper edition; its rates are on those samples only (an imported part of
    the test set is not stratified, ...).`` with :data:`automonitor.runs.coverage.PARTIAL_NOT_ELIGIBLE` (``[]`` when there is none). A ``--limit`` or ``--view`` run is never partial. Plain text: escape it for its medium."""
    out = []
    for r in as_report(rep).runs:
        cov = r.coverage
        if cov is not None and cov.partial:
            out.append(
                f"run {r.run_id} ({r.monitor}) is partial: the imported file covers {cov.covered:,} of the "
                f"{cov.members:,} test samples of the {cov.edition} edition; its rates are on those samples only "
                f"({PARTIAL_NOT_ELIGIBLE})."
            )
    return out


class PaperColumn(TypedDict):
    """A column of the paper-style table: ``key`` (``<slice>_<metric>_<template>``), the slice's name and
    key, the metric (``mr`` | ``far`` | ``unscored_rate``) and the template."""

    key: str
    slice: str
    slice_key: str
    metric: str
    template: str


class PaperRow(TypedDict):
    """A row of the paper-style table: the monitor's label, its runs, and the rate of each column key."""

    monitor: str
    runs: list[str]
    rates: dict[str, float | None]


def _slice_columns(runs: list[RunReport], temps: list[str]) -> list[PaperColumn]:
    """The table's columns in order: overall (MR, FAR, unscored rate) then each category (MR, FAR), every
    metric once per template."""
    slices = [("overall", "Overall")] + [(c, CATEGORY_NAMES.get(c, c)) for c in CATEGORIES]
    extra_cats = sorted({c for r in runs for c in r.by_category} - set(CATEGORIES))
    slices += [(c, c) for c in extra_cats]
    columns: list[PaperColumn] = []
    for key, name in slices:
        metrics = ("mr", "far", "unscored_rate") if key == "overall" else ("mr", "far")
        for m in metrics:
            for t in temps:
                columns.append({"key": f"{key}_{m}_{t}", "slice": name, "slice_key": key, "metric": m, "template": t})
    return columns


def _cell(run: RunReport, column: PaperColumn) -> float | None:
    """The rate of ``column`` (slice and metric) for one run; ``None`` when the run lacks the slice."""
    key = column["slice_key"]
    s = run.overall if key == "overall" else run.by_category.get(key)
    return None if s is None else cast("float | None", getattr(s, column["metric"]))


def paper_table(rep: ReportLike) -> tuple[list[PaperColumn], list[PaperRow]]:
    """Columns and rows of the paper-style table of a report (:class:`~automonitor.analysis.report_schema.Report`,
    from ``analysis.report``, or its ``.to_dict()``; a dict is validated, ``pydantic.ValidationError`` if malformed).

    Returns ``(columns, rows)``: columns are :class:`PaperColumn` dicts in order; each row a :class:`PaperRow`
    ``{"monitor": label, "runs": [run_id, ...], "rates": {column key: float|None}}`` (rates in [0, 1]).
    """
    runs = as_report(rep).runs
    present = {r.template for r in runs}
    columns = _slice_columns(runs, [t for t in TEMPLATES if t in present] + sorted(present - set(TEMPLATES)))
    # group runs: monitor -> template -> [run, ...]
    groups: dict[str, dict[str, list[RunReport]]] = {}
    for r in runs:
        groups.setdefault(r.monitor, {}).setdefault(r.template, []).append(r)
    rows: list[PaperRow] = []
    for mon, by_t in groups.items():
        depth = max(len(v) for v in by_t.values())
        for i in range(depth):
            rates = {}
            for col in columns:
                lst = by_t.get(col["template"], [])
                rates[col["key"]] = _cell(lst[i], col) if i < len(lst) else None
            runs_i = [lst[i].run_id for lst in by_t.values() if i < len(lst)]
            rows.append(PaperRow(monitor=mon if depth == 1 else f"{mon} #{i + 1}", runs=runs_i, rates=rates))
    return columns, rows


_METRIC = {"mr": "MR", "far": "FAR", "unscored_rate": "Unscored"}


def _caption(rep: ReportLike) -> str:
    return (
        f"Unscored policy: {as_report(rep).invalid_policy}. MR = FN/(TP+FN), FAR = FP/(TN+FP); "
        "measured in this store, not the paper's numbers."
    )


def run_marks(run: RunReport) -> str:
    """What a run is marked with beside its name, as the plane and the HTML report show it (``answers.marks``:
    ``partial: N of M test samples``, ``lenient parse``, ``legacy score``, ``score disagrees N``, ``errors N%``):
    `` [lenient parse, errors 20%]``,
    or ``""`` for a run without marks."""
    marks = run.answers.marks if run.answers else []
    return f" [{', '.join(marks)}]" if marks else ""


def to_markdown(rep: ReportLike) -> str:
    """GitHub-markdown paper-style table of ``rep`` (a :class:`~automonitor.analysis.report_schema.Report` from ``analysis.report`` or its dict), with a caption line."""
    rep = as_report(rep)
    cols, rows = paper_table(rep)
    head = ["Monitor"] + [f"{c['slice']} {_METRIC[c['metric']]} ({c['template']})" for c in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * len(cols)) + "|"]

    marks = {run.run_id: run_marks(run) for run in rep.runs}
    for r in rows:  # a row's marks: those of its runs (a lenient run is never shown as a strict one)
        shown = sorted({marks[i] for i in r["runs"] if marks.get(i)})
        name = md_escape(r["monitor"] + "".join(shown))
        lines.append("| " + " | ".join([name] + [fmt2(r["rates"][c["key"]]) for c in cols]) + " |")
    sections = localisation_markdown(rep) + difficulty_markdown(rep) + metrics_markdown(rep)
    partial = "".join(f"\n{md_escape(line)}\n" for line in coverage_lines(rep))
    return "\n".join(lines) + "\n\n" + _caption(rep) + "\n" + partial + sections


def run_metric_table(rep: Report) -> tuple[list[str], list[dict[str, str]]]:
    """The registered run metrics (:mod:`automonitor.analysis.run_metrics`) of the runs that have them:
    ``(labels, rows)``, each row ``{"run": run_id, "monitor", "template", label: display text, ...}``
    (``-`` where undefined); ``([], [])`` when no run has a registered metric."""
    runs = [r for r in rep.runs if r.metrics]
    names = [n for n in METRICS if any(n in (r.metrics or {}) for r in runs)]
    labels = [METRICS[n].label for n in names]
    rows = [
        {"run": r.run_id, "monitor": r.monitor, "template": r.template}
        | {METRICS[n].label: METRICS[n].show((r.metrics or {}).get(n)) for n in names}
        for r in runs
    ]
    return (labels, rows) if names else ([], [])


def metrics_markdown(rep: Report) -> str:
    """The registered run metrics of ``rep`` as a markdown table (:func:`run_metric_table`); ``""`` when
    no run has one."""
    labels, rows = run_metric_table(rep)
    if not labels:
        return ""
    head = ["Run", "Monitor", "Template"] + labels
    lines = ["", "| " + " | ".join(md_escape(h) for h in head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    lines += ["| " + " | ".join(md_escape(r[k]) for k in ["run", "monitor", "template"] + labels) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def localisation_markdown(rep: Report) -> str:
    """The localisation table of ``rep``: per evidence run with gold spans and per slice
    (overall, then categories and tasks), gold samples, TP, localised hits and wrong-reason hits (count
    and share of TP), localised miss rate and character-level span F1 / IoU; ``""`` when no run has
    localisation."""
    runs = [r for r in rep.runs if r.localisation is not None]
    if not runs:
        return ""
    head = (
        "| Monitor | Template | Slice | Gold samples | TP | Localised hits | Right verdict, wrong reason | "
        "Localised MR | Span F1 | Span IoU |"
    )
    lines = ["", "### Localisation (evidence against gold spans)", "", head, "|---|---|---|" + "---:|" * 7]
    for r in runs:
        loc = r.localisation
        assert loc is not None
        slices = [("overall", loc.overall)] + sorted(loc.by_category.items()) + sorted(loc.by_task.items())
        for name, b in slices:
            lines.append(
                f"| {md_escape(r.monitor)} | {md_escape(r.template)} | {md_escape(name)} | {b['gold_samples']} | {b['tp']} | "
                f"{b['localised']} ({fmt2(b['localised_share'])}) | {b['wrong_reason']} ({fmt2(b['wrong_reason_share'])}) | "
                f"{fmt2(b['localised_miss_rate'])} | {fmt2(b['span_f1'])} | {fmt2(b['span_iou'])} |"
            )
    lines.append("")
    lines.append(
        "Localised hits: true positives whose quoted evidence overlaps a gold span; wrong reason: evidence "
        "wholly outside every gold span; localised MR = 1 - localised hits / misbehavior samples with gold spans."
    )
    return "\n".join(lines) + "\n"


def difficulty_markdown(rep: Report) -> str:
    """The markdown table "Difficulty": per run, MR and FAR on the ``verified`` and the ``hard`` members
    with the samples judged of each (``""`` when no run has difficulty rates)."""
    runs = [r for r in rep.runs if r.difficulty]
    if not runs:
        return ""
    eds = DIFFICULTY_EDITIONS
    head = ["Run", "Monitor", "Template"] + [f"{m} ({e})" for e in eds for m in ("MR", "FAR", "judged")]
    lines = [
        "",
        "Difficulty: MR / FAR of each run on the `verified` members and on the `hard` members (the verified "
        "pairs trivial baselines cannot separate, plus sycophancy controls).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---"] * 3 + ["---:"] * 3 * len(eds)) + "|",
    ]
    for r in runs:
        cells = [md_escape(r.run_id), md_escape(r.monitor), md_escape(r.template)]
        for e in eds:
            d = (r.difficulty or {}).get(e)
            cells += ["-", "-", "0"] if d is None else [fmt2(d.slice.mr), fmt2(d.slice.far), f"{d.judged}/{d.members}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


_LATEX_ESC = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
}


def latex_escape(s: str) -> str:
    """Escape LaTeX special characters in plain text."""
    return "".join(_LATEX_ESC.get(ch, ch) for ch in s)


def to_latex(rep: ReportLike) -> str:
    """A booktabs LaTeX ``table`` with two header rows (slice x metric, then template)."""
    rep = as_report(rep)
    cols, rows = paper_table(rep)
    groups = [(g, len(list(run))) for g, run in groupby(f"{c['slice']} {_METRIC[c['metric']]}" for c in cols)]
    out = ["\\begin{table}[t]", "\\centering", "\\small", "\\begin{tabular}{l" + "r" * len(cols) + "}", "\\toprule"]
    out.append(
        " & ".join(["Monitor"] + [f"\\multicolumn{{{n}}}{{c}}{{{latex_escape(g)}}}" for g, n in groups]) + " \\\\"
    )
    pos, rules = 2, []
    for _, n in groups:
        rules.append(f"\\cmidrule(lr){{{pos}-{pos + n - 1}}}")
        pos += n
    out.append("".join(rules))
    out.append(" & ".join([""] + [latex_escape(c["template"]) for c in cols]) + " \\\\")
    out.append("\\midrule")
    for r in rows:
        out.append(" & ".join([latex_escape(r["monitor"])] + [fmt2(r["rates"][c["key"]]) for c in cols]) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{latex_escape(_caption(rep))}}}", "\\end{table}"]
    return "\n".join(out) + "\n"


def to_csv(rep: ReportLike) -> str:
    """CSV of the paper-style table: header ``monitor,runs,<slice>_<metric>_<template>...``; rates with
    full precision, empty when missing; ``runs`` lists the run ids of the row separated by spaces."""
    rep = as_report(rep)
    cols, rows = paper_table(rep)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["monitor", "runs"] + [c["key"] for c in cols])
    for r in rows:
        w.writerow(
            [r["monitor"], " ".join(r["runs"])]
            + ["" if (v := r["rates"][c["key"]]) is None else repr(float(v)) for c in cols]
        )
    return buf.getvalue()


def render(rep: ReportLike, fmt: str) -> str:
    """The table of ``rep`` in ``fmt`` (markdown | latex | csv); ``ValueError`` for another format."""
    writers = {"markdown": to_markdown, "latex": to_latex, "csv": to_csv}
    if fmt not in writers:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return writers[fmt](rep)
