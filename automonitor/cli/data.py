"""``automonitor build``, ``automonitor stats`` and ``automonitor fetch-sources``."""

from __future__ import annotations

from typing import Any, List, Mapping

import typer
from rich.table import Table

from automonitor.cli.app import app
from automonitor.escaping import terminal_text
from automonitor.cli.common import (
    CliConsole,
    edition_choices,
    edition_text,
    emit_json,
    err_console,
    open_store,
    progress_line,
    rich_table,
)


#: errata on pairs missing from the store that `stats` names one by one before it counts the rest
SHOWN_MISSING = 3


def _stdout() -> CliConsole:
    """A console on stdout, wide enough for the tables when output is not a terminal."""
    c = CliConsole(markup=False)  # data values (sources, names) are never rich markup
    return c if c.is_terminal else CliConsole(width=120, markup=False)  # messages stay unwrapped


class _BuildBar:
    """The build's progress on a terminal: the same stage lines as :func:`progress_line`, and a rich progress
    bar on stderr while a long stage runs (:class:`automonitor.data.build.steps.StageProgress`: the sources
    read, the detector ladder, the ``hard`` edition, the store write). A bar is gone once its stage is over:
    the stage's line with its counts stays."""

    def __init__(self) -> None:
        self._live: Any = None  # the rich Progress of the stage running, if any

    def __call__(self, msg: str) -> None:
        progress_line(msg)  # printed above a running bar

    def begin_stage(self, name: str, total: int | None) -> Any:
        """Start a bar for stage ``name`` of ``total`` steps (``None``: a pulse); return its ``step``."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.end_stage(name)
        prog = Progress(
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[what]}", markup=False),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
        )
        task = prog.add_task(name, total=total, what="")
        prog.start()
        self._live = (prog, task)

        def step(what: str) -> None:
            prog.update(task, advance=1, what=what)

        return step

    def end_stage(self, name: str) -> None:
        """Fill and remove the running bar (a stage read from a cache takes no step)."""
        if self._live is None:
            return
        prog, task = self._live
        self._live = None
        total = prog.tasks[0].total
        if total is not None:
            prog.update(task, completed=total)
        prog.stop()


@app.command("build")
def build_cmd(
    raw: str | None = typer.Option(
        None, "--raw", help="Raw sources directory (default: $AUTOMONITOR_RAW, else ../shared/raw when it exists)."
    ),
    seed: int = typer.Option(0, "--seed", help="Selection seed; the same seed always gives the same set."),
    force: bool = typer.Option(
        False,
        "--force",
        help="With a new seed: delete runs, assignments, annotations "
        "and adjudications that reference replaced samples.",
    ),
    edition: str = typer.Option(
        "paper",
        "--edition",
        help=f"{edition_choices()}: the edition whose composition is shown (all are always built).",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
    report_markdown: bool = typer.Option(
        False,
        "--report-markdown",
        help="Print the gate tables as markdown on stdout (the docs' copy: docs/explanation/editions.md).",
    ),
    refresh_ladder: bool = typer.Option(
        False,
        "--refresh-ladder",
        help="Recompute the detector ladder (tiers, catches, false alarms) instead of reading its cache.",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", help="No progress bar on a terminal (the stage lines with counts stay on stderr)."
    ),
) -> None:
    """Build the paired test set, a disjoint train split and the annotation candidate pool.

    Deterministic for a seed; rebuilding with the same seed changes nothing. A different seed replaces
    the build-derived samples (refused, exit 2, if runs or annotations reference them, unless --force).
    Samples imported by users are never touched.

    Progress goes to stderr: one line per stage with its counts, and on a terminal a progress bar while a
    long stage runs (reading the sources, the detector ladder, the hard edition, the store write).
    """
    from automonitor.data.build import build, resolve_raw
    from automonitor.errors import InputError

    from store.queries.samples import check_edition

    check_edition(edition)
    raw_path = resolve_raw(raw)  # exit 2 naming the dir before the store is opened
    progress = _BuildBar() if err_console.is_terminal and not quiet else progress_line
    engine = open_store(create=True)
    # the store keeps the audit of the default edition and of the one asked for, so that the first report, audit
    # and Health page read it instead of computing it (each of the others is kept by its first reader: on a full
    # build each costs 15-30 s of CPU)
    report = build(
        engine,
        raw_path,
        seed,
        force=force,
        progress=progress,
        refresh_ladder=refresh_ladder,
        audits=tuple(dict.fromkeys(("paper", edition))),
    )
    report["edition"] = edition
    for s in report["shortfalls"]:  # a paper cell, paper-r2 quota source or category short of its target
        err_console.print(f"shortfall: {shortfall_text(s)}", style="yellow")
    for pid in report.get("errata", {}).get("unmatched", []):
        err_console.print(f"warning: erratum on {pid}: no such pair in this build (not applied)")
    for pid, why in report.get("errata", {}).get("not_stored", {}).items():
        err_console.print(f"note: erratum on {terminal_text(pid)}: {terminal_text(why)}")
    if json_out and report_markdown:
        raise InputError("use either --json or --report-markdown", field="--report-markdown")
    if json_out:
        emit_json(report)
        return
    if report_markdown:
        from automonitor.data.build.report_md import gates_markdown

        typer.echo(gates_markdown(report), nl=False)
        return
    _build_summary(report, edition)


def shortfall_text(s: dict[str, Any]) -> str:
    """One shortfall row of a build report as text: a paper cell (pairs, with why), a ``paper-r2`` quota
    source (pairs) or a ``paper-r2`` category (samples)."""
    if "cell" in s:
        why = f": {s['why']}" if s.get("why") else ""
        return (
            f"paper cell {s['cell']}: {s['built_pairs']} of {s['target_pairs']} pairs ({s['missing_pairs']} short){why}"
        )
    ed = f"{s['edition']} " if s.get("edition") else ""
    if "source" in s:
        return (
            f"{ed}{s['source']} ({s['category']}/{s['task']}): {s['built_pairs']} of {s['target_pairs']} pairs "
            f"({s['missing_pairs']} short)"
        )
    return f"{ed}{s['category']}: {s['built_samples']} of {s['target_samples']} samples ({s['missing_samples']} short)"


def quota_cell(target: int | None, built: int) -> str:
    """A ``paper-r2`` source quota as shown in the build table: ``-`` for none, ``N`` when the source filled it,
    else ``N (only M)`` (the honest view: a source with fewer usable pairs than its quota)."""
    if not target:
        return "-"
    return str(target) if built >= target else f"{target} (only {built})"


def _sources_table(report: dict[str, Any]) -> Table:
    """The per-source table of a build report: pairs available and eligible for test, in test, in each
    edition, the ``paper-r2`` quota (with the eligible count when that is less), candidates, train."""
    cols = ("source", "category", "task", "available", "pass gates", "test", "paper", "paper-r2", "r2 quota")
    cols += ("candidates", "train")
    quota = {q["source"]: q["target_pairs"] for q in report["quotas"]}
    rows = [
        (
            name,
            s["category"],
            s["task"],
            str(s["pairs_available"]),
            str(s["eligible_for_test"]),
            str(s["test_pairs"]),
            str(s.get("paper_pairs", 0)),
            str(s.get("paper-r2_pairs", 0)),
            quota_cell(quota.get(name), s.get("paper-r2_pairs", s["test_pairs"])),
            str(s["candidate_pairs"]),
            str(s["train_pairs"]),
        )
        for name, s in report["sources"].items()
    ]
    title = f"automonitor build (seed {report['seed']}) from {report['raw_dir']}"
    return rich_table(title, cols, rows, right=cols[3:])


def failing_gates_note(report: Mapping[str, object]) -> str | None:
    """The line under the sources table saying that its ``test`` (and ``paper``, ``paper-r2``) pairs include pairs
    that failed a gate, per source (``test_pairs_failing_gates`` of ``test``); ``None`` when no test pair did (or
    for a build report written before the count)."""
    sources = report.get("sources")
    failing = [
        f"{name} {s['test_pairs_failing_gates']} of {s['test_pairs']}"
        for name, s in (sources.items() if isinstance(sources, Mapping) else ())
        if isinstance(s, Mapping) and s.get("test_pairs_failing_gates")
    ]
    if not failing:
        return None
    return (
        "test, paper, paper-r2 count test pairs, with pairs that failed a gate (an erratum included), which the "
        "paper editions keep as the paper's noise and verified leaves out; so test can exceed pass gates. "
        "Failed a gate: " + ", ".join(failing)
    )


def _build_summary(report: dict[str, Any], edition: str) -> None:
    """The human-readable build output on stdout: sources table (with :func:`failing_gates_note` under it), the
    shown edition, controls and gates, the paper test set, candidates and train, and what changed in the store."""
    out = _stdout()
    out.print(_sources_table(report))
    note = failing_gates_note(report)
    if note:
        out.print(note)
    ed = report["editions"][edition]
    out.print(
        f"edition {edition}: {ed['samples']} samples in {ed['pairs']} pairs: "
        + ", ".join(f"{k} {2 * v}" for k, v in ed["by_category_task"].items())
    )
    out.print(
        f"controls: {report['controls']['samples']} benign-only samples; gates: "
        + "; ".join(f"{k}: " + ", ".join(f"{r} {n}" for r, n in v.items()) for k, v in report["gates"].items())
    )
    cells = report.get("paper_cells", [])
    if cells:
        out.print(
            "paper cells (pairs built/target): "
            + ", ".join(f"{c['category']}/{c['task']} {c['built_pairs']}/{c['target_pairs']}" for c in cells)
        )
    te = report["test"]
    out.print(
        f"paper-r2 test: {te['samples']} samples in {te['pairs']} pairs "
        + ", ".join(f"{c} {n}" for c, n in te["by_category"].items())
        + f"; candidates: {report['candidates']['samples']} samples; train: {report['train']['samples']} samples"
    )
    state = (
        "unchanged"
        if report["unchanged"]
        else (f"inserted {report['inserted']}, updated {report['updated']}, deleted {report['deleted']}")
    )
    out.print(f"store: {state} ({report['seconds']:.2f} s)" + ("" if report["shortfalls"] else "; no shortfall"))
    if "hard" in report:
        out.print(hard_table(report["hard"]))


def hard_table(hard: dict[str, Any]) -> Table:
    """The ``hard`` edition of a build report: pairs per source in verified and surviving, controls kept,
    pairs removed per feature, and the slices not achievable (in the caption)."""
    removed = ", ".join(f"{k} {v}" for k, v in hard["removed_by_feature"].items()) or "nothing"
    na = ", ".join(hard["not_achievable"]) or "none"
    # two caption lines, the table at least as wide as the longer: one caption wrapped at the table's width read "not
    # achievable with >= 15" then "pairs: none", as two statements (newcomer61, make demo's log)
    caption = f"pairs removed by: {removed}\nslices not achievable with >= {hard['params']['min_pairs']} pairs: {na}"
    table = rich_table(
        f"edition hard: {hard['pairs']} pairs + {hard['controls']} controls survive adversarial filtering",
        ("source", "verified", "hard", "controls"),
        [(src, str(n["verified"]), str(n["hard"]), str(n["controls"])) for src, n in hard["by_source"].items()],
        right=("verified", "hard", "controls"),
        caption=caption,
    )
    table.min_width = max(len(line) for line in caption.splitlines()) + 4  # the box's borders and padding
    return table


def _stats_table(doc: dict[str, Any]) -> None:
    from automonitor.vocab import CATEGORIES, CATEGORY_NAMES, TASKS

    out = _stdout()
    # never built (a store of imported pairs): 'paper' reads every gold test sample (edition_filter)
    built = doc.get("build_seed") is not None
    ed = f", edition {edition_text(doc['edition'], built)}" if doc["split"] == "test" else ""
    nested = doc["by_category_task_nested"]
    t = rich_table(
        f"gold samples, split {doc['split']}{ed}: {doc['total']} samples in {doc['pairs']} pairs",
        ("category", *TASKS, "total"),
        [
            (
                CATEGORY_NAMES[c],
                *[str(nested.get(c, {}).get(task, 0)) for task in TASKS],
                str(doc["by_category"].get(c, 0)),
            )
            for c in CATEGORIES
        ],
        right=(*TASKS, "total"),
    )
    t.add_row("total", *[str(doc["by_task"].get(task, 0)) for task in TASKS], str(doc["total"]), style="bold")
    out.print(t)
    out.print("labels: " + ", ".join(f"{k} {v}" for k, v in doc["by_label"].items()))
    out.print("label provenance: " + ", ".join(f"{k} {v}" for k, v in doc["by_label_source"].items()))
    if doc["by_source"]:
        rows = [(k, str(v)) for k, v in doc["by_source"].items()]
        out.print(rich_table("by source", ("source", "samples"), rows, right=("samples",)))
    out.print(
        "whole store: "
        + ", ".join(f"{k} {v}" for k, v in doc["by_split"].items())
        + f", candidates {doc['candidates']}"
    )
    if doc.get("paper_cell_deficit") and doc["edition"] == "paper":
        out.print(
            "paper cell deficit (pairs): " + ", ".join(f"{k} {v}" for k, v in doc["paper_cell_deficit"].items()),
            style="yellow",
            highlight=False,
        )
    for sf in doc["shortfalls"]:
        out.print(f"shortfall {shortfall_text(sf)} (build seed {doc['build_seed']})", style="yellow", highlight=False)
    if not doc["shortfalls"] and doc["build_seed"] is not None:
        out.print(f"build seed {doc['build_seed']}: no shortfall")
    if doc.get("errata"):
        e = doc["errata"]
        per = ", ".join(f"{k} {v['wrong']}+{v['doubtful']}" for k, v in e["by_source"].items())
        out.print(f"errata: {e['wrong']} wrong, {e['doubtful']} doubtful ({per or 'none'})", highlight=False)
        missing = e.get("not_in_store", [])
        why = e.get("not_in_store_why", {})
        for pid in missing[:SHOWN_MISSING]:
            reason = why.get(pid, "no such pair in the store")
            out.print(f"erratum on {terminal_text(pid)}: {terminal_text(reason)}", style="yellow", highlight=False)
        if len(missing) > SHOWN_MISSING:  # a store of imported pairs holds none of the shipped readings' pairs
            out.print(
                f"... and {len(missing) - SHOWN_MISSING} more errata on pairs this store does not hold; "
                "`automonitor errata list` lists them all with the reason for each",
                style="yellow",
                highlight=False,
            )


@app.command("stats")
def stats_cmd(
    split: str = typer.Option("test", "--split", help="test | train | all"),
    edition: str = typer.Option(
        "paper",
        "--edition",
        help=f"{edition_choices(described=True)}; test split: that edition only.",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Counts of gold samples in a split by category, task and label (by_split and candidates cover
    the whole store)."""
    from automonitor.errors import InputError
    from store.queries.composition import SPLIT_CHOICES, check_edition, stats

    if split not in SPLIT_CHOICES:
        raise InputError(f"unknown split {split!r}; expected one of {', '.join(SPLIT_CHOICES)}", field="--split")
    check_edition(edition)
    from automonitor.analysis.report_schema import Stats

    from automonitor.data.errata import errata_counts, errata_in_force, errata_status

    # Core over the light table views (store.queries.composition): a count needs neither the ORM nor the tables'
    # classes; one connection, one transaction, as the session was
    with open_store().connect() as conn:
        errata = errata_in_force(conn)
        doc0 = stats(conn, split, edition)
        absent = {r["pair_id"]: r["why_not_in_store"] for r in errata_status(conn, errata) if r["in_store"] is None}
        errata_doc = {**errata_counts(errata), "not_in_store": sorted(absent), "not_in_store_why": absent}
        doc = Stats.model_validate({**doc0, "errata": errata_doc}).to_dict()
    emit_json(doc) if json_out else _stats_table(doc)


