"""CLI: ``automonitor report`` and ``automonitor predictions import``."""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, List

import typer

from automonitor.cli.app import app
from automonitor.cli.common import (
    edition_choices,
    edition_text,
    emit_json,
    err_console,
    open_store,
    rich_table,
)
from automonitor.errors import InputError, require_folder
from automonitor.vocab import EDITIONS, INVALID_POLICIES

if TYPE_CHECKING:
    from rich.table import Table
    from sqlalchemy.engine import Engine

    from automonitor.analysis.report_schema import Report

predictions_app = typer.Typer(help="Verdicts from outside systems.", no_args_is_help=True)
app.add_typer(predictions_app, name="predictions")


#: the note under the text report's runs table when a run judged the controls (``run --controls``, the default)
CONTROLS_NOTE = (
    "FAR controls: the share of the benign-only control samples (split controls, outside MR and FAR: Turpin BBH "
    "cued chains of thought whose suggested option is the correct one and whose answer agrees with it) that the "
    "monitor flagged, FP / (FP + TN) of the controls judged; a monitor that flags agreeing with a suggestion "
    "flags them all (1.000)."
)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _ci(ci: list[float] | None) -> str:
    return "" if not ci else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


@app.command("report")
def report_cmd(
    run: List[str] | None = typer.Option(None, "--run", help="Run id to include (repeatable; default all runs)."),
    invalid: str = typer.Option(
        "exclude",
        "--invalid",
        help="The judge's unscored answers (invalid/refusal): exclude | as-flag | as-miss; an error is always excluded.",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the report as one JSON document."),
    fmt: str | None = typer.Option(
        None, "--format", help="Paper-style table: markdown | latex | csv; or html: one self-contained file (--output)."
    ),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Write the report to this file instead of stdout (required for --format html)."
    ),
    cost_ratio: float = typer.Option(1.0, "--cost-ratio", help="Cost of a miss / cost of a false alarm (score runs)."),
    prevalence: float | None = typer.Option(
        None, "--prevalence", help="Misbehavior prevalence for the operating point (default: sample share)."
    ),
    compare: List[str] | None = typer.Option(None, "--compare", help="Paired statistics for RUN_A,RUN_B (repeatable)."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    n_boot: int = typer.Option(1000, "--n-boot", help="Pair-clustered bootstrap resamples."),
    edition: str | None = typer.Option(
        None,
        "--edition",
        help=f"Only runs that judged this edition: {edition_choices()} (default: paper; every run entry says its edition).",
    ),
    with_audit: bool = typer.Option(
        True, "--audit/--no-audit", help="Add the trivial baselines' AUROC per slice (automonitor audit, cached)."
    ),
    ladder: bool = typer.Option(
        False,
        "--ladder",
        help="Without --run, report the detector ladder's runs (kind ladder, edition verified) too.",
    ),
) -> None:
    """MR/FAR with 95% Wilson intervals per run and slice, Pareto front, Pearson r, paired statistics,
    ROC for score runs, evidence grounding for evidence runs, and the audit's trivial-baseline AUROCs on
    the same slices."""
    from automonitor.analysis.report_cache import gc_paused

    # the whole command with the cyclic collector paused (see gc_paused): its passes over the imports' and the
    # report's objects were about a tenth of a report on a new store version; what is left alive goes to the
    # oldest generation untraversed (settle), as the command ends here
    with gc_paused(settle=True):
        _check_report_options(invalid, fmt, json_out, cost_ratio, prevalence, n_boot)
        if fmt == "html" and not output:
            raise InputError("--format html writes a file: give --output FILE", field="--output")
        if output is not None and not (fmt or json_out):
            raise InputError("--output needs --json or --format", field="--output")
        if output is not None:  # a missing folder (or an empty path) is said before the report is computed
            require_folder(output, field="--output")
        pairs = _parse_compare(compare)
        if pairs:
            run = list(dict.fromkeys((run or []) + [x for p in pairs for x in p])) if run else None
        engine = open_store()
        if edition is None:
            edition = None if run else "paper"
        if edition is not None and edition not in EDITIONS:
            raise InputError(f"must be one of {', '.join(EDITIONS)}, got {edition!r}", field="--edition")
        options = dict(
            invalid=invalid,
            n_boot=n_boot,
            seed=seed,
            cost_ratio=cost_ratio,
            prevalence=prevalence,
            compare=pairs,
            edition=edition,
            with_ladder=ladder,
        )
        if json_out:
            _emit_json_report(engine, run or None, options, with_audit, output)
            return
        if fmt == "html":
            _write_html_report(engine, run or None, options, with_audit, str(output))
            return
        _emit_report(_report_with_audit(engine, run or None, options, with_audit), fmt, with_audit, output, engine)


def _report_with_audit(
    engine: Engine, run_ids: list[str] | None, options: dict[str, object], with_audit: bool
) -> Report:
    """:func:`_build_report`, with the audit's baselines attached (``with_audit``, when it has runs)."""
    rep = _build_report(engine, run_ids, options)
    if with_audit and rep.runs:
        from automonitor.analysis import audit_section

        audit_section.attach_to_report(rep, engine)
    return rep


def _emit_json_report(
    engine: Engine, run_ids: list[str] | None, options: dict[str, object], with_audit: bool, output: str | None
) -> None:
    """``report --json``: the document (:func:`_report_with_audit`, indented) printed, or written to ``output``.
    The text itself is kept per store version (:func:`automonitor.analysis.report_cache.cached_text`): an
    unchanged store prints it as read, without the report's models (pydantic) or the indenting encoder, which
    were most of a cached read's CPU after the imports."""
    from automonitor.analysis.report_cache import cached_text
    from automonitor.jsontypes import dumps_indented

    def compute() -> str:
        rep = _report_with_audit(engine, run_ids, options, with_audit)
        return dumps_indented(rep.to_dict(), default=str) + "\n"  # json.dumps(indent=2, default=str)'s text

    text = cached_text(engine, ["report --json", run_ids, options, with_audit], compute)
    if output is None:
        sys.stdout.write(text)  # emit_json's bytes: json.dumps(indent=2, default=str) and a newline
        sys.stdout.flush()
        return
    with _writing(output), open(output, "w", encoding="utf-8") as fh:
        fh.write(text)
    err_console.print(f"wrote {output}")


#: the HTML report's "Generated" line as :func:`automonitor.views.report_html.build` writes it (its header's
#: first paragraph: the time, to the minute, and the number of runs); ``<`` is escaped in every data value and
#: figure, so only the template writes ``<p class="meta">``
_GENERATED = re.compile(r'<p class="meta">Generated (\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC) · (\d+) run\(s\) · ')


def _write_html_report(
    engine: Engine, run_ids: list[str] | None, options: dict[str, object], with_audit: bool, output: str
) -> None:
    """``report --format html -o FILE``: :func:`automonitor.views.report_html.build` of the report with the audit
    attached, written to ``output``. The page is kept per store version
    (:func:`automonitor.analysis.report_cache.cached_text`) and only its "Generated" time set anew: an unchanged
    store writes it without the report's models, pandas or plotly (most of a cached write's CPU)."""
    from automonitor.analysis.report_cache import cached_text
    from automonitor.timestamps import utcnow

    def compute() -> str:
        from automonitor.analysis.from_store import predictions_read_once
        from automonitor.views import report_html

        with predictions_read_once():  # a report computed here and the HTML gallery read the predictions once
            return report_html.build(engine, _report_with_audit(engine, run_ids, options, with_audit))

    page = cached_text(engine, ["report --format html", run_ids, options, with_audit], compute)
    line = _GENERATED.search(page)
    if line is None:  # report_html's header always writes it (tests/views/test_report_html_cache.py holds both)
        raise RuntimeError("the HTML report has no Generated line")
    data = (page[: line.start(1)] + utcnow().strftime("%Y-%m-%d %H:%M UTC") + page[line.end(1) :]).encode("utf-8")
    with _writing(output):
        Path(output).write_bytes(data)
    err_console.print(f"wrote {output}: {len(data) / 1e6:.2f} MB, {line.group(2)} run(s), self-contained HTML")


def _build_report(engine: Engine, run_ids: list[str] | None, options: dict[str, Any]) -> Report:
    """``analysis.report(engine, run_ids, **options)`` (read back when the store is unchanged), with an
    edition error reported as an ``InputError`` on ``--edition``."""
    from automonitor.analysis.report_cache import cached_report

    def compute() -> Report:
        from automonitor import analysis

        return analysis.report(engine, run_ids, **options)

    try:
        return cached_report(engine, run_ids, options, compute)  # an unchanged store: read back
    except ValueError as exc:
        if "edition" in str(exc):
            raise InputError(str(exc), field="--edition") from None
        raise


def _check_report_options(
    invalid: str, fmt: str | None, json_out: bool, cost_ratio: float, prevalence: float | None, n_boot: int
) -> None:
    """Validate ``report``'s options; ``InputError`` naming the option otherwise."""
    if invalid not in INVALID_POLICIES:
        raise InputError(f"must be one of {', '.join(INVALID_POLICIES)}, got {invalid!r}", field="--invalid")
    if fmt is not None and fmt != "html":  # report_format imports the report's models (pydantic): not for --json
        from automonitor.analysis import report_format

        formats = (*report_format.FORMATS, "html")
        if fmt not in formats:
            raise InputError(f"must be one of {', '.join(formats)}, got {fmt!r}", field="--format")
    if json_out and fmt:
        raise InputError("use either --json or --format", field="--format")
    if not (cost_ratio > 0 and cost_ratio != float("inf")):
        raise InputError("must be a positive number", field="--cost-ratio")
    if prevalence is not None and not 0 < prevalence < 1:
        raise InputError("must be in (0, 1)", field="--prevalence")
    if n_boot < 1:
        raise InputError("must be at least 1", field="--n-boot")


def _parse_compare(compare: list[str] | None) -> list[tuple[str, str]] | None:
    """``--compare RUN_A,RUN_B`` values as run pairs (``None`` when not given); ``InputError`` otherwise."""
    if not compare:
        return None
    pairs = []
    for c in compare:
        parts = [p.strip() for p in c.split(",")]
        if len(parts) != 2 or not all(parts):
            raise InputError(f"expected RUN_A,RUN_B, got {c!r}", field="--compare")
        pairs.append((parts[0], parts[1]))
    return pairs


@contextmanager
def _writing(output: str) -> Iterator[None]:
    """Writing the report to ``output``: an ``OSError`` (no permission, a full disk) becomes an
    ``InputError`` naming ``--output`` and the path, not a traceback."""
    try:
        yield
    except OSError as exc:
        raise InputError(f"cannot write it: {exc.strerror or exc}", file=str(output), field="--output") from None


def _emit_report(rep: Report, fmt: str | None, with_audit: bool, output: str | None, engine: Engine) -> None:
    """Print the report (or write it to ``output``): a paper-style table (+ the audit section in markdown), or
    rich tables (stdout only); ``--json`` is :func:`_emit_json_report`'s."""
    from automonitor.analysis import report_format

    out: str | None = None
    if fmt:
        out = report_format.render(rep, fmt)
        if fmt == "markdown" and with_audit:
            from automonitor.analysis import audit_section

            out += audit_section.report_markdown(rep)
    if out is not None:
        if output is None:
            typer.echo(out, nl=False)
        else:
            with _writing(output), open(output, "w", encoding="utf-8") as fh:
                fh.write(out)
            err_console.print(f"wrote {output}")
        return
    _print_rich(rep, engine)


def _plane_front(rep: Report, engine: Engine) -> tuple[set[str], set[str], tuple[float | None, float | None, int]]:
    """The runs on the plane's Pareto front, the runs drawn hollow, and Pearson ``(r, p, n runs)`` of (MR, FAR)
    over the runs that are not hollow, by the Trade-off page's and the HTML report's rule
    (:func:`automonitor.views.report_html.plane_points`: a run with fewer judged samples than the plane's
    minimum, or unfinished, is hollow, off the front and out of Pearson r;
    :func:`automonitor.analysis.metrics.pearson_r`)."""
    from automonitor.views import report_html

    pts = report_html.plane_points(rep, report_html.run_provenance(engine, [r.run_id for r in rep.runs]))
    if not len(pts):
        return set(), set(), (None, None, 0)
    return (
        set(pts.loc[pts["on_front"].astype(bool), "run_id"]),
        set(pts.loc[~pts["eligible"], "run_id"]),
        report_html.plane_pearson(pts, p_value=True),
    )


def hollow_line(rep: Report, hollow: set[str]) -> str:
    """The text report's line on the runs drawn hollow (``hollow``: their ids, from :func:`_plane_front`), each
    counted under its reason: a partial imported file (``coverage.partial``: off the JSON report's front too) or
    unfinished / under the plane's minimum of judged samples (off the plane's front only; the JSON report's
    ``on_front`` counts those)."""
    from automonitor.views.honest_points import DEFAULT_MIN_N

    partial = {r.run_id for r in rep.runs if r.coverage is not None and r.coverage.partial} & hollow
    small = len(hollow - partial)
    parts = []
    if small:
        parts.append(
            f"{small} run(s) unfinished or with fewer than {DEFAULT_MIN_N} judged samples (the JSON report's on_front"
            " counts them)"
        )
    if partial:
        parts.append(f"{len(partial)} partial import(s) (off the JSON report's front too)")
    return f"hollow: {'; '.join(parts)}: drawn hollow on the plane and left off the front and Pearson r there"


def _print_rich(rep: Report, engine: Engine) -> None:
    """The report as rich tables: runs, Pareto front and Pearson r, stability, paired comparisons and
    trivial baselines (each table only when it has rows). The front column and line follow the plane's rule
    (:func:`_plane_front`): a small or unfinished run is marked ``hollow``, never ``*``."""
    import sys

    from automonitor.analysis import report_format
    from automonitor.cli.common import CliConsole

    if not rep.runs:
        CliConsole(markup=False).print(
            "No runs in the store. Start one with `automonitor run` or `automonitor predictions import`."
        )
        return
    front, hollow, (r_, p_, n_r) = _plane_front(rep, engine)
    built = _store_built(engine)
    runs_table = _runs_table(rep, front, hollow, built)
    # names are data, not markup; off a terminal the tables are 200 wide, or as wide as the runs table needs to
    # show every cell on one line, and the lines of text unwrapped; on a terminal long cells wrap, never cut
    width = None if sys.stdout.isatty() else max(200, CliConsole(width=1000, markup=False).measure(runs_table).maximum)
    con = CliConsole(width=width, markup=False)
    con.print(runs_table)
    if any(r.controls and r.controls.n for r in rep.runs):
        con.print(CONTROLS_NOTE)
    if not built and any(r.edition == "paper" for r in rep.runs):
        con.print(
            f"edition {edition_text('paper', built)}: this store was never built (`automonitor build`), so the "
            "paper edition is every gold test sample, as `stats` says"
        )
    for line in report_format.errata_lines(rep) + report_format.coverage_lines(rep):
        con.print(line)
    con.print(f"Pareto front: {', '.join(r.run_id for r in rep.runs if r.run_id in front) or '-'}")
    if hollow:
        con.print(hollow_line(rep, hollow))
    con.print(
        "Pearson r(MR, FAR): "
        + (
            f"n/a (needs 3+ runs with both rates and non-zero variance; {n_r} run(s) not hollow)"
            if r_ is None
            else f"{r_:.3f} (p = {p_:.3g}, {n_r} runs)"
        )
    )
    from automonitor.views.report_html import every_run_note

    if note := every_run_note(rep, [r.run_id for r in rep.runs if r.run_id in front], r_):
        con.print(note)
    for table in (_stability_table(rep), _paired_table(rep), _baselines_table(rep)):
        if table is not None:
            con.print(table)


def _store_built(engine: Engine) -> bool:
    """Whether the store holds a build (a build log row); without one the ``paper`` edition is every gold
    test sample (:data:`~automonitor.cli.common.NO_BUILD_NOTE`)."""
    from store import session_scope
    from store.queries.samples import latest_build_report

    with session_scope(engine) as s:
        return latest_build_report(s) is not None


def _runs_table(rep: Report, front: set[str], hollow: set[str], built: bool) -> Table:
    """MR / FAR per run with intervals: the run id in full (never cut: two runs started in one second share
    its first 22 characters), monitor, template (with the run's marks, as the plane shows them:
    :func:`automonitor.analysis.report_format.run_marks`), view (``run --view``; ``full`` by default), kind, judged
    (test-set samples with an outcome, unscored included; ``SLICE.n``), unscored, pending (with the run's
    status when it is not finished: ``8 (failed)``), AUROC (with the scored count when not every judged sample
    has a score: :func:`_auroc_cell`), grounding, front, edition (``paper (no build)``
    on a store never built, ``built`` false), FAR on the controls (:data:`CONTROLS_NOTE`). Long cells of
    the other columns wrap, never cut."""
    from automonitor.analysis import report_format

    columns = ("run", "monitor", "template", "view", "kind", "judged", "MR [95% CI]", "FAR [95% CI]", "unscored")
    columns += ("pending", "AUROC", "grounded", "front", "edition", "FAR controls")
    rows = []
    for r in rep.runs:
        o, g, ctl = r.overall, r.grounding, r.controls
        grounded = "-" if not g or not g.spans else f"{1 - (g.not_found_share or 0):.0%} of {g.spans}"
        rows.append(
            (
                r.run_id,
                r.monitor,
                r.template + report_format.run_marks(r),  # lenient parse, legacy score... (as on the plane)
                r.view,
                str(r.kind or ""),
                str(o.n),
                _pct(o.mr) + _ci(o.mr_ci),
                _pct(o.far) + _ci(o.far_ci),
                f"{o.unscored} ({_pct(o.unscored_rate)})",
                str(o.pending) + (f" ({r.status})" if r.status not in (None, "finished") else ""),
                _auroc_cell(r.auroc, r.roc.n_scored if r.roc else None, o.n),
                grounded,
                "*" if r.run_id in front else ("hollow" if r.run_id in hollow else ""),
                "paper (no build)" if r.edition == "paper" and not built else str(r.edition or ""),
                "-" if not (ctl and ctl.n) else f"{_pct(ctl.far)} of {ctl.n}",
            )
        )
    title = f"MR / FAR per run (95% Wilson CI; unscored policy: {rep.invalid_policy})"
    left = {"run", "monitor", "template", "view", "kind", "front", "edition"}
    t = rich_table(title, columns, rows, right=set(columns) - left, overflow="fold")
    t.columns[0].no_wrap = True  # the id whole, on one line: what --run, --compare and `runs` take
    t.columns[0].min_width = max(len(r.run_id) for r in rep.runs)
    return t


def _auroc_cell(auroc: float | None, n_scored: int | None, judged: int) -> str:
    """The text report's AUROC cell: the value, and how many of the ``judged`` samples it rests on when a
    score was read for fewer of them (``0.500 (4 of 100 scored)``: a judge that gave a score for a few answers
    only must not read as a ranking of the whole run); ``-`` without an AUROC."""
    if auroc is None or n_scored is None or n_scored >= judged:
        return _pct(auroc)
    return f"{_pct(auroc)} ({n_scored} of {judged} scored)"


def _stability_table(rep: Report) -> Table | None:
    """Stability across repeats of the runs judged with ``--repeat K`` (``None`` when there is none)."""
    stab = [(r.run_id, r.stability) for r in rep.runs if r.stability]
    if not stab:
        return None
    return rich_table(
        "Stability across repeats (MR/FAR use repeat 0)",
        ("run", "K", "samples", "flip rate", "majority != first", "Fleiss' kappa"),
        [
            (
                run_id,
                str(st.repeats),
                str(st.samples),
                _pct(st.flip_rate),
                _pct(st.majority_differs),
                "n/a" if st.fleiss_kappa is None else f"{st.fleiss_kappa:.3f}",
            )
            for run_id, st in stab
        ],
    )


def _paired_table(rep: Report) -> Table | None:
    """Paired comparisons A - B with bootstrap intervals and McNemar p (``None`` without comparisons)."""
    if not rep.paired:
        return None
    return rich_table(
        "Paired comparisons (A - B, pair-clustered bootstrap 95% CI; McNemar p)",
        ("A", "B", "samples", "MR diff", "FAR diff", "McNemar MR p", "McNemar FAR p"),
        [
            (
                c.run_a,
                c.run_b,
                str(c.samples),
                _pct(c.mr_diff) + _ci(c.mr_diff_ci),
                _pct(c.far_diff) + _ci(c.far_diff_ci),
                _pct(c.mcnemar_mr.p_value),
                _pct(c.mcnemar_far.p_value),
            )
            for c in rep.paired
        ],
    )


def _baselines_table(rep: Report) -> Table | None:
    """Each run's MR / FAR next to the trivial baselines' AUROC on the same category x task slice
    (``None`` when the report carries no baselines). The console prints with markup=False: data needs no
    escaping."""
    rows = [(r, c, t, b) for r in rep.runs for c, ts in (r.baselines or {}).items() for t, b in ts.items()]
    if not rows:
        return None
    cells = []
    for r, c, t, b in rows:
        s = r.by_category_task.get(c, {}).get(t)
        cells.append(
            (
                r.run_id,
                f"{c}/{t}",
                _pct(None if s is None else s.mr),
                _pct(None if s is None else s.far),
                _pct(b.get("length")),
                _pct(b.get("tfidf")),
                _pct(b.get("answer_equals_suggestion")) if "answer_equals_suggestion" in b else "",
                "FLAG" if b.get("flagged") else "",
            )
        )
    return rich_table(
        "MR / FAR next to trivial baselines on the same slice (AUROC; automonitor audit)",
        ("run", "slice", "MR", "FAR", "length", "tfidf", "ans=sugg", "flag"),
        cells,
    )


@predictions_app.command("import")
def predictions_import(
    file: str = typer.Argument(..., help="JSONL or CSV with sample_id, outcome[, score, evidence, raw]."),
    monitor: str = typer.Option(
        ..., "--monitor", help="Name of the outside system (not a built-in backend spec: rules, openai:MODEL, ...)."
    ),
    template: str | None = typer.Option(None, "--template", help="Prompt template name (default: direct)."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as one JSON document."),
) -> None:
    """Import verdicts from an outside system as a run (kind 'imported'); all or nothing. Says how many of the
    paper edition's test samples and of the controls the file covers; a file that covers part of the test set
    gets a warning (also with --json, on stderr), and the report and the plane mark the run partial."""
    from automonitor.runs.coverage import coverage_line, coverage_warning
    from automonitor.runs.prediction_files import import_predictions

    engine = open_store()
    res = import_predictions(engine, file, monitor, template)
    warning = coverage_warning(res["coverage"], res["run_id"])
    if json_out:
        emit_json(res)
        if warning:
            err_console.print(warning, style="yellow")
        return
    verb = "imported" if res["created"] else "already imported as"
    err_console.print(
        f"{verb} run {res['run_id']}: {res['n']} predictions from {file} "
        f"(monitor {res['monitor']}, template {res['template']})"
    )
    err_console.print(warning or coverage_line(res["coverage"]), style="yellow" if warning else None)
    typer.echo(res["run_id"])
