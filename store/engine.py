"""Engine set-up for the store: SQLite (default, WAL mode) or PostgreSQL, same code.

The URL comes from ``AUTOMONITOR_DB`` (a SQLAlchemy URL); the default is a SQLite file
``automonitor.db`` in the working directory. The schema is created and upgraded by Alembic
(``init_db``), never by ``create_all``.
"""

from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from sqlalchemy import event
from sqlalchemy.engine import Engine, create_engine, make_url

from store.queries.locks import named_lock

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlmodel import Session

DEFAULT_URL = "sqlite:///automonitor.db"
_MIGRATIONS = Path(__file__).resolve().parent / "migrations"
engines: dict[str, Engine] = {}
_lock = threading.Lock()
log = logging.getLogger(__name__)


def db_url(url: str | None = None) -> str:
    """The store URL: ``url`` if given, else ``$AUTOMONITOR_DB``, else ``sqlite:///automonitor.db``.

    A bare ``postgresql://`` URL is mapped to the psycopg 3 driver (``postgresql+psycopg://``).
    """
    url = url or os.environ.get("AUTOMONITOR_DB") or DEFAULT_URL
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def store_identity(url: str | None = None) -> str:
    """Which store ``db_url(url)`` names, as one comparable string: the URL with its password hidden and a
    SQLite file's path made absolute (from the working directory) with its symbolic links resolved, so
    ``sqlite:///automonitor.db`` read in the repository, the same file named by its absolute path and a link
    to it are one store. Holds no secret: it may be
    written to a file (``make demo``'s pid file records the store its background phase fills)."""
    u = make_url(db_url(url))
    db = u.database
    if u.get_backend_name() == "sqlite" and db and db != ":memory:" and not db.startswith("file:"):
        u = u.set(database=os.path.realpath(db))
    return u.render_as_string(hide_password=True)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def get_engine(url: str | None = None, *, fresh: bool = False) -> Engine:
    """Return a (process-wide cached) engine for ``db_url(url)``.

    SQLite connections get WAL journal mode, foreign keys and a 30 s busy timeout; PostgreSQL gets a
    pre-ping pool. ``fresh=True`` bypasses the cache (tests, benchmarks).
    """
    url = db_url(url)
    with _lock:
        if not fresh and url in engines:
            return engines[url]
        if url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
        if not fresh:
            engines[url] = engine
        return engine


