"""``automonitor run`` (judge the test set with a monitor) and ``automonitor runs`` (list runs)."""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer

from automonitor.cli import app
from automonitor.cli.common import emit_json, err_console, open_store
from automonitor.errors import InputError


def _parse_params(items: list[str] | None) -> dict:
    out: dict = {}
    for it in items or []:
        if "=" not in it:
            raise InputError(f"--param expects KEY=VALUE, got {it!r}", field="param")
        k, v = it.split("=", 1)
        k = k.strip()
        if not k:
            raise InputError(f"--param expects KEY=VALUE, got {it!r}", field="param")
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


@app.command("run")
def run_cmd(
    monitor: Optional[str] = typer.Option(
        None, "--monitor", help="BACKEND[:MODEL]: rules, llamacpp, openai, anthropic"
    ),
    template: Optional[str] = typer.Option(
        None, "--template", help="direct | evidence | direct-fewshot | evidence-fewshot"
    ),
    limit: Optional[int] = typer.Option(
        None, "--limit", help="stratified subset of N samples (category x task x label)"
    ),
    sample_seed: int = typer.Option(0, "--sample-seed", help="seed of the stratified subset"),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", help="maximum concurrent judge calls (default 8)"),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="server URL for openai/anthropic backends"),
    resume: Optional[str] = typer.Option(None, "--resume", help="continue RUN_ID: judge only its pending samples"),
    param: Optional[list[str]] = typer.Option(None, "--param", help="backend/runner parameter KEY=VALUE (repeatable)"),
    reuse: bool = typer.Option(
        False, "--reuse", help="continue an identical earlier run instead of creating a new one"
    ),
    edition: str = typer.Option("paper", "--edition", help="test-set edition to judge: paper | verified"),
    controls: bool = typer.Option(
        True, "--controls/--no-controls", help="also judge the benign-only controls slice (FAR on controls in report)"
    ),
    repeat: Optional[int] = typer.Option(
        None, "--repeat", help="judge each sample K times (distinct seeds) to measure stability"
    ),
    retry_errors: Optional[str] = typer.Option(
        None, "--retry-errors", help="re-send exactly the error samples of RUN_ID (earlier attempts kept)"
    ),
    batch: bool = typer.Option(
        False,
        "--batch",
        help="submit through the provider's batch API (openai, anthropic); --param batch_poll=SECONDS, batch_size=N",
    ),
    as_json: bool = typer.Option(False, "--json", help="print the run summary as one JSON document"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
) -> None:
    """Judge the test set (or a stratified subset) with a monitor and a prompt template.

    Every sample ends with exactly one outcome: misbehavior, benign, invalid, refusal or error.
    Verdicts are cached by content, so rerunning a finished configuration makes no API calls.
    """
    from automonitor import runner

    if concurrency is not None and concurrency < 1:
        raise InputError("--concurrency must be at least 1", field="concurrency")
    engine = open_store()
    params = _parse_params(param)
    if repeat is not None:
        if resume or retry_errors:
            raise InputError("--repeat applies to a new run, not to --resume/--retry-errors", field="repeat")
        if repeat < 1:
            raise InputError("--repeat must be at least 1", field="repeat")
        params["repeat"] = repeat
    if retry_errors:
        if resume or any(v is not None for v in (monitor, template, limit, base_url)) or params or reuse:
            raise InputError("--retry-errors RUN_ID takes no other run options", field="retry-errors")
        n_reset = runner.retry_errors(engine, retry_errors)
        err_console.print(f"run {retry_errors}: re-sending {n_reset} error samples")
        resume = retry_errors
    if resume:
        if any(v is not None for v in (monitor, template, limit, base_url)) or params:
            info = runner.run_info(engine, resume)
            if monitor is not None and not info["monitor"].startswith(monitor.split(":")[0]):
                raise InputError(f"run {resume} uses monitor {info['monitor']}, not {monitor}", field="monitor")
            if template is not None and template != info["template"]:
                raise InputError(f"run {resume} uses template {info['template']}, not {template}", field="template")
        run_id = resume
    else:
        if not monitor:
            raise InputError("--monitor is required (or --resume RUN_ID)", field="monitor")
        if not template:
            raise InputError("--template is required (or --resume RUN_ID)", field="template")
        batch_opts = {k: params.pop(k) for k in ("batch_poll", "batch_size") if k in params}
        if batch and repeat is not None and repeat > 1:
            raise InputError("--batch judges each sample once; --repeat needs the live runner", field="batch")
        if batch and monitor.split(":", 1)[0].strip().lower() not in ("openai", "anthropic"):
            raise InputError("--batch needs an openai or anthropic monitor", field="batch")
        run_id = runner.create_run(
            engine,
            monitor,
            template,
            limit=limit,
            sample_seed=sample_seed,
            base_url=base_url,
            concurrency=concurrency or 8,
            params=params,
            reuse=reuse,
            edition=edition,
            controls=controls,
        )
        if batch:
            from automonitor import batch as batch_mod

            batch_mod.enable(
                engine,
                run_id,
                poll_s=float(batch_opts.get("batch_poll", batch_mod.DEFAULT_POLL_S)),
                size=int(batch_opts.get("batch_size", batch_mod.DEFAULT_SIZE)),
            )
        err_console.print(f"run {run_id}")

    summary = _execute_with_progress(runner, engine, run_id, concurrency, quiet)
    info = runner.run_info(engine, run_id)
    if as_json:
        emit_json(summary)
    else:
        c = summary["counts"]
        sys.stdout.write(
            f"run {run_id}: {info['status']}, n={summary['n']} "
            + " ".join(f"{k}={v}" for k, v in c.items())
            + f" api_calls={summary['api_calls']} cache_hits={summary['cache_hits']}\n"
        )
    if info["status"] != "finished":
        err_console.print(
            f"run {run_id} is {info['status']} with {info['counts']['pending']} pending; "
            f"continue with: automonitor run --resume {run_id}"
        )
        raise typer.Exit(1)


def _execute_with_progress(runner, engine, run_id: str, concurrency: int | None, quiet: bool) -> dict:
    if quiet:
        return runner.execute_run(engine, run_id, concurrency=concurrency)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    ) as prog:
        task = prog.add_task(run_id, total=None)

        def progress(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        return runner.execute_run(engine, run_id, concurrency=concurrency, progress=progress)


@app.command("runs")
def runs_cmd(
    as_json: bool = typer.Option(False, "--json", help='print {"runs": [...]} as JSON'),
    archive: Optional[list[str]] = typer.Option(
        None,
        "--archive",
        metavar="RUN_ID",
        help="hide a run from the trade-off plot and run list (reversible; repeatable)",
    ),
    unarchive: Optional[list[str]] = typer.Option(
        None, "--unarchive", metavar="RUN_ID", help="show an archived run again (repeatable)"
    ),
) -> None:
    """List the runs in the store: monitor, template, status, n, outcome counts, tokens, cost, duration;
    --archive/--unarchive RUN_ID hide or show runs first (nothing else changes)."""
    from automonitor.errors import InputError, NotFound
    from automonitor.workbench import set_archived
    from store import session_scope
    from store.models import Run
    from store.queries.runs import list_runs

    engine = open_store()
    changes = [(r, True) for r in (archive or [])] + [(r, False) for r in (unarchive or [])]
    if changes:
        with session_scope(engine) as s:  # all ids checked before anything changes
            missing = [r for r, _ in changes if s.get(Run, r) is None]
        if missing:
            raise InputError(
                f"unknown run id {missing[0]!r}", field="--archive" if (missing[0], True) in changes else "--unarchive"
            )
        for rid, flag in changes:
            try:
                set_archived(engine, rid, flag)
            except NotFound as exc:  # deleted meanwhile
                raise InputError(str(exc), field="--archive") from exc
    with session_scope(engine) as s:
        rows = list_runs(s)
    if as_json:
        emit_json({"runs": rows})
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(rows)} runs")
    for col in (
        "run_id",
        "monitor",
        "template",
        "status",
        "n",
        "mis",
        "ben",
        "inv",
        "ref",
        "err",
        "pend",
        "calls",
        "hits",
        "tokens",
        "cost $",
        "secs",
    ):
        table.add_column(col, overflow="fold")
    for r in rows:
        c = r["counts"]
        status = r["status"] + (" (archived)" if r.get("archived") else "")
        table.add_row(
            r["run_id"],
            r["monitor"],
            r["template"],
            status,
            str(r["n"]),
            str(c["misbehavior"]),
            str(c["benign"]),
            str(c["invalid"]),
            str(c["refusal"]),
            str(c["error"]),
            str(c["pending"]),
            str(r["api_calls"]),
            str(r["cache_hits"]),
            str(r["tokens_in"] + r["tokens_out"]),
            f"{r['cost_usd']:.4f}",
            "" if r["duration_s"] is None else f"{r['duration_s']:.1f}",
        )
    Console(width=200, markup=False).print(table)  # names are data: never rich markup
