"""``automonitor build``, ``automonitor stats`` and ``automonitor fetch-sources``."""

from __future__ import annotations

from typing import Any, List, Optional

import typer
from rich.console import Console
from rich.table import Table

from automonitor.cli import app
from automonitor.cli.common import emit_json, err_console, open_store


def _stdout() -> Console:
    """A console on stdout, wide enough for the tables when output is not a terminal."""
    c = Console(markup=False)  # data values (sources, names) are never rich markup
    return c if c.is_terminal else Console(width=120, markup=False)


def _progress(msg: str) -> None:
    err_console.print(msg, style="dim", markup=False, highlight=False)


@app.command("build")
def build_cmd(
    raw: Optional[str] = typer.Option(None, "--raw", help="Raw sources directory (default: $AUTOMONITOR_RAW)."),
    seed: int = typer.Option(0, "--seed", help="Selection seed; the same seed always gives the same set."),
    force: bool = typer.Option(
        False,
        "--force",
        help="With a new seed: delete runs, assignments, annotations "
        "and adjudications that reference replaced samples.",
    ),
    edition: str = typer.Option(
        "paper", "--edition", help="paper | verified: the edition whose composition is shown (both are always built)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Build the paired test set, a disjoint train split and the annotation candidate pool.

    Deterministic for a seed; rebuilding with the same seed changes nothing. A different seed replaces
    the build-derived samples (refused, exit 2, if runs or annotations reference them, unless --force).
    Samples imported by users are never touched.
    """
    from automonitor.build import build, resolve_raw

    from store.queries.samples import check_edition

    check_edition(edition)
    raw_path = resolve_raw(raw)  # exit 2 naming the dir before the store is opened
    report = build(open_store(create=True), raw_path, seed, force=force, progress=_progress)
    report["edition"] = edition
    _warn_shortfalls(report["shortfalls"])
    if json_out:
        emit_json(report)
        return
    _build_summary(report, edition)


def _warn_shortfalls(shortfalls: list[dict[str, Any]]) -> None:
    """One yellow ``shortfall:`` line on stderr per source (pairs) or category (samples) short of its
    quota."""
    for s in shortfalls:
        where = f"{s['source']} ({s['category']}/{s['task']})" if "source" in s else s["category"]
        miss = s.get("missing_pairs", s.get("missing_samples"))
        unit = "pairs" if "missing_pairs" in s else "samples"
        err_console.print(f"shortfall: {where}: {miss} {unit} short of the quota", style="yellow", highlight=False)


def _sources_table(report: dict[str, Any]) -> Table:
    """The per-source table of a build report: pairs available, in test, quota, candidates, train."""
    t = Table(title=f"automonitor build (seed {report['seed']}) from {report['raw_dir']}")
    for col in ("source", "category", "task", "available", "test", "quota", "candidates", "train"):
        t.add_column(col, justify="right" if col not in ("source", "category", "task") else "left")
    quota = {q["source"]: q["target_pairs"] for q in report["quotas"]}
    for name, s in report["sources"].items():
        t.add_row(
            name,
            s["category"],
            s["task"],
            str(s["pairs_available"]),
            str(s["test_pairs"]),
            str(quota.get(name, 0)),
            str(s["candidate_pairs"]),
            str(s["train_pairs"]),
        )
    return t


def _build_summary(report: dict[str, Any], edition: str) -> None:
    """The human-readable build output on stdout: sources table, the shown edition, controls and
    gates, the paper test set, candidates and train, and what changed in the store."""
    out = _stdout()
    out.print(_sources_table(report))
    ed = report["editions"][edition]
    out.print(
        f"edition {edition}: {ed['samples']} samples in {ed['pairs']} pairs: "
        + ", ".join(f"{k} {2 * v}" for k, v in ed["by_category_task"].items())
    )
    out.print(
        f"controls: {report['controls']['samples']} benign-only samples; gates: "
        + "; ".join(f"{k}: " + ", ".join(f"{r} {n}" for r, n in v.items()) for k, v in report["gates"].items())
    )
    te = report["test"]
    out.print(
        f"paper test: {te['samples']} samples in {te['pairs']} pairs "
        + ", ".join(f"{c} {n}" for c, n in te["by_category"].items())
        + f"; candidates: {report['candidates']['samples']} samples; train: {report['train']['samples']} samples"
    )
    state = (
        "unchanged"
        if report["unchanged"]
        else (f"inserted {report['inserted']}, updated {report['updated']}, deleted {report['deleted']}")
    )
    out.print(f"store: {state} ({report['seconds']:.2f} s)" + ("" if report["shortfalls"] else "; no shortfall"))


def _stats_table(doc: dict[str, Any]) -> None:
    from automonitor.vocab import CATEGORIES, CATEGORY_NAMES, TASKS

    out = _stdout()
    ed = f", edition {doc['edition']}" if doc["split"] == "test" else ""
    t = Table(title=f"gold samples, split {doc['split']}{ed}: {doc['total']} samples in {doc['pairs']} pairs")
    t.add_column("category")
    for task in TASKS:
        t.add_column(task, justify="right")
    t.add_column("total", justify="right")
    for c in CATEGORIES:
        row = doc["by_category_task_nested"].get(c, {})
        t.add_row(CATEGORY_NAMES[c], *[str(row.get(task, 0)) for task in TASKS], str(doc["by_category"].get(c, 0)))
    t.add_row("total", *[str(doc["by_task"].get(task, 0)) for task in TASKS], str(doc["total"]), style="bold")
    out.print(t)
    out.print("labels: " + ", ".join(f"{k} {v}" for k, v in doc["by_label"].items()))
    out.print("label provenance: " + ", ".join(f"{k} {v}" for k, v in doc["by_label_source"].items()))
    if doc["by_source"]:
        s = Table(title="by source")
        s.add_column("source")
        s.add_column("samples", justify="right")
        for k, v in doc["by_source"].items():
            s.add_row(k, str(v))
        out.print(s)
    out.print(
        "whole store: "
        + ", ".join(f"{k} {v}" for k, v in doc["by_split"].items())
        + f", candidates {doc['candidates']}"
    )
    if doc["shortfalls"]:
        for sf in doc["shortfalls"]:
            if "source" in sf:
                msg = (
                    f"{sf['source']} ({sf['category']}/{sf['task']}): {sf['built_pairs']} of {sf['target_pairs']} pairs"
                )
            else:
                msg = f"{sf['category']}: {sf['built_samples']} of {sf['target_samples']} samples"
            out.print(f"shortfall {msg} (build seed {doc['build_seed']})", style="yellow", highlight=False)
    elif doc["build_seed"] is not None:
        out.print(f"build seed {doc['build_seed']}: no shortfall")


@app.command("stats")
def stats_cmd(
    split: str = typer.Option("test", "--split", help="test | train | all"),
    edition: str = typer.Option("paper", "--edition", help="paper | verified (test split: that edition only)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Counts of gold samples in a split by category, task and label (by_split and candidates cover
    the whole store)."""
    from automonitor.errors import InputError
    from store import session_scope
    from store.queries.samples import SPLIT_CHOICES, stats

    if split not in SPLIT_CHOICES:
        raise InputError(f"unknown split {split!r}; expected one of {', '.join(SPLIT_CHOICES)}", field="--split")
    from store.queries.samples import check_edition

    check_edition(edition)
    from automonitor.report_schema import Stats

    with session_scope(open_store()) as s:
        typed = Stats.model_validate(stats(s, split, edition))
    doc = typed.to_dict()
    if json_out:
        emit_json(doc)
    else:
        _stats_table(doc)


@app.command("fetch-sources")
def fetch_sources_cmd(
    dest: Optional[str] = typer.Option(
        None, "--dest", help="Target directory in the raw layout (default: $AUTOMONITOR_RAW)."
    ),
    mirror: Optional[str] = typer.Option(
        None, "--mirror", help="Base URL of a mirror serving the raw layout: each file is fetched from MIRROR/<path>."
    ),
    manifest: Optional[str] = typer.Option(None, "--manifest", help="Manifest (default seeds/manifest.json)."),
    source: Optional[List[str]] = typer.Option(None, "--source", help="Only this source folder (repeatable)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Download the public raw files the build reads, pinned by commit, verified by sha256.

    Files already present with the right sha256 are skipped; a file whose sha256 does not match is
    removed and reported (exit 1).
    """
    import os

    from automonitor.errors import InputError
    from automonitor.fetch import fetch_sources

    target = dest or os.environ.get("AUTOMONITOR_RAW")
    if not target:
        raise InputError("no destination: pass --dest DIR or set AUTOMONITOR_RAW", field="--dest")
    result = fetch_sources(target, mirror=mirror, manifest=manifest, folders=source or None, progress=_progress)
    if json_out:
        emit_json(result)
    else:
        typer.echo(
            f"{result['dest']}: {len(result['downloaded'])} downloaded ({result['bytes']} bytes), "
            f"{len(result['skipped'])} already present, {len(result['failed'])} failed"
        )
    for f in result["failed"]:
        err_console.print(f"error: {f['path']}: {f['error']} ({f['url']})", highlight=False, markup=False)
    if result["failed"]:
        raise SystemExit(1)