def alembic_config(engine: Engine) -> Config:
    """An Alembic ``Config`` bound to ``engine`` (migrations in ``store/migrations``)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    cfg.attributes["engine"] = engine
    return cfg


def init_db(engine: Engine | None = None) -> Engine:
    """Create or upgrade the schema to the newest Alembic revision (idempotent). Returns the engine.

    A store already at head (:func:`at_head`) costs one ``SELECT``. Concurrent callers that must migrate
    (two commands opening a new store at once) are serialised by a store-wide lock
    (:func:`store.queries.locks.named_lock`), so the second waits and then finds the schema current.
    :func:`migrate` does the same and says what it did."""
    engine = engine or get_engine()
    migrate(engine)
    return engine


def migrate(engine: Engine) -> str:
    """Bring ``engine``'s schema to the newest revision and say what THIS call did: ``"current"`` (nothing,
    the schema was at head), ``"created"`` (the schema, in an empty store) or ``"upgraded"`` (an older one).
    ``"created"`` only for the caller that found the store without a schema while holding the store-wide
    ``migrate`` lock, so of two processes opening a new store at once exactly one reports creating it (the
    other waits on the lock, then finds the schema at head: ``"current"``)."""
    if at_head(engine):  # the usual case: no lock, no Alembic import, no migration file compiled
        log.debug("store %s: schema at the newest revision", engine.url.render_as_string(hide_password=True))
        return "current"
    with named_lock(engine, "migrate"):
        before = _revisions(engine)  # read under the lock: what this caller is about to change
        if before == head_revisions():
            outcome = "current"  # another process migrated while this one waited for the lock
        else:
            from alembic import command

            command.upgrade(alembic_config(engine), "head")
            outcome = "upgraded" if before else "created"
    log.debug("store %s: schema at the newest revision (%s)", engine.url.render_as_string(hide_password=True), outcome)
    return outcome


_HEADS: list[tuple[str, ...]] = []


def head_revisions() -> tuple[str, ...]:
    """The head revision id(s) of ``store/migrations``, sorted; read once per process from the module-level
    ``revision`` / ``down_revision`` literals of ``versions/*.py`` (the revisions no other revision
    names as its parent), without importing Alembic (which compiles every migration file: 0.1-0.3 s).
    A file whose literals cannot be read this way falls back to Alembic's own ``ScriptDirectory``."""
    if not _HEADS:
        _HEADS.append(_heads_from_literals() or _heads_from_alembic())
    return _HEADS[0]


def _heads_from_literals() -> tuple[str, ...] | None:
    """Heads from the migration files' literals, or ``None`` when any file does not declare them plainly."""
    import ast

    revisions: set[str] = set()
    parents: set[str] = set()
    for path in sorted((_MIGRATIONS / "versions").glob("*.py")):
        found: dict[str, Any] = {}
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    # ``revision = 'b'``, or both at once: ``revision, down_revision = 'b', 'a'``
                    pairs: list[tuple[ast.expr, ast.expr | None]] = [(t, node.value)]
                    if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        pairs = list(zip(t.elts, node.value.elts))
                    for name, value in pairs:
                        if isinstance(name, ast.Name) and name.id in ("revision", "down_revision") and value:
                            try:
                                found[name.id] = ast.literal_eval(value)
                            except ValueError:
                                return None
        rev, down = found.get("revision"), found.get("down_revision")
        if not isinstance(rev, str) or "down_revision" not in found:
            return None
        revisions.add(rev)
        downs = (down,) if isinstance(down, str) else tuple(down or ())
        if not all(isinstance(d, str) for d in downs):
            return None
        parents.update(downs)
    heads = tuple(sorted(revisions - parents))
    return heads or None


def _heads_from_alembic() -> tuple[str, ...]:
    from alembic.script import ScriptDirectory

    return tuple(sorted(ScriptDirectory(str(_MIGRATIONS)).get_heads()))


def _revisions(engine: Engine) -> tuple[str, ...]:
    """The revision(s) in the store's ``alembic_version``, sorted; ``()`` for a store without a schema (no
    such table). Any database error other than a missing table is raised by the migration that follows,
    not hidden here."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except DBAPIError:
        return ()
    return tuple(sorted(rows))


def at_head(engine: Engine) -> bool:
    """Whether the store's ``alembic_version`` holds exactly the head revision(s): one ``SELECT``.
    ``False`` for a new store (no such table) or one that needs migrating; any database error other
    than a missing table is raised by the migration that follows, not hidden here."""
    return _revisions(engine) == head_revisions()


@contextmanager
def session_scope(engine: Engine | None = None) -> Iterator[Session]:
    """A session that commits on success and rolls back on any exception (all-or-nothing writes)."""
    from sqlmodel import Session  # the ORM only for a command that writes or reads through a session

    session = Session(engine or get_engine(), expire_on_commit=False)
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def describe_db_error(exc: BaseException, url: str | None = None) -> str:
    """One clear line for a database error (``sqlalchemy.exc.SQLAlchemyError``), for the CLI and pages:
    never the SQL statement, its parameters (row data) or the server's DETAIL line; the store URL, if
    given, without its password.

    Kinds: the disk is full; the database cannot be reached (or the connection dropped); the store is
    locked by another writer; a constraint refused the write; else the driver's first message line."""
    orig = getattr(exc, "orig", None) or exc
    first = (str(orig).strip().splitlines() or [type(orig).__name__])[0][:240]
    low = str(orig).lower()
    where = ""
    if url:
        try:
            where = f" ({make_url(url).render_as_string(hide_password=True)})"
        except Exception:  # noqa: BLE001 - a malformed URL is named by the connection error itself
            where = ""
    if any(s in low for s in ("disk is full", "no space left", "could not extend file", "disk full")):
        return f"the store ran out of disk space{where}; nothing of this operation was written"
    if any(
        s in low
        for s in (
            "connection refused",
            "could not connect",
            "connection failed",
            "server closed the connection",
            "terminating connection",
            "connection is closed",
            "unable to open database file",
            "could not translate host name",
        )
    ):
        return f"cannot reach the store database{where}: {first}"
    if "database is locked" in low or "could not obtain lock" in low:
        return f"the store is locked by another writer{where}; try again"
    if type(exc).__name__ == "IntegrityError":
        return f"the store refused the write (a database constraint): {first}"
    return f"database error{where}: {type(orig).__name__}: {first}"
