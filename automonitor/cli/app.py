"""The ``automonitor`` typer application that every command module of :mod:`automonitor.cli` adds its
commands to (it sits below them, so a command module never imports the package that imports it).

Every command takes ``--verbose`` (``-v``) and ``--quiet`` (``-q``), before or after its name: the root
group takes them out of the arguments and configures logging (:mod:`automonitor.cli.logs`) before the
command runs."""

from __future__ import annotations

import sys
from typing import Any, Sequence

import typer
from typer.core import TyperGroup

from automonitor.cli import logs


def _own_options(group: Any, args: Sequence[str]) -> set[str]:
    """The option names (``--quiet``...) of the command that ``args`` call below ``group``."""
    cmd = group
    for a in args:
        sub = getattr(cmd, "commands", None)
        if sub is None or a.startswith("-"):
            continue
        if a not in sub:
            break
        cmd = sub[a]
    return {o for p in getattr(cmd, "params", []) for o in (*p.opts, *p.secondary_opts)}


class _LoggingGroup(TyperGroup):
    """The root group: takes the logging flags out of the arguments (:func:`logs.take_flags`) and
    configures logging once per command."""

    def main(self, args: Sequence[str] | None = None, *rest: Any, **kw: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        argv, level = logs.take_flags(argv, _own_options(self, argv))
        logs.configure(level)
        return super().main(argv, *rest, **kw)


app = typer.Typer(
    name="automonitor",
    cls=_LoggingGroup,
    help=(
        "AutoMonitor-Bench: build the benchmark, run misbehavior monitors, analyse MR/FAR, annotate. "
        "Every command takes --verbose / -v (debug lines on stderr) and --quiet / -q (errors only)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def expand_multi(args: list[str], options: tuple[str, ...] = ("--runs",)) -> list[str]:
    """Let ``--runs A B C`` (the contract's form) reach click as ``--runs A --runs B --runs C``: the
    tokens after ``--runs`` up to the next option are each given their own ``--runs``."""
    out: list[str] = []
    cur: str | None = None
    for a in args:
        if a.startswith("-"):
            cur = a if a in options else None
            out.append(a)
        elif cur is not None and out and out[-1] != cur:
            out += [cur, a]
        else:
            out.append(a)
    return out


__all__ = ["app", "expand_multi"]
