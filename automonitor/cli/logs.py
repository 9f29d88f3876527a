"""Logging of the command line. Every module that logs has its own logger (``logging.getLogger(__name__)``,
so a line names the module it comes from) below the ``automonitor`` and ``store`` loggers; the CLI
configures the handlers once per command (:func:`configure`):

- stderr: warnings and errors by default, debug lines with ``--verbose`` (``-v``), errors only with
  ``--quiet`` (``-q``); every command takes both flags, before or after its name (:func:`take_flags`);
- a run's log (:func:`run_log`): ``automonitor run`` writes its info lines (debug with ``--verbose``) to
  ``<log dir>/RUN_ID.log`` (:func:`run_log_path`: ``$AUTOMONITOR_LOG_DIR``, default
  ``<tmp>/automonitor-runs``: the file where a run started from the app already writes its output, whose
  path the run keeps in ``params["detached"]["log"]``).

No secret reaches a log line: every handler formats through :class:`RedactingFormatter`
(:func:`automonitor.errors.redact`: the values of the environment's secret variables, ``*_API_KEY``,
``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, credentials in URLs, bearer tokens), whichever module or library
wrote the line.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

from automonitor.errors import redact

#: the loggers of the product (every module's logger is below one of them)
PRODUCT_LOGGERS = ("automonitor", "store")
LINE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: stderr level by flag
LEVELS = {"quiet": logging.ERROR, "default": logging.WARNING, "verbose": logging.DEBUG}


class RedactingFormatter(logging.Formatter):
    """A formatter whose every line (message, arguments, traceback) goes through :func:`redact`."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler on the current ``sys.stderr`` (looked up at each line, so a caller that swaps stderr,
    such as a test running several commands in one process, gets the lines)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


_STDERR: list[logging.Handler] = []  # the stderr handler this process installed (one at most)


def configure(level: str = "default") -> None:
    """Install (or replace) the stderr handler on the root logger at the level of ``level``
    (``quiet`` | ``default`` | ``verbose``, :data:`LEVELS`); the product's loggers pass debug lines on, so a
    run's log (:func:`run_log`) gets its info lines whatever stderr shows. Idempotent."""
    root = logging.getLogger()
    for h in _STDERR:
        root.removeHandler(h)
    _STDERR.clear()
    handler = _StderrHandler()
    handler.setLevel(LEVELS[level])
    handler.setFormatter(RedactingFormatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    _STDERR.append(handler)
    if root.level == logging.NOTSET or root.level < logging.WARNING:
        root.setLevel(logging.WARNING)  # libraries (httpx, openai...) say only what matters
    for name in PRODUCT_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if level == "verbose" else logging.INFO)
    # the database driver's own warnings on a lost connection ("error ignored terminating <Pipeline>")
    # repeat the one error line the CLI prints about the database (issue 37): shown with --verbose only
    logging.getLogger("psycopg").setLevel(logging.DEBUG if level == "verbose" else logging.ERROR)


def is_quiet() -> bool:
    """Whether this command was given ``--quiet``/``-q`` (:func:`configure` installed the stderr handler at
    the ``quiet`` level: errors only). A command prints its own informational lines (``run <id>``) only
    when this is false."""
    return any(h.level >= LEVELS["quiet"] for h in _STDERR)


def take_flags(args: Sequence[str], own_options: set[str]) -> tuple[list[str], str]:
    """``args`` without the logging flags, and the level they ask for.

    ``--verbose``/``-v`` and ``--quiet``/``-q`` may stand anywhere before a ``--``; a flag that the command
    itself declares (``run --quiet`` hides the progress bar) stays in ``args`` and still sets the level.
    The last flag wins."""
    out, level, rest = [], "default", list(args)
    for i, a in enumerate(rest):
        if a == "--":
            out += rest[i:]
            break
        if a in ("--verbose", "-v", "--quiet", "-q"):
            level = "verbose" if a in ("--verbose", "-v") else "quiet"
            if a in own_options:
                out.append(a)
            continue
        out.append(a)
    return out, level


def run_log_path(run_id: str) -> Path:
    """Where the log of run ``run_id`` is written: ``$AUTOMONITOR_LOG_DIR/RUN_ID.log`` (default folder
    ``<tmp>/automonitor-runs``)."""
    base = os.environ.get("AUTOMONITOR_LOG_DIR") or str(Path(tempfile.gettempdir()) / "automonitor-runs")
    return Path(base) / f"{run_id}.log"


def _same_file(a: object, path: Path) -> bool:
    try:
        fd = a.fileno()  # type: ignore[attr-defined]
        return path.exists() and os.path.samestat(os.fstat(fd), path.stat())
    except (AttributeError, OSError, ValueError):
        return False


@contextlib.contextmanager
def run_log(run_id: str) -> Iterator[Path]:
    """Append the product's log lines (info, or debug when ``--verbose`` was given) to :func:`run_log_path` while the block runs; yields the path. A run started from the app already sends its stderr to that file:
    then the stderr handler takes the info lines instead (nothing is written twice)."""
    path = run_log_path(run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    verbose = logging.getLogger(PRODUCT_LOGGERS[0]).getEffectiveLevel() <= logging.DEBUG
    level = logging.DEBUG if verbose else logging.INFO
    root = logging.getLogger()
    if _same_file(sys.stderr, path):
        before = [(h, h.level) for h in _STDERR]
        for h, _ in before:
            h.setLevel(min(h.level, level))
        try:
            yield path
        finally:
            for h, lv in before:
                h.setLevel(lv)
        return
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(level)
    handler.setFormatter(RedactingFormatter(LINE_FORMAT))
    root.addHandler(handler)
    try:
        yield path
    finally:
        root.removeHandler(handler)
        handler.close()


__all__ = [
    "LEVELS",
    "PRODUCT_LOGGERS",
    "RedactingFormatter",
    "configure",
    "is_quiet",
    "run_log",
    "run_log_path",
    "take_flags",
]
