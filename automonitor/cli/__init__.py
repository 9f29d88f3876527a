"""The ``automonitor`` command line (typer). Commands live in one module per area and register here.

Exit codes (``../shared/CONTRACT.md``): 0 success, 2 bad usage or bad input (stderr names file, line
and field), 1 any other failure. ``--json`` prints exactly one JSON document on stdout.
"""

from __future__ import annotations

import sys

import typer

from automonitor.errors import InputError, NotFound, PermissionDenied

app = typer.Typer(
    name="automonitor",
    help="AutoMonitor-Bench: build the benchmark, run misbehavior monitors, analyse MR/FAR, annotate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    # Each module adds its commands to ``app`` (or a sub-typer) at import time.
    from automonitor.cli import data  # noqa: F401  build, stats, fetch-sources
    from automonitor.cli import pairs  # noqa: F401  import, export
    from automonitor.cli import runs  # noqa: F401  run, runs
    from automonitor.cli import analysis  # noqa: F401  report, predictions import
    from automonitor.cli import annotation  # noqa: F401  users add, assign, annotations, agreement
    from automonitor.cli import audit  # noqa: F401  audit
    from automonitor.cli import probes  # noqa: F401  corpus build, probe train|transfer|lora
    from automonitor.cli import derive  # noqa: F401  derive ensemble|thresholds|cascade
    from automonitor.cli import generate  # noqa: F401  generate sycophancy|gaming|resume|list


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``automonitor`` console script. Returns (and exits with) the exit code."""
    _register()
    try:
        from automonitor.cli.derive import expand_multi

        app(args=expand_multi(sys.argv[1:] if argv is None else list(argv)), standalone_mode=False)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 2
    except (NotFound, PermissionDenied) as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 2
    except SystemExit as exc:  # typer/click exit
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        code = 130
    except Exception as exc:  # noqa: BLE001 - last resort: a clear message, exit 1
        import click

        if isinstance(exc, click.exceptions.UsageError):
            exc.show()
            code = 2
        elif isinstance(exc, click.exceptions.Abort):
            code = 1
        elif isinstance(exc, click.exceptions.ClickException):
            exc.show()
            code = exc.exit_code
        else:
            print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
            code = 1
    else:
        code = 0
    if argv is None:
        sys.exit(code)
    return code
