"""Helpers shared by the CLI modules: opening the store, printing JSON, tables on stderr.

Store rule: only ``build``, ``import`` and ``users add`` may create a store (they say so on
stderr); every other command refuses a store that does not exist yet (a missing SQLite file, a
PostgreSQL database without the schema) with an error naming it, instead of silently creating an
empty one in the current directory. Every error printed by the CLI names the store it used
(:func:`store_note`; passwords in the URL are masked).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Container, Iterable, Literal, Sequence

from rich.console import Console

from automonitor.errors import InputError, NotFound
from automonitor.vocab import EDITIONS

if TYPE_CHECKING:
    from rich.table import Table
    from sqlalchemy.engine import Engine


class CliConsole(Console):
    """The CLI's rich console. Off a terminal (output redirected to a file or a pipe) a message (every
    object printed a ``str``) is printed unwrapped, one line per line of text: rich would otherwise wrap it
    mid-sentence at its default 80 columns. Renderables (tables, progress bars) keep the console's width
    (``width=``; 80 when none is given and there is no terminal). On a terminal everything is as rich
    prints it, word-wrapped at the terminal's width. Build it with ``markup=False`` where the messages
    carry data. Emoji codes are off: a data value such as the pair id ``safecoder:train:112`` prints
    as written, not as ``safecoder🚋112``."""

    def __init__(
        self,
        *,
        file: IO[str] | None = None,
        width: int | None = None,
        stderr: bool = False,
        markup: bool = True,
        highlight: bool = True,
        emoji: bool = False,
    ) -> None:
        super().__init__(file=file, width=width, stderr=stderr, markup=markup, highlight=highlight, emoji=emoji)

    def print(self, *objects: object, **kwargs: Any) -> None:
        """:meth:`rich.console.Console.print`, with ``soft_wrap=True`` for messages off a terminal
        (unless the call sets ``soft_wrap``)."""
        if "soft_wrap" not in kwargs and not self.is_terminal and all(isinstance(o, str) for o in objects):
            kwargs["soft_wrap"] = True
        super().print(*objects, **kwargs)


#: messages carry data (names, paths): never rich markup, emoji codes or highlighting
err_console = CliConsole(stderr=True, markup=False, highlight=False, emoji=False)


def progress_line(msg: str) -> None:
    """One dim progress line on stderr (a step of a long command)."""
    err_console.print(msg, style="dim")


#: exit code of a command stopped by Ctrl-C (SIGINT) or SIGTERM: 128 + SIGINT, as shells report Ctrl-C
INTERRUPTED_EXIT = 130

#: What some editions are, for ``stats --help`` (the names themselves come from :data:`automonitor.vocab.EDITIONS`)
_EDITION_NOTES = {
    "paper": "the paper's six cells",
    "paper-r2": "the earlier per-source quota composition of paper",
    "hard": "adversarially filtered verified",
}


#: What ``paper`` is on a store never built (no build log: the edition filter reads every gold test sample),
#: as ``stats`` and ``report`` say it
NO_BUILD_NOTE = "no build: every gold test sample"


def edition_text(edition: str | None, built: bool) -> str:
    """An edition as the text commands show it: ``"paper (no build: every gold test sample)"`` for
    ``paper`` on a store never built (``built`` false; :data:`NO_BUILD_NOTE`), else the name (``""`` for
    ``None``). The JSON documents keep the bare name."""
    if edition == "paper" and not built:
        return f"paper ({NO_BUILD_NOTE})"
    return edition or ""


def edition_choices(*, described: bool = False) -> str:
    """The ``--edition`` choices as help text, in :data:`automonitor.vocab.EDITIONS` order:
    ``"paper | verified | paper-r2 | hard"``; ``described=True`` adds what an edition is in brackets
    (``"paper (the paper's six cells) | verified | ..."``)."""
    return " | ".join(f"{e} ({_EDITION_NOTES[e]})" if described and e in _EDITION_NOTES else e for e in EDITIONS)


_OPENED: list[str] = []  # the store URL (password masked) of this process's last open_store


def shown_url(url: str) -> str:
    """``url`` with any password masked (``postgresql+psycopg://user:***@host/db``)."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparsable URL is shown without its credentials part
        return url.split("@")[-1]


def _sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (``None`` for in-memory or non-SQLite URLs)."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    if not u.drivername.startswith("sqlite") or not u.database or u.database == ":memory:":
        return None
    return Path(u.database)


def resolved_store_url(url: str | None = None) -> str:
    """The store this process uses (``url``, else ``$AUTOMONITOR_DB``, else the default
    ``sqlite:///automonitor.db``; :func:`store.engine.db_url`), a relative SQLite path made absolute
    against the current directory so a message names the file itself. Not masked: pass it to
    :func:`shown_url` or ``describe_db_error`` (which mask the password) before printing."""
    from sqlalchemy.engine import make_url

    from store.engine import db_url

    resolved = db_url(url)
    try:
        path = _sqlite_path(resolved)
    except Exception:  # noqa: BLE001 - an unparsable URL is named as given
        return resolved
    if path is None or path.is_absolute():
        return resolved
    return make_url(resolved).set(database=str(path.resolve())).render_as_string(hide_password=False)


def store_exists(url: str) -> bool:
    """Whether the store at ``url`` exists: the SQLite file is there and not empty, or the PostgreSQL
    database holds the schema (an ``alembic_version`` table). Nothing is created.

    Raises:
        InputError: ``url`` is no usable SQLAlchemy URL (malformed, unknown dialect or driver; field
            ``AUTOMONITOR_DB``: exit 2).
        sqlalchemy.exc.OperationalError: the PostgreSQL server cannot be reached (exit 1).
        NotFound: the PostgreSQL database does not exist (a missing store, as a missing SQLite file: exit 2).
    """
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    try:
        make_url(url).get_dialect()
    except (sa.exc.ArgumentError, ImportError) as exc:  # NoSuchModuleError is an ArgumentError
        raise InputError(f"not a usable store URL: {exc}", field="AUTOMONITOR_DB") from None
    path = _sqlite_path(url)
    if path is not None:
        return path.is_file() and path.stat().st_size > 0
    if url.startswith("sqlite"):
        return False
    from store import get_engine

    # an unreachable server raises (OperationalError): the CLI then prints its one clear line about the
    # database (exit 1). A missing database is a missing store, as a missing SQLite file is (exit 2,
    # CONTRACT: bad input), named with the command that creates it (the CLI cannot create a database).
    try:
        return sa.inspect(get_engine(url)).has_table("alembic_version")
    except sa.exc.OperationalError as exc:
        low = str(getattr(exc, "orig", exc)).lower()
        if "database" in low and "does not exist" in low:
            name = make_url(url).database
            raise NotFound(
                f"no store at {shown_url(url)}: the PostgreSQL database {name!r} does not exist; create it "
                f"(`createdb {name}`), then `automonitor build`, `automonitor import FILE` or "
                "`automonitor users add NAME` creates the store in it"
            ) from None
        raise


def store_note() -> str:
    """`` (store: URL)`` naming the store this command opened, or ``""`` when none was opened."""
    return f" (store: {_OPENED[-1]})" if _OPENED else ""


def open_store(url: str | None = None, *, create: bool = False) -> Engine:
    """Engine for ``AUTOMONITOR_DB`` (or ``url``), migrated to the newest schema.

    Args:
        create: may create a new store (``build``, ``import``, ``users add``); it then says so on stderr,
            only in the process that created the schema (:func:`store.engine.migrate`, decided under the
            store's migration lock: of two commands opening a new store at once, one says so).

    Raises:
        NotFound: the store does not exist and ``create`` is false; the message names it and says how
            to create one (exit 2).
    """
    from store import get_engine
    from store.engine import db_url, migrate

    resolved = db_url(url)
    shown = shown_url(resolved)
    _OPENED.append(shown)
    existed = store_exists(resolved)
    if not existed and not create:
        raise NotFound(
            f"no store at {shown}: set AUTOMONITOR_DB to an existing store, or create one with "
            "`automonitor build`, `automonitor import FILE` or `automonitor users add NAME`"
        )
    engine = get_engine(resolved)
    if migrate(engine) == "created":
        print(f"created a new store at {shown}", file=sys.stderr)
    return engine


CSV_EXACT_HELP = "Write CSV cells unchanged (no formula neutralising): the same as --csv-mode exact."


def csv_mode_of(csv_mode: str, csv_exact: bool) -> str:
    """The CSV mode an export writes: ``"exact"`` with ``--csv-exact`` (CONTRACT round 3), else ``csv_mode``
    (``safe`` | ``exact``).

    Raises:
        InputError: ``csv_mode`` is not a known mode (field ``--csv-mode``).
    """
    from automonitor.data.records import check_csv_mode  # pydantic: not at --help

    check_csv_mode(csv_mode)
    return "exact" if csv_exact else csv_mode


def emit_json(obj: object) -> None:
    """Print one JSON document on stdout (and nothing else there)."""
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


def emit(json_out: bool, doc: object, line: str) -> None:
    """``doc`` as one JSON document on stdout (``json_out``), else the message ``line`` on stderr."""
    if json_out:
        emit_json(doc)
    else:
        err_console.print(line)


def rich_table(
    title: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    right: Container[str] = (),
    caption: str | None = None,
    overflow: Literal["fold", "crop", "ellipsis", "ignore"] = "ellipsis",
    whole: Container[str] = (),
) -> Table:
    """A rich table titled ``title`` (and ``caption``) with ``columns`` (those in ``right`` right-justified,
    each cutting a long cell by ``overflow``, except those in ``whole``: ids a user copies into the next command,
    never wrapped nor cut, the other columns narrowed for them) and ``rows`` of cell texts."""
    from rich.table import Table

    cells = [list(row) for row in rows]
    t = Table(title=title, caption=caption)
    for i, col in enumerate(columns):
        if col in whole:  # as wide as its longest cell, the other columns folded or cut to make room
            width = max([len(col), *(len(row[i]) for row in cells)])
            t.add_column(col, justify="left", no_wrap=True, min_width=width)
        else:
            t.add_column(col, justify="right" if col in right else "left", overflow=overflow)
    for row in cells:
        t.add_row(*row)
    return t
