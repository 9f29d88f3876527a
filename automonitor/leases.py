"""Process leases: who holds a piece of work (a run, a generation job, a build) and whether that holder
is still alive, without the store.

A lease is ``{"pid", "host", "heartbeat"}`` (heartbeat: Unix seconds, refreshed by its holder every ~5 s).
It is held by another process while that process is alive (same host) or its heartbeat is younger than
:data:`LEASE_STALE_S` (another host).
"""

from __future__ import annotations

import os
import socket
import time
from typing import Mapping, TypedDict

__all__ = ["LEASE_STALE_S", "Lease", "lease_held_by_other", "new_lease", "pid_alive"]

LEASE_STALE_S = 30.0


class Lease(TypedDict):
    """A process's lease as stored (a JSON object in the record it holds): its ``pid`` on ``host`` and its
    last ``heartbeat`` (Unix seconds)."""

    pid: int
    host: str
    heartbeat: float


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` on this host is alive (a zombie is not)."""
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


def lease_held_by_other(lease: Mapping[str, object] | None) -> bool:
    """Whether ``lease`` (as read from its JSON column: a :class:`Lease`) belongs to another live process
    (this process's own lease is not "other"; a dead local pid, a stale or missing heartbeat is free to
    take over)."""
    if not lease:
        return False
    host, pid, heartbeat = lease.get("host"), lease.get("pid"), lease.get("heartbeat")
    if host == socket.gethostname() and pid == os.getpid():
        return False
    if not isinstance(heartbeat, (int, float)) or time.time() - heartbeat > LEASE_STALE_S:
        return False
    if host == socket.gethostname():
        return pid_alive(pid if isinstance(pid, int) else 0)
    return True


def new_lease() -> Lease:
    """This process's lease: ``{"pid", "host", "heartbeat": now}``."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "heartbeat": time.time()}
