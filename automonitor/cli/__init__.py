"""The ``automonitor`` command line (typer). Commands live in one module per area and register here.

Exit codes (the CLI contract): 0 success, 2 bad usage or bad input (stderr names file, line
and field), 1 any other failure. ``--json`` prints exactly one JSON document on stdout. The product's
errors (:class:`automonitor.errors.AutomonitorError`) get theirs from one table, :data:`EXIT_CODES`.
"""

from __future__ import annotations

import gc
import inspect
import re
import signal
import sys
import threading
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Iterator, Protocol, Sequence

from automonitor.cli.app import app, expand_multi
from automonitor.cli.common import INTERRUPTED_EXIT, resolved_store_url, store_note
from automonitor.errors import AutomonitorError, InputError, NotFound, PermissionDenied, RunBusy

if TYPE_CHECKING:
    from typer._coercion import TypeDescriptor
    from typer.core import TyperGroup


#: the module of :mod:`automonitor.cli` that adds each top-level command or group to ``app`` when imported,
#: in the order ``automonitor --help`` lists them (``tests/cli/test_cli_startup.py`` checks it against the
#: modules). A command imports its own module only (:func:`load_commands`): its start skips the others'.
COMMAND_MODULES: dict[str, str] = {
    **dict.fromkeys(("build", "stats", "fetch-sources"), "data"),
    **dict.fromkeys(("import", "export"), "pairs"),
    **dict.fromkeys(("run", "runs"), "runs"),
    "report": "analysis",
    **dict.fromkeys(("assign", "unassign", "agreement"), "annotation"),
    "audit": "audit",
    "predictions": "analysis",
    **dict.fromkeys(("users", "annotations", "adjudications", "assignments"), "annotation"),
    **dict.fromkeys(("corpus", "probe"), "probes"),
    "derive": "derive",
    "generate": "generate",
    "errata": "errata",
}


def load_commands(args: Sequence[str] | None = None) -> None:
    """Import the command modules that add to ``app`` what ``automonitor ARGS`` runs: the module of the
    command that ``args`` name (their first word that is not an option; the root group's options are
    flags), else (``None``, no command, ``--help``, an unknown name) every module, in
    :data:`COMMAND_MODULES` order."""
    name = next((a for a in args or () if not a.startswith("-")), None) if args is not None else None
    mods = [COMMAND_MODULES[name]] if name in COMMAND_MODULES else list(dict.fromkeys(COMMAND_MODULES.values()))
    for mod in mods:
        __import__(f"automonitor.cli.{mod}")  # not importlib: ``-X importtime`` (the tests' budgets) sees this


#: exit code of a product error, by class (the first base found in the error's MRO); any other
#: :class:`AutomonitorError` exits 1. Bad input, an unknown name and a refused permission are the user's
#: to fix (exit 2, CONTRACT: "2 on bad usage or bad input"); a run busy in another process is none of them
#: (the same command succeeds once that process has ended: 1, "other failures"), though an ``InputError``.
EXIT_CODES: dict[type[AutomonitorError], int] = {RunBusy: 1, InputError: 2, NotFound: 2, PermissionDenied: 2}


def exit_code(exc: AutomonitorError) -> int:
    """The exit code of product error ``exc`` (:data:`EXIT_CODES`, else 1)."""
    return next((EXIT_CODES[c] for c in type(exc).__mro__ if c in EXIT_CODES), 1)


