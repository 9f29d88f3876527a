"""Locks that serialise concurrent writers of the store, the same calls on SQLite and PostgreSQL.

* :func:`begin_write`: on SQLite, start the transaction with ``BEGIN IMMEDIATE`` so that it holds the
  database's write lock from its first read (a second writer waits up to the busy timeout); the
  pysqlite driver otherwise reads outside any transaction until the first write, so two writers can
  both decide on the same stale read. On PostgreSQL nothing (callers lock rows with ``FOR UPDATE``).
* :func:`try_named_lock` / :func:`release_named_lock`: a session-level lock held across
  transactions, keyed by a name: a PostgreSQL advisory lock (``pg_try_advisory_lock``), on SQLite an
  exclusive ``flock`` on a file next to the database. Used to serialise builds.

The store knows no domain rule: which operations lock what is the core's decision.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterator

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

if TYPE_CHECKING:
    from sqlmodel import Session


def begin_write(session: Session) -> None:
    """Make the session's (new) transaction a writer from its first statement: ``BEGIN IMMEDIATE`` on
    SQLite (waits for the write lock up to the busy timeout; raises ``OperationalError`` "database is
    locked" after it); nothing on PostgreSQL. Call it before any other statement of the transaction."""
    conn = session.connection()
    if conn.dialect.name != "sqlite":
        return
    raw = conn.connection.driver_connection
    if raw is not None and not raw.in_transaction:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def begin_serialised_write(session: Session, name: str) -> None:
    """Make the session's (new) transaction the only one, among those that call this with ``name``, past
    this point until it ends: on SQLite :func:`begin_write` (``BEGIN IMMEDIATE``: one writer for the
    whole database), on PostgreSQL ``pg_advisory_xact_lock`` on ``name``'s key (waits; released at
    commit or rollback). For a check-then-insert that no constraint can express. Call it first."""
    if session.connection().dialect.name == "sqlite":
        begin_write(session)
        return
    session.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": advisory_key(name)})


def advisory_key(name: str) -> int:
    """A signed 64-bit advisory-lock key for ``name`` (first 8 bytes of its sha256)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


@dataclass
class NamedLock:
    """A held :func:`try_named_lock`: the PostgreSQL connection that holds it, or the locked file."""

    name: str
    conn: Connection | None = None
    file: IO[Any] | None = None


def _lock_file(engine: Engine, name: str) -> Path:
    """The lock file of ``name`` for a SQLite store: ``<database>.<name>.lock`` beside the database
    (the temp dir for an in-memory database)."""
    database = engine.url.database
    if not database or database == ":memory:":
        import tempfile

        return Path(tempfile.gettempdir()) / f"automonitor-memory.{name}.lock"
    return Path(database).resolve().with_name(Path(database).name + f".{name}.lock")


def try_named_lock(engine: Engine, name: str) -> NamedLock | None:
    """Take the store-wide lock ``name`` without waiting; ``None`` when another process (or
    connection) holds it. Release with :func:`release_named_lock`; a crashed holder's lock is freed by
    PostgreSQL when its connection closes, and by the kernel when its process ends (SQLite)."""
    if engine.dialect.name == "postgresql":
        conn = engine.connect()
        got = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": advisory_key(name)}).scalar()
        conn.commit()
        if not got:
            conn.close()
            return None
        return NamedLock(name, conn=conn)
    path = _lock_file(engine, name)
    fh = open(path, "a+")  # noqa: SIM115 - held open while the lock is held
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        return None
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()}\n")
    fh.flush()
    return NamedLock(name, file=fh)


def release_named_lock(lock: NamedLock) -> None:
    """Release a lock from :func:`try_named_lock` (idempotent)."""
    if lock.conn is not None:
        try:
            lock.conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": advisory_key(lock.name)})
            lock.conn.commit()
        finally:
            lock.conn.close()
            lock.conn = None
    if lock.file is not None:
        try:
            fcntl.flock(lock.file.fileno(), fcntl.LOCK_UN)
        finally:
            lock.file.close()
            lock.file = None


@contextmanager
def named_lock(engine: Engine, name: str) -> Iterator[None]:
    """Hold the store-wide lock ``name`` for the ``with`` block, WAITING for another holder (unlike
    :func:`try_named_lock`): PostgreSQL ``pg_advisory_lock`` on its own connection, a blocking
    ``flock`` beside a SQLite database."""
    if engine.dialect.name == "postgresql":
        conn = engine.connect()
        try:
            conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": advisory_key(name)})
            conn.commit()
            yield
        finally:
            try:
                conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": advisory_key(name)})
                conn.commit()
            finally:
                conn.close()
        return
    with open(_lock_file(engine, name), "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
