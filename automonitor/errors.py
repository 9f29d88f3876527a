"""Errors of the product: every error it raises on purpose derives from :class:`AutomonitorError`, so a
caller catches the product's errors with one ``except`` (and nothing else: a bug stays a bug). The CLI maps
them to exit codes in one table (:data:`automonitor.cli.EXIT_CODES`): bad input, an unknown name and a
refused permission exit 2, any other product error 1. No message may carry a secret: text from outside
(a provider's error answer, which may quote the API key it was sent) goes through :func:`redact` before it
is stored, printed or logged."""

from __future__ import annotations

import os
import re


class AutomonitorError(Exception):
    """The root of the product's errors (bad input, missing things, refused permissions, judge transport
    failures, stale reads...). Subclasses keep their standard-library bases (``ValueError``,
    ``LookupError``, ``PermissionError``) so existing ``except`` clauses still catch them."""


class InputError(AutomonitorError, ValueError):
    """Bad input, located as precisely as possible.

    Attributes:
        file: path of the offending file (or ``None`` for non-file input such as a CLI option).
        line: 1-based line number (JSONL line or CSV data row counting the header as line 1), or ``None``.
        field: name of the offending field or option, or ``None``.
        message: what is wrong, in plain words.
    """

    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, field: str | None = None
    ) -> None:
        self.file, self.line, self.field, self.message = file, line, field, message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        return ": ".join([", ".join(where), self.message]) if where else self.message


class ChangedElsewhere(InputError):
    """A write found its target changed by somebody else since it was read (e.g. a label save racing
    an import or the annotator's own batch submit in another tab): nothing was written. The stored
    state wins; the caller should show it again."""


class RunBusy(InputError):
    """A run another live process is executing now (its lease, :mod:`automonitor.runs.lease`): this process may
    not execute it at the same time. Nothing is wrong with the input (the same command succeeds once that
    process has ended), so the CLI exits 1 (CONTRACT: 2 is for bad usage or bad input, 1 for other
    failures); an ``InputError`` still, so the pages that show a refused input show it too.

    Attributes:
        run_id, pid, host: the run and the process that executes it.
        field: the CLI option that asked (``resume``, ``reuse``, ``retry-errors``; ``run`` for ``generate
            resume``).
    """

    #: the command each asking option stands for, and what continues the run once the other process is gone
    _ASKED = {
        "resume": ("run --resume", "run --resume"),
        "reuse": ("run --reuse", "run --resume"),
        "retry-errors": ("run --retry-errors", "run --retry-errors"),
        "run": ("generate resume", None),  # a cancelled generation run does not resume
    }

    def __init__(self, run_id: str, pid: object, host: object, *, field: str | None) -> None:
        self.run_id, self.pid, self.host = run_id, pid, host
        asked, then = self._ASKED.get(field or "", ("this command", "run --resume"))
        after = f", then: automonitor {then} {run_id}" if then else ""
        super().__init__(
            f"run {run_id} is already being executed by another process (pid {pid} on {host}); "
            f"`automonitor {asked}` cannot execute it at the same time. Fix: wait for that process to end "
            f"(`automonitor runs` shows the run's progress), or stop it: automonitor runs --cancel {run_id}{after}",
            field=field,
        )

    def __str__(self) -> str:
        return self.message  # a sentence that names the command itself, not "field 'resume': ..."

    def asked_by(self, field: str | None) -> RunBusy:
        """The same refusal, told to the command that ``field`` stands for (``--reuse`` that resumed a run)."""
        return RunBusy(self.run_id, self.pid, self.host, field=field)


class PermissionDenied(AutomonitorError, PermissionError):
    """The acting user's role does not allow the operation (enforced in core/store, not only in the UI)."""


class NotFound(AutomonitorError, LookupError):
    """A named run, sample, user or item does not exist in the store."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped an executing run (the run released itself as ``cancelled``); carries this
    invocation's tallies so far: ``api_calls`` and ``cache_hits`` (ints: the run's JSON summary's
    ``api_calls_this_process`` and ``cache_hits_this_process``)."""

    def __init__(self, api_calls: int, cache_hits: int) -> None:
        super().__init__()
        self.api_calls, self.cache_hits = api_calls, cache_hits


def require_folder(path: str | os.PathLike[str], field: str | None = None) -> None:
    """Refuse an output file whose folder is not there, or a path that is a folder, before any work (nothing
    is created).

    Raises:
        InputError: ``path`` is empty, its parent folder does not exist, or it is a folder (names ``path``
            and ``field`` when given).
    """
    from pathlib import Path

    if not str(path).strip():
        raise InputError("an empty path: give a file name", file=repr(str(path)), field=field)
    if not Path(path).parent.exists():
        raise InputError("the directory does not exist", file=str(path), field=field)
    if Path(path).is_dir():
        raise InputError("cannot write it: it is a directory, give a file name", file=str(path), field=field)


_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@/\s]+@", re.IGNORECASE)
_BEARER = re.compile(r"(?P<head>\bBearer\s+)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
_KEY_LIKE = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}")
MASK = "***"


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """The values (8 characters or more) of the environment variables whose name says they hold a secret
    (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``...), longest
    first."""
    env = os.environ if environ is None else environ
    return sorted({v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= 8}, key=len, reverse=True)


def redact(text: str, environ: dict[str, str] | None = None) -> str:
    """``text`` with every secret masked as ``***``: the values of :func:`secret_values`, the password
    of a URL (``postgresql://user:***@host``), a bearer token and anything shaped like a provider key
    (``sk-...``)."""
    for value in secret_values(environ):
        text = text.replace(value, MASK)
    text = _URL_PASSWORD.sub(rf"\g<head>{MASK}@", text)
    text = _BEARER.sub(rf"\g<head>{MASK}", text)
    return _KEY_LIKE.sub(MASK, text)
