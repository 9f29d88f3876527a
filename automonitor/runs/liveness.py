"""Whether a listed run's process is alive (``automonitor runs``): the run list's rows and the leases in them
only, so that listing runs imports neither the ORM nor the tables (:mod:`automonitor.runs.lease` takes and
releases leases through them)."""

from __future__ import annotations

from automonitor.leases import lease_held_by_other
from store.queries.rowtypes import RunRow

__all__ = ["with_liveness"]


def with_liveness(rows: list[RunRow]) -> list[RunRow]:
    """Run list rows (``store.queries.run_list.list_runs``) with ``process_alive``: for a ``running`` run,
    whether a live process holds its lease (``False``: the process that ran it died or was killed, so
    the run is only marked running; ``execute`` or ``run --resume`` takes it over), else ``None``."""
    for row in rows:
        lease = row.get("lease")
        running = row.get("status") == "running"
        row["process_alive"] = lease_held_by_other(lease) if running and isinstance(lease, dict) and lease else None
    return rows
