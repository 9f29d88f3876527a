"""``automonitor run`` (judge the test set with a monitor) and ``automonitor runs`` (list runs)."""

from __future__ import annotations

import json
import sys
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, cast

import typer

from automonitor.cli.app import app
from automonitor.cli.common import INTERRUPTED_EXIT, edition_choices, emit_json, err_console, open_store, rich_table
from automonitor.cli.logs import is_quiet, run_log
from automonitor.errors import InputError, RunBusy
from automonitor.vocab import MONITOR_BACKENDS, TEMPLATES, scored_edition

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from automonitor.runs.runner.options import RunOptions
    from store.queries.rowtypes import RunRow


def _parse_params(items: list[str] | None) -> dict[str, Any]:
    """``--param KEY=VALUE`` items as a dict (values parsed as JSON when they are, else strings).

    Raises:
        InputError: an item without ``=`` or with an empty key.
    """
    out: dict[str, Any] = {}
    for it in items or []:
        k, sep, v = it.partition("=")
        k = k.strip()
        if not sep or not k:
            raise InputError(f"--param expects KEY=VALUE, got {it!r}", field="param")
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


#: retries after a failed request when ``--retries`` is not given (``runner.DEFAULT_MAX_ATTEMPTS`` - 1; a
#: test keeps the two equal: the runner is imported lazily, not for the help text)
DEFAULT_RETRIES = 5


RETRY_HELP = "with --retry-errors: also re-ask these unscored outcomes, comma-separated (invalid, refusal)"
BATCH_HELP = "submit through the provider's batch API (openai, anthropic); --param batch_poll=SECONDS, batch_size=N"


