"""The ``automonitor`` typer application that every command module of :mod:`automonitor.cli` adds its
commands to (it sits below them, so a command module never imports the package that imports it)."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="automonitor",
    help="AutoMonitor-Bench: build the benchmark, run misbehavior monitors, analyse MR/FAR, annotate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

__all__ = ["app"]
