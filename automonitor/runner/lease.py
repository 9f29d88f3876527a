"""The lease that stops two processes from executing one run: lock the run row, check the lease, take
it, release it.

A lease is ``Run.params["lease"] = {"pid", "host", "heartbeat"}`` (heartbeat: Unix seconds, refreshed
by the writer every ~5 s). It is held by another process while that process is alive (same host) or
its heartbeat is younger than :data:`LEASE_STALE_S` (another host).
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.errors import InputError
from store import session_scope
from store.models import Run, utcnow

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


def lease_held_by_other(lease: dict[str, Any] | None) -> bool:
    """Whether ``lease`` belongs to another live process (this process's own lease is not "other"; a
    dead local pid or a stale heartbeat is free to take over)."""
    if not lease:
        return False
    if lease.get("host") == socket.gethostname() and lease.get("pid") == os.getpid():
        return False
    if time.time() - float(lease.get("heartbeat", 0)) > LEASE_STALE_S:
        return False
    if lease.get("host") == socket.gethostname():
        return _pid_alive(int(lease.get("pid", 0)))
    return True


def check_lease(run_id: str, params: dict[str, Any], *, field: str) -> None:
    """Raise when another live process holds the lease in the run's ``params``.

    Raises:
        InputError: ``run RUN_ID is being executed by pid PID on HOST`` (``field`` names the CLI option).
    """
    lease = params.get("lease")
    if lease and lease_held_by_other(lease):
        raise InputError(
            f"run {run_id} is being executed by pid {lease.get('pid')} on {lease.get('host')}", field=field
        )


def new_lease() -> dict[str, Any]:
    """This process's lease: ``{"pid", "host", "heartbeat": now}``."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "heartbeat": time.time()}


def mark_running(run: Run) -> None:
    """Set ``run`` running (``started_at`` kept from an earlier session, ``finished_at`` cleared)."""
    run.status = "running"
    run.started_at = run.started_at or utcnow()
    run.finished_at = None


def lock_run(session: Session, run_id: str) -> Run | None:
    """Read the run row under a write lock held until ``session`` commits, so that checking and taking
    the lease is atomic across processes: ``SELECT ... FOR UPDATE`` on PostgreSQL (a second executor
    waits for the first one's commit, then sees its lease), ``BEGIN IMMEDIATE`` on SQLite (the database
    write lock is taken before the read)."""
    if session.get_bind().dialect.name == "sqlite":
        session.connection().exec_driver_sql("BEGIN IMMEDIATE")
    return session.get(Run, run_id, with_for_update=True)


def release(engine: Engine, run_id: str, *, status: str, error: str | None = None) -> None:
    """Drop the lease and record ``status`` and ``error`` (a ``cancelled`` run stays cancelled unless
    ``status`` is ``failed``). A missing run is ignored."""
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


# the names before the runner became a package
_lease_held_by_other = lease_held_by_other
_lock_run = lock_run
_release = release