@app.command("fetch-sources")
def fetch_sources_cmd(
    dest: str | None = typer.Option(
        None,
        "--dest",
        help="Target directory in the raw layout (default: $AUTOMONITOR_RAW, else ../shared/raw when it exists).",
    ),
    mirror: str | None = typer.Option(
        None, "--mirror", help="Base URL of a mirror serving the raw layout: each file is fetched from MIRROR/<path>."
    ),
    manifest: str | None = typer.Option(None, "--manifest", help="Manifest (default seeds/manifest.json)."),
    source: List[str] | None = typer.Option(None, "--source", help="Only this source folder (repeatable)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Download the public raw files the build reads, pinned by commit, verified by sha256.

    Files already present with the right sha256 are skipped; a file whose sha256 does not match is
    removed and reported (exit 1).
    """
    import os

    from automonitor.errors import InputError
    from automonitor.data.fetch import fetch_sources

    from automonitor.data.build import default_raw

    target = dest or os.environ.get("AUTOMONITOR_RAW")
    if not target:
        fallback = default_raw()
        if fallback is None:
            raise InputError(
                "no destination: pass --dest DIR or set AUTOMONITOR_RAW=DIR (default ../shared/raw when it exists)",
                field="--dest",
            )
        target = str(fallback)
        err_console.print(f"destination: {fallback} (the default ../shared/raw; --dest or AUTOMONITOR_RAW to choose)")
    result = fetch_sources(target, mirror=mirror, manifest=manifest, folders=source or None, progress=progress_line)
    if json_out:
        emit_json(result)
    else:
        typer.echo(
            f"{result['dest']}: {len(result['downloaded'])} downloaded ({result['bytes']} bytes), "
            f"{len(result['skipped'])} already present, {len(result['failed'])} failed"
        )
    for f in result["failed"]:
        err_console.print(f"error: {f['path']}: {f['error']} ({f['url']})")
    if result["failed"]:
        raise SystemExit(1)
