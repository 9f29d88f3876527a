"""The lease that stops two processes from executing one run: lock, check, release."""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from sqlalchemy.engine import Engine

from store import session_scope
from store.models import Run


LEASE_STALE_S = 30.0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child (killed, not yet reaped) still answers kill(0): look at its state
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="ignore") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _lease_held_by_other(lease: dict[str, Any] | None) -> bool:
    if not lease:
        return False
    if lease.get("host") == socket.gethostname() and lease.get("pid") == os.getpid():
        return False
    if time.time() - float(lease.get("heartbeat", 0)) > LEASE_STALE_S:
        return False
    if lease.get("host") == socket.gethostname():
        return _pid_alive(int(lease.get("pid", 0)))
    return True


def _lock_run(session, run_id: str) -> Run | None:
    """Read the run row under a write lock held until ``session`` commits, so that checking and taking
    the lease is atomic across processes: ``SELECT ... FOR UPDATE`` on PostgreSQL (a second executor
    waits for the first one's commit, then sees its lease), ``BEGIN IMMEDIATE`` on SQLite (the database
    write lock is taken before the read)."""
    if session.get_bind().dialect.name == "sqlite":
        session.connection().exec_driver_sql("BEGIN IMMEDIATE")
    return session.get(Run, run_id, with_for_update=True)


def _release(engine: Engine, run_id: str, *, status: str, error: str | None = None) -> None:
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None:
            return
        p = dict(run.params or {})
        p.pop("lease", None)
        run.params = p
        if status == "failed" or run.status != "cancelled":
            run.status = status
        run.error = error
        s.add(run)