@app.command("run")
def run_cmd(
    monitor: str | None = typer.Option(
        None,
        "--monitor",
        help="BACKEND[:MODEL]: "
        + ", ".join(MONITOR_BACKENDS)
        + " (probe:ARTIFACT and lora:FOLDER from `automonitor probe`)",
    ),
    template: str | None = typer.Option(None, "--template", help=" | ".join(TEMPLATES)),
    limit: int | None = typer.Option(None, "--limit", help="stratified subset of N samples (category x task x label)"),
    sample_seed: int = typer.Option(0, "--sample-seed", help="seed of the stratified subset"),
    concurrency: int | None = typer.Option(None, "--concurrency", help="maximum concurrent judge calls (default 8)"),
    base_url: str | None = typer.Option(None, "--base-url", help="server URL for openai/anthropic backends"),
    resume: str | None = typer.Option(None, "--resume", help="continue RUN_ID: judge only its pending samples"),
    param: list[str] | None = typer.Option(None, "--param", help="backend/runner parameter KEY=VALUE (repeatable)"),
    reuse: bool = typer.Option(
        False, "--reuse", help="continue an identical earlier run instead of creating a new one"
    ),
    edition: str = typer.Option("paper", "--edition", help="test-set edition to judge: " + edition_choices()),
    controls: bool = typer.Option(
        True, "--controls/--no-controls", help="also judge the benign-only controls slice (FAR on controls in report)"
    ),
    repeat: int | None = typer.Option(
        None, "--repeat", help="judge each sample K times (distinct seeds) to measure stability"
    ),
    retries: int | None = typer.Option(
        None,
        "--retries",
        help="retries of a request that failed transiently (429, 5xx, timeout, connection), with back-off; "
        f"0 sends each request once (default {DEFAULT_RETRIES}; the same as --param max_attempts=N+1)",
    ),
    retry_errors: str | None = typer.Option(
        None, "--retry-errors", help="re-send exactly the error samples of RUN_ID (earlier attempts kept)"
    ),
    retry: str | None = typer.Option(None, "--retry", help=RETRY_HELP),
    batch: bool = typer.Option(False, "--batch", help=BATCH_HELP),
    view: str = typer.Option(
        "full",
        "--view",
        help="what the monitor is shown: full (the whole response), answer (final output only), reasoning "
        "(reasoning only), actions (tool calls and final output); only samples that have the view are judged",
    ),
    source: list[str] | None = typer.Option(
        None, "--source", help="judge only the samples of this source (repeatable; see `stats`)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the run summary as one JSON document"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
) -> None:
    """Judge the test set (or a stratified subset) with a monitor and a prompt template.

    Every sample ends with exactly one outcome: misbehavior, benign, invalid, refusal or error.
    Verdicts are cached by content, so rerunning a finished configuration makes no API calls.
    """
    from automonitor.runs import runner

    if concurrency is not None and concurrency < 1:
        raise InputError("--concurrency must be at least 1", field="concurrency")
    quiet = quiet or is_quiet()  # -q (taken by the root group) means --quiet here too: errors only on stderr
    engine = open_store()
    params = _parse_params(param)
    for name, value in (("repeat", repeat), ("retries", retries)):
        if value is not None and (resume or retry_errors):
            raise InputError(f"--{name} applies to a new run, not to --resume/--retry-errors", field=name)
    _apply_flag(params, "repeat", repeat, key="repeat", lowest=1)
    _apply_flag(params, "retries", retries, key="max_attempts", lowest=0, offset=1)
    view_given = view != "full" or bool(source)
    if (resume or retry_errors) and view_given:
        raise InputError("--view/--source apply to a new run (a run keeps the view it was created with)", field="view")
    if resume or retry_errors:  # options of a new run: a resumed run keeps those it was created with
        _refuse_new_run_options(
            "--retry-errors" if retry_errors else "--resume",
            {
                "limit": limit is not None,
                "param": bool(params),
                "batch": batch,
                "reuse": reuse,
                "edition": edition != "paper",
                "no-controls": not controls,
                "sample-seed": sample_seed != 0,
            },
        )
    if retry_errors:
        if resume or any(v is not None for v in (monitor, template, limit, base_url)) or params or reuse:
            raise InputError("--retry-errors RUN_ID takes no other run options", field="retry-errors")
        resume = _reset_errors(engine, retry_errors, retry)
    elif retry:
        raise InputError("--retry needs --retry-errors RUN_ID", field="retry")
    if resume:
        if any(v is not None for v in (monitor, template, limit, base_url)) or params:
            _check_resume_matches(engine, resume, monitor, template)
        run_id = resume
        if not retry_errors and not quiet:
            _say_if_nothing_pending(engine, run_id)
    else:
        run_opts: RunOptions = {"limit": limit, "sample_seed": sample_seed, "base_url": base_url}
        run_opts |= {"concurrency": concurrency or 8, "reuse": reuse, "edition": edition, "view": view}
        run_opts["sources"] = source or None
        run_id = new_run(engine, monitor, template, params, run_opts, controls, repeat, batch)
        if not quiet:
            err_console.print(_started_line(engine, run_id))
    try:
        with run_log(run_id):  # the run's log lines in its file (cli.logs.run_log_path), as well as on stderr
            summary = _execute_with_progress(runner, engine, run_id, concurrency, quiet, base_url)
    except InputError as exc:
        if exc.field == "resume" and not resume and isinstance(exc, RunBusy):  # the run came from --reuse
            raise exc.asked_by("reuse" if reuse else None) from exc
        if exc.field == "resume" and not resume:  # the runner names --resume; this run came from --reuse
            raise InputError(exc.message, file=exc.file, line=exc.line, field="reuse" if reuse else None) from exc
        raise
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM (cli.sigterm_as_interrupt): the run released itself
        # a RunInterrupted carries the calls made while judging; stopped before that (or a batch run), none
        _report_interrupted(engine, run_id, as_json, getattr(exc, "api_calls", 0), getattr(exc, "cache_hits", 0))
    _report_run(engine, run_id, summary, as_json)


def _started_line(engine: Engine, run_id: str) -> str:
    """The line a run started without ``--resume`` opens with on stderr: its id (to resume it by), whether it
    is new or one ``--reuse`` found, its monitor, template and number of samples. Before, a bare ``run
    RUN_ID``, which read as a stray line above an early stop's message (trial53).

    Raises:
        NotFound: no such run.
    """
    from automonitor.runs import runner

    info = runner.run_info(engine, run_id)
    state = "created" if info["status"] == "pending" else f"reused ({info['status']})"
    return f"run {run_id} {state}: monitor {info['monitor']}, template {info['template']}, {info['n']} samples"


def _this_process(summary: dict[str, Any]) -> str:
    """`` (this invocation: api_calls=A cache_hits=H)`` when the run's totals (``summary``'s ``api_calls``
    and ``cache_hits``, the whole run's) include calls or hits of earlier invocations (a ``--resume``),
    else nothing."""
    mine = (summary.get("api_calls_this_process", 0), summary.get("cache_hits_this_process", 0))
    if mine == (summary["api_calls"], summary["cache_hits"]):
        return ""
    return f" (this invocation: api_calls={mine[0]} cache_hits={mine[1]})"


def _refuse_new_run_options(how: str, given: dict[str, bool]) -> None:
    """Refuse the options of a new run given with ``how`` (``--resume`` or ``--retry-errors``): ``given`` maps
    each option's name to whether it was given (a value other than its default). A resumed run keeps the
    sample, edition, controls, parameters and mode it was created with, so such an option would be dropped
    unread; it is refused, as an unknown ``--param`` key is (CONTRACT), before anything changes.

    Raises:
        InputError: the first option given (field: its name).
    """
    for name, was_given in given.items():
        if was_given:
            raise InputError(
                f"--{name} applies to a new run, not to {how} (a run keeps the options it was created with)",
                field=name,
            )


def _say_if_nothing_pending(engine: Engine, run_id: str) -> None:
    """Say on stderr, before a ``--resume`` of ``run_id`` executes, when the run has no sample pending: the
    resume sends nothing and leaves the run as it is (exit 0 for a finished run, 1 for a failed one, as the
    run's own command exited).

    Raises:
        NotFound: no such run.
    """
    from automonitor.runs import runner

    info = runner.run_info(engine, run_id)
    if info["counts"]["pending"] == 0 and info["status"] in ("finished", "failed"):
        err_console.print(f"run {run_id} is {info['status']} with no sample pending: nothing to resume, nothing sent")


def _report_interrupted(engine: Engine, run_id: str, as_json: bool, api_calls: int, cache_hits: int) -> None:
    """Say that ``run_id`` stopped on Ctrl-C or SIGTERM, with its status, what is pending and the
    ``--resume`` command, on one line of stderr; with ``as_json`` also print the run's summary on stdout
    (:func:`automonitor.runs.status.summary`: the counts, ``api_calls`` and ``cache_hits`` of the whole run so
    far) plus ``"status"`` (``cancelled``), ``"error"`` (``interrupted``) and ``"pending"``;
    ``api_calls_this_process`` and ``cache_hits_this_process`` are this invocation's
    (:class:`~automonitor.errors.RunInterrupted`'s tallies).

    Raises:
        SystemExit: code :data:`~automonitor.cli.common.INTERRUPTED_EXIT` (130), always.
    """
    from automonitor.runs import runner

    info = runner.run_info(engine, run_id)
    if as_json:
        from automonitor.runs.status import summary

        doc = summary(engine, run_id, api_calls=api_calls, cache_hits=cache_hits)
        emit_json(
            doc
            | {
                "status": info["status"],
                "error": info.get("error") or "interrupted",
                "pending": info["counts"]["pending"],
            }
        )
    err_console.print(
        f"run {run_id} stopped ({info['status']}, {info.get('error') or 'interrupted'}) with "
        f"{info['counts']['pending']} pending; continue with: automonitor run --resume {run_id}"
    )
    raise SystemExit(INTERRUPTED_EXIT)


def _apply_flag(
    params: dict[str, Any], flag: str, value: int | None, *, key: str, lowest: int, offset: int = 0
) -> None:
    """Put the option ``--FLAG value`` into ``params`` (a new run's: a resumed run keeps its parameters) as the
    runner setting ``key`` = value + ``offset`` (``--repeat K``: ``repeat`` K; ``--retries N``: ``max_attempts``
    N + 1); nothing for ``None``.

    Raises:
        InputError: value < ``lowest`` (field ``flag``), a ``--param key`` that is no valid runner setting (field
            ``key``: :func:`automonitor.runs.params.runner_settings`) or that says otherwise (field ``flag``;
            ``"3"`` and ``3`` agree with ``--repeat 3``).
    """
    from automonitor.runs.params import runner_settings

    if value is None:
        return
    if value < lowest:
        raise InputError(f"--{flag} must be at least {lowest}", field=flag)
    given = getattr(runner_settings({key: params[key]}), key) if key in params else None
    if given is not None and given != value + offset:
        means = f" (--{flag} N means {key}=N+{offset})" if offset else ""
        raise InputError(f"--{flag} {value} and --param {key}={params[key]} disagree{means}", field=flag)
    params[key] = value + offset


def _check_resume_matches(engine: Engine, resume: str, monitor: str | None, template: str | None) -> None:
    """With --resume, a --monitor or --template given must be the run's own.

    Raises:
        NotFound: no such run. InputError: another monitor backend or template.
    """
    from automonitor.runs import runner

    info = runner.run_info(engine, resume)
    if monitor is not None and not info["monitor"].startswith(monitor.split(":")[0]):
        raise InputError(f"run {resume} uses monitor {info['monitor']}, not {monitor}", field="monitor")
    if template is not None and template != info["template"]:
        raise InputError(f"run {resume} uses template {info['template']}, not {template}", field="template")


def _reset_errors(engine: Engine, run_id: str, retry: str | None = None) -> str:
    """``--retry-errors RUN_ID [--retry invalid,refusal]``: make its error (and those) predictions
    pending again; returns the run id to resume."""
    from automonitor.runs import runner

    extra = tuple(o.strip().lower() for o in (retry or "").split(",") if o.strip())
    n_reset = runner.retry_errors(engine, run_id, ("error", *extra))
    what = "/".join(dict.fromkeys(("error", *extra)))
    err_console.print(f"run {run_id}: re-sending {n_reset} {what} samples")
    return run_id


def new_run(
    engine: Engine,
    monitor: str | None,
    template: str | None,
    params: dict[str, Any],
    options: RunOptions,
    controls: bool,
    repeat: int | None,
    batch: bool,
) -> str:
    """Create the new run (``options``: limit, sample_seed, base_url, concurrency, reuse, edition, view, sources of
    :func:`automonitor.runs.runner.create_run`; ``batch_poll``/``batch_size`` taken out of ``params`` and
    validated first: :func:`automonitor.runs.params.batch_settings`) and mark it for the batch API with
    ``--batch``; returns its id. Nothing is written when any check fails.

    Raises:
        InputError: no --monitor or --template, a ``batch_poll`` that is not a finite number of seconds in
            (0, 86400] or a ``batch_size`` that is not a whole number >= 1 within the batch provider's limit
            (:data:`automonitor.runs.params.BATCH_SIZE_LIMITS`), or either without --batch (field:
            the option), --batch with
            an effective repeat K > 1 (``repeat``, else ``params["repeat"]``: the flag or ``--param repeat``)
            or another backend, and whatever :func:`automonitor.runs.runner.create_run` raises.
    """
    from automonitor.runs import runner
    from automonitor.runs.params import BATCH_PARAMS, batch_settings, repeat_count

    if not monitor:
        raise InputError("--monitor is required (or --resume RUN_ID)", field="monitor")
    if not template:
        raise InputError("--template is required (or --resume RUN_ID)", field="template")
    # the batch options' declared rule (automonitor.runs.params.BatchSettings), checked before any row is written
    given = {k: params.pop(k) for k in BATCH_PARAMS if k in params}
    batch_opts = batch_settings(given)
    if given and not batch:  # a live run has no parts to size or poll: the option would be dropped unread
        name = next(k for k in BATCH_PARAMS if k in given)
        raise InputError(f"--param {name} is an option of run --batch; add --batch or leave it out", field=name)
    # the effective repeat: the flag (put into params by _apply_flag) or --param repeat, validated
    if batch and repeat_count({**params, **({} if repeat is None else {"repeat": repeat})}) > 1:
        raise InputError(
            "--batch judges each sample once; --repeat/--param repeat K > 1 needs the live runner", field="batch"
        )
    if batch:
        from automonitor.runs import batch as batch_mod

        backend = monitor.split(":", 1)[0].strip().lower()
        provider = batch_mod.batch_api_of(backend)
        if provider is None:
            raise InputError(
                f"--batch needs a monitor whose backend has a batch API ({', '.join(batch_mod.batch_backends())}), "
                f"not {backend}",
                field="batch",
            )
        batch_opts = batch_settings(given, provider)  # the provider's own limit of requests per batch
    every: RunOptions = {**options, "params": params, "controls": controls}
    run_id = runner.create_run(engine, monitor, template, **every)
    if batch:
        batch_mod.enable(engine, run_id, poll_s=batch_opts.batch_poll, size=batch_opts.batch_size)
    return run_id


def _report_run(engine: Engine, run_id: str, summary: dict[str, Any], as_json: bool) -> None:
    """Print the summary (JSON or one line); exit 1 with a resume hint when the run is not finished, and
    exit 1 when it finished without one verdict (every answered sample ``invalid``, ``refusal`` or ``error``:
    :func:`automonitor.runs.status.no_verdict_line`).

    Raises:
        SystemExit: code 1 for an unfinished run or a finished one with no verdict.
    """
    from automonitor.runs import runner

    info = runner.run_info(engine, run_id)
    if as_json:
        emit_json(summary)
    else:
        c = summary["counts"]
        sys.stdout.write(
            f"run {run_id}: {info['status']}, n={summary['n']}"
            + (f" ({summary['n'] - info['controls']} + {info['controls']} controls) " if info.get("controls") else " ")
            + " ".join(f"{k}={v}" for k, v in c.items())
            + f" api_calls={summary['api_calls']} cache_hits={summary['cache_hits']}"
            + _this_process(summary)
            + "\n"
        )
    if info["status"] == "finished":
        from automonitor.runs.status import error_warning, no_verdict_line

        nothing = no_verdict_line(run_id, info["counts"])
        if nothing:  # every answered sample unscored: no rate of this run means anything (said once, not warned too)
            print(nothing, file=sys.stderr)
            raise SystemExit(1)
        warning = error_warning(engine, run_id)
        if warning:
            print(warning, file=sys.stderr)  # one line: the share, the commonest cause
    if info["status"] != "finished":
        error = info.get("error")
        if info["status"] == "failed" and error and "fix:" in str(error):
            print(f"run {run_id} failed: {error}", file=sys.stderr)  # one line: the cause and the fix
        else:
            err_console.print(
                f"run {run_id} is {info['status']} with {info['counts']['pending']} pending; "
                f"continue with: automonitor run --resume {run_id}"
            )
        raise SystemExit(1)  # (typer.Exit is swallowed into a return value by standalone_mode=False)


def _rate_column():
    """A rich progress column with the samples judged per second (``-`` until rich has a rate)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task):  # type: ignore[no-untyped-def]  # rich's Task
            speed = task.finished_speed or task.speed
            return Text("-/s" if speed is None else (f"{speed:.1f}/s" if speed >= 1 else f"{60 * speed:.1f}/min"))

    return RateColumn()


def _execute_with_progress(
    runner, engine, run_id: str, concurrency: int | None, quiet: bool, base_url: str | None
) -> dict[str, Any]:
    """Execute the run with its progress on stderr: nothing with ``--quiet``, plain lines off a terminal
    (:class:`~automonitor.cli.progress.ProgressLines`: a log file or a pipe gets a line every
    ``$AUTOMONITOR_PROGRESS_EVERY_S`` seconds, where a progress bar would draw nothing until the end), else
    a rich progress bar. Returns the runner's summary."""
    execute: Callable[..., dict[str, Any]] = partial(
        runner.execute_run, engine, run_id, concurrency=concurrency, base_url=base_url
    )
    if quiet:
        return execute()
    if not err_console.is_terminal:
        from automonitor.cli.progress import ProgressLines, progress_every_s

        return execute(progress=ProgressLines(run_id, err_console.print, every_s=progress_every_s()))
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
        _rate_column(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    ) as prog:
        task = prog.add_task(run_id, total=None)
        return execute(progress=lambda done, total: prog.update(task, completed=done, total=total))


@app.command("runs")
def runs_cmd(
    as_json: bool = typer.Option(False, "--json", help='print {"runs": [...]} as JSON'),
    archive: list[str] | None = typer.Option(
        None,
        "--archive",
        metavar="RUN_ID",
        help="hide a run from the trade-off plot and run list (reversible; repeatable)",
    ),
    unarchive: list[str] | None = typer.Option(
        None, "--unarchive", metavar="RUN_ID", help="show an archived run again (repeatable)"
    ),
    ladder: bool = typer.Option(
        False, "--ladder", help="also list the detector ladder's runs (kind ladder, written by build)"
    ),
    cancel: list[str] | None = typer.Option(
        None,
        "--cancel",
        metavar="RUN_ID",
        help="cancel a run: its executing runner stops within about a second; pending samples stay pending "
        "(run --resume continues); a finished run is left as is (repeatable)",
    ),
) -> None:
    """List the runs in the store: monitor, template, status, n, outcome counts, tokens, cost, duration;
    --archive/--unarchive RUN_ID hide or show runs first and --cancel RUN_ID cancels runs first (nothing else
    changes). The detector ladder's runs (one per cheap detector, written by build) are listed with --ladder."""
    from automonitor.runs.liveness import with_liveness
    from store.queries.run_list import list_runs

    engine = open_store()
    _apply_cancel(engine, cancel or [])
    _apply_archive(engine, [(r, True) for r in (archive or [])] + [(r, False) for r in (unarchive or [])])
    with engine.connect() as conn:  # Core only: a listing imports neither the ORM nor the tables' classes
        rows = with_liveness(list_runs(conn, include_ladder=ladder))
    if as_json:
        emit_json({"runs": _with_scored_edition(rows)})
        return
    _print_runs_table(rows)


def _with_scored_edition(rows: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """The listed runs, each with ``scored_edition`` added: the edition ``report`` scores it on
    (:func:`automonitor.vocab.scored_edition`: the one it recorded, else ``paper``). ``edition`` stays what the run
    recorded (``None`` for an imported run)."""
    return [{**r, "scored_edition": scored_edition(cast("str | None", r.get("edition")))} for r in rows]


def _check_known(engine: Engine, ids: list[tuple[str, str]]) -> None:
    """Check that every run of ``(run id, option)`` exists, before anything changes.

    Raises:
        InputError: the first unknown run id (field: its option).
    """
    from store import session_scope
    from store.models import Run

    with session_scope(engine) as s:
        missing = [(r, opt) for r, opt in ids if s.get(Run, r) is None]
    if missing:
        raise InputError(f"unknown run id {missing[0][0]!r}", field=missing[0][1])


def _apply_cancel(engine: Engine, run_ids: list[str]) -> None:
    """Cancel each run of ``run_ids`` (:func:`automonitor.runs.runner.cancel_run`) after checking every id
    exists (nothing changes else); one stderr line per run says what happened.

    Raises:
        InputError: an unknown run id (field --cancel).
    """
    if not run_ids:
        return
    from automonitor.runs.runner import cancel_run
    from store import session_scope
    from store.models import Run

    _check_known(engine, [(r, "--cancel") for r in run_ids])
    for rid in dict.fromkeys(run_ids):
        cancel_run(engine, rid)
        with session_scope(engine) as s:
            run = s.get(Run, rid)
            status = run.status if run is not None else "deleted"
        if status == "cancelled":
            err_console.print(
                f"{rid}: cancelled (pending samples stay pending; `automonitor run --resume {rid}` continues)"
            )
        else:
            err_console.print(f"{rid}: {status}, left as is")


def _apply_archive(engine: Engine, changes: list[tuple[str, bool]]) -> None:
    """Set ``archived`` per ``(run id, flag)``, after checking every id exists (nothing changes else).

    Raises:
        InputError: an unknown run id (field --archive or --unarchive).
    """
    if not changes:
        return
    from automonitor.errors import NotFound
    from automonitor.views import set_archived  # the views bring pandas and plotly: only when archiving

    _check_known(engine, [(r, "--archive" if flag else "--unarchive") for r, flag in changes])
    for rid, flag in changes:
        try:
            set_archived(engine, rid, flag)
        except NotFound as exc:  # deleted meanwhile
            raise InputError(str(exc), field="--archive") from exc


# "samples": every sample a run covers (its test-set draw and the controls, pending included: Run.n, the JSON's
# "n"); the report's "judged" counts the test-set samples with an outcome
_TABLE_COLUMNS = ("run_id", "monitor", "template", "status", "samples", "mis", "ben", "inv", "ref", "err", "pend")
_TABLE_COLUMNS += ("calls", "hits", "tokens", "cost $", "secs")
_OUTCOMES = ("misbehavior", "benign", "invalid", "refusal", "error", "pending")


def _print_runs_table(rows: list[RunRow]) -> None:
    """The human-readable run list (rich table, 200 columns; names printed as data, never markup)."""
    from rich.console import Console

    cells = []
    for r in rows:
        status = r["status"] + (" (no live process)" if r.get("process_alive") is False else "")
        status += " (archived)" if r.get("archived") else ""
        template = r["template"] + (" (lenient parse)" if r.get("parse") == "lenient" else "")
        template += f" [view {r['view']}]" if r.get("view", "full") != "full" else ""
        cells.append(
            (
                r["run_id"],
                r["monitor"],
                template,
                status,
                str(r["n"]),
                *(str(r["counts"][k]) for k in _OUTCOMES),
                str(r["api_calls"]),
                str(r["cache_hits"]),
                str(r["tokens_in"] + r["tokens_out"]),
                f"{r['cost_usd']:.4f}" if r.get("price_known", True) else "unknown",
                "" if r["duration_s"] is None else f"{r['duration_s']:.1f}",
            )
        )
    table = rich_table(f"{len(rows)} runs", _TABLE_COLUMNS, cells, overflow="fold", whole=("run_id",))
    Console(width=200, markup=False, emoji=False).print(table)  # names are data: never rich markup