def _click_exceptions() -> tuple[tuple[type[BaseException], ...], ...]:
    """``(usage errors, aborts, click exceptions)``: the classes of click and of the copy of click that
    recent typer releases vendor as ``typer._click`` (a missing argument raised by typer is an instance of
    the vendored ``UsageError``, not of click's)."""
    import importlib

    usage: list[type[BaseException]] = []
    abort: list[type[BaseException]] = []
    click_exc: list[type[BaseException]] = []
    for name in ("click.exceptions", "typer._click.exceptions"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        usage += [mod.UsageError] if hasattr(mod, "UsageError") else []
        abort += [mod.Abort] if hasattr(mod, "Abort") else []
        click_exc += [mod.ClickException] if hasattr(mod, "ClickException") else []
    return tuple(usage), tuple(abort), tuple(click_exc)


def _store_note(exc: BaseException) -> str:
    """`` (store: URL)`` when the failed command opened a store and the message does not
    name it already, else ``""``."""
    return "" if str(exc).startswith("no store at") else store_note()


def command(args: Sequence[str] | None = None) -> TyperGroup:
    """The click command of the typer ``app`` as the console script runs it with ``args`` (``None``: every
    command; else the command they name, :func:`load_commands`), its commands in ``--help``'s order: every on/off flag (``--json``,
    ``--help``, ``--controls/--no-controls``...) shown without a type column (recent typer prints
    ``<bool>`` after each flag, which reads as a value to pass: ``--help <bool>``), and each parameter's
    value coerced by :class:`_PlainValues` (pydantic imported only for a value that needs it). The CLI
    reference of the docs is generated from this command too."""
    import typer.main

    load_commands(args)
    # always the group (typer's get_command makes a lone command, as ``audit`` alone is, the whole program)
    cmd = typer.main.get_group(app)
    order = {n: i for i, n in enumerate(COMMAND_MODULES)}  # modules imported in another order (tests)
    cmd.commands = dict(sorted(cmd.commands.items(), key=lambda kv: order.get(kv[0], len(order))))
    stack = [cmd]
    while stack:
        c = stack.pop()
        ctx = c.context_class(c, info_name=c.name)
        for p in c.get_params(ctx):  # the help option included
            if getattr(p, "is_flag", False) and getattr(p, "is_bool_flag", True):
                p.metavar = ""
            if getattr(p, "_runtime_param", False) is None and hasattr(p, "type_descriptor"):
                # a typer parameter (recent releases: 0.29 here): its coercion, with pydantic only when needed
                p._runtime_param = _PlainValues()  # type: ignore[attr-defined]
        if c is not cmd and c.help:
            if c.short_help is None:
                c.short_help = summary_line(c.help)
            c.help = reflowed(c.help)
        stack += list(getattr(c, "commands", {}).values())
    return cmd


#: Where a sentence ends in a help text: after ``.``, ``!`` or ``?`` and space, before a capital, a quote or
#: a parenthesis (not after "e.g." or "i.e.", which a lower-case word follows).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'])")


def summary_line(help_text: str) -> str:
    """A command's line in its group's ``--help`` listing: the first sentence of its help's first paragraph,
    on one line. Typer's rich help lists the first paragraph with the docstring's own line breaks kept, so a
    docstring wrapped at 110 columns broke each description mid-sentence in the listing (trial53); the
    command's own ``--help`` still shows its whole help."""
    first = " ".join(inspect.cleandoc(help_text).split("\n\n", 1)[0].split())
    return _SENTENCE_END.split(first, 1)[0]


def reflowed(help_text: str) -> str:
    """A command's help with each paragraph on one line (paragraphs: blocks between blank lines), for its own
    ``--help``: typer's rich help keeps a docstring's line breaks, so a docstring wrapped at 110 columns printed
    lines cut mid-sentence at any other width (trial54: ``build --help``, "A different seed replaces / the
    build-derived samples"); rich wraps the joined paragraph to the terminal instead. No command help has list
    lines, which joining would merge."""
    paragraphs = inspect.cleandoc(help_text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


class _TyperParameter(Protocol):
    """What :class:`_PlainValues` reads of a typer parameter (``typer.core._TyperParameter``)."""

    multiple: bool
    nargs: int
    type_descriptor: TypeDescriptor
    _runtime_param: object


class _PlainValues:
    """A typer parameter's value coercion (recent typer releases coerce each value with a pydantic
    ``TypeAdapter``, built on the parameter's first value) that passes what needs no coercion as typer does: an
    unset value (``None``: ``()`` for a repeatable option, else ``None``) and a value of the parameter's own
    type for a ``str``, ``int`` or ``float`` parameter without bounds (a text, a default number: typer's adapter
    returns it unchanged). Any other value, and the error for a bad one, is typer's own: its adapter is built
    then and kept on the parameter. So a command run with its defaults and text options (``runs --json``,
    ``report --json``, ``--help``) does not import pydantic for them (about 0.1 s CPU of a start)."""

    def coerce(self, value: object, param: _TyperParameter, ctx: object) -> object:
        """``value`` as typer's own coercion of ``param`` returns it (or raises its ``BadParameter``)."""
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        desc, info = param.type_descriptor, param.type_descriptor.parameter_info
        plain = desc.annotation in (str, int, float) and desc.file_annotation is None and info.parser is None
        unbounded = info.min is None and info.max is None and not info.clamp
        if plain and unbounded and type(value) is desc.annotation and not multi:
            return value  # typer's adapter returns a str, an int or a float of its own type unchanged
        from typer._coercion import build_runtime_param

        param._runtime_param = real = build_runtime_param(desc)
        return real.coerce(value, param=param, ctx=ctx)  # type: ignore[arg-type]  # typer's own classes


def _shown(message: str) -> str:
    """An error message as printed on the terminal: its lines kept, and in each every control or
    invisible character of the data it quotes (an escape sequence, BEL, a carriage return) shown as a
    visible marker (:func:`automonitor.escaping.terminal_text`), so a file's value cannot drive the
    terminal or fake an output line."""
    from automonitor.escaping import terminal_text

    return "\n".join(terminal_text(line) for line in message.split("\n"))


def _terminate_as_interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM handler: stop as Ctrl-C does. The current SIGINT handler is called when it is a Python
    one (inside ``asyncio.run`` that handler cancels the main task, which then ends in
    ``KeyboardInterrupt``), else ``KeyboardInterrupt`` is raised here (also when SIGINT is ignored, as
    in a shell's background job).

    Raises:
        KeyboardInterrupt: unless asyncio's handler takes the signal.
    """
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and handler is not signal.default_int_handler:
        handler(signal.SIGINT, frame)
        return
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block (in the main thread), SIGTERM stops the process as Ctrl-C does: a run records
    itself ``cancelled`` (error ``interrupted``), releases its lease and prints the ``--resume`` hint,
    where the default SIGTERM would end the process with the run left ``running``. Elsewhere (a thread,
    a platform without SIGTERM) the block runs unchanged; the previous handler is restored after."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGTERM"):
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``automonitor`` console script. Returns (and exits with) the exit code:
    :data:`EXIT_CODES` for the product's errors, 130 (:data:`INTERRUPTED_EXIT`) for a command stopped by
    Ctrl-C or SIGTERM (:func:`sigterm_as_interrupt`). Without ``argv`` (the console script, ``python -m
    automonitor``) it exits the process, the collector's objects frozen first (``gc.freeze``: no
    traversal of them at shutdown); with ``argv`` (called from Python) it returns the code and leaves the
    collector as it was."""
    try:
        # the usage lines name the command as the README does, however it was started (console script,
        # ``python -m automonitor``, or this function called from Python)
        with sigterm_as_interrupt():
            args = expand_multi(sys.argv[1:] if argv is None else list(argv))
            rv = command(args).main(
                args=args,
                prog_name="automonitor",
                standalone_mode=False,
            )
        # typer returns an Exit's code instead of raising it (standalone_mode=False): Ctrl-C in a command is
        # typer's Exit(130), which exited 0 without a word; the commands themselves return None
        code = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
        if code == INTERRUPTED_EXIT:
            print("interrupted", file=sys.stderr)
    except AutomonitorError as exc:
        code = exit_code(exc)
        # a user's error reads as a sentence; another product error (a judge transport failure...) says its kind
        what = str(exc) if code == 2 or isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
        print(f"error: {_shown(what)}{_store_note(exc)}", file=sys.stderr)
    except SystemExit as exc:  # typer/click exit
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        code = INTERRUPTED_EXIT
    except Exception as exc:  # noqa: BLE001 - last resort: a clear message, exit 1
        usage, abort, click_exc = _click_exceptions()
        # a SQLAlchemyError (one clear line: never SQL, parameters or row data), told without importing
        # SQLAlchemy: a command that raised one has imported it; --help and the store-less commands do not
        if (sa_exc := sys.modules.get("sqlalchemy.exc")) is not None and isinstance(exc, sa_exc.SQLAlchemyError):
            from store.engine import describe_db_error

            # the store this process used, the default one included (not only a set AUTOMONITOR_DB)
            print(f"error: {describe_db_error(exc, resolved_store_url())}", file=sys.stderr)
            code = 1
        elif isinstance(exc, usage):
            exc.show()  # type: ignore[attr-defined]  # a click UsageError: usage line + message
            code = 2
        elif isinstance(exc, abort):
            code = 1
        elif isinstance(exc, click_exc):
            exc.show()  # type: ignore[attr-defined]  # a click ClickException
            code = exc.exit_code  # type: ignore[attr-defined]
        else:
            print(f"error: {type(exc).__name__}: {_shown(str(exc))}{_store_note(exc)}", file=sys.stderr)
            code = 1
    if argv is None:
        # the process ends here: everything it made moves to the collector's permanent generation (gc.freeze),
        # so that the interpreter's collections at shutdown do not traverse it again (0.3-0.5 s CPU after a
        # report of 100 runs, whose frames, evidence lists and documents are millions of tracked objects);
        # reference counting still frees them as the modules are torn down
        gc.freeze()
        sys.exit(code)
    return code


__all__ = [
    "app",
    "command",
    "main",
]
