"""The lease that stops two processes from executing one run: lock the run row, check the lease, take
it, release it. A lease is ``Run.params["lease"]`` (:mod:`automonitor.leases`)."""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from typing import Iterator, Mapping

from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.errors import RunBusy
from automonitor.jsontypes import JSONValue
from automonitor.leases import lease_held_by_other, new_lease
from automonitor.vocab import RunStatus
from store import session_scope
from store.models import Run, utcnow

log = logging.getLogger(__name__)

__all__ = [
    "check_lease",
    "lock_run",
    "new_lease",
    "release",
    "released_on_failure",
    "take_lease",
]


def check_lease(run_id: str, params: Mapping[str, JSONValue], *, field: str) -> None:
    """Raise when another live process holds the lease in the run's ``params``.

    Raises:
        RunBusy: ``run RUN_ID is already being executed by another process (pid PID on HOST)`` and the fix
            (wait, or ``automonitor runs --cancel RUN_ID``); ``field`` names the CLI option that asked.
    """
    lease = params.get("lease")
    if isinstance(lease, dict) and lease_held_by_other(lease):
        raise RunBusy(run_id, lease.get("pid"), lease.get("host"), field=field)


def take_lease(session: Session, run: Run, params: dict[str, object], *, running: bool = True) -> None:
    """Store a new lease of this process in ``params`` (a copy of ``run.params``, which it replaces) and,
    when ``running``, set ``run`` running (``started_at`` kept from an earlier session, ``finished_at``
    cleared); ``session`` adds the run."""
    params["lease"] = new_lease()
    run.params = params
    if running:
        run.status = "running"
        run.started_at = run.started_at or utcnow()
        run.finished_at = None
        log.info("run %s: running in pid %d (monitor %s, template %s)", run.id, os.getpid(), run.monitor, run.template)
    session.add(run)


def lock_run(session: Session, run_id: str) -> Run | None:
    """Read the run row under a write lock held until ``session`` commits, so that checking and taking
    the lease is atomic across processes: ``SELECT ... FOR UPDATE`` on PostgreSQL (a second executor
    waits for the first one's commit, then sees its lease), ``BEGIN IMMEDIATE`` on SQLite (the database
    write lock is taken before the read)."""
    if session.get_bind().dialect.name == "sqlite":
        session.connection().exec_driver_sql("BEGIN IMMEDIATE")
    return session.get(Run, run_id, with_for_update=True)


def release(engine: Engine, run_id: str, *, status: RunStatus, error: str | None = None) -> None:
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
    log.log(logging.WARNING if status == "failed" else logging.INFO, "run %s: %s (%s)", run_id, status, error)


@contextmanager
def released_on_failure(engine: Engine, run_id: str) -> Iterator[None]:
    """Run the block; on Ctrl-C :func:`release` the run ``cancelled`` (error ``interrupted``), on any other
    exception ``failed`` with the exception as its error (first 2,000 characters), and re-raise."""
    try:
        yield
    except KeyboardInterrupt:
        release(engine, run_id, status="cancelled", error="interrupted")
        raise
    except BaseException as exc:
        release(engine, run_id, status="failed", error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
