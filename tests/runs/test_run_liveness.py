"""A run whose process died stays ``running`` in the store (nothing is left to mark it), but the run list
says so: ``process_alive`` false in ``runs --json`` and "(no live process)" in the table."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _seed(engine, lease_pid: int, heartbeat: float) -> None:
    from store import session_scope
    from store.models import Monitor, Run

    with session_scope(engine) as s:
        m = Monitor(name="rules", backend="rules")
        s.add(m)
        s.flush()
        host = socket.gethostname()
        for rid, status, lease in (
            ("r-dead", "running", {"pid": lease_pid, "host": host, "heartbeat": heartbeat}),
            ("r-live", "running", {"pid": os.getppid(), "host": host, "heartbeat": heartbeat}),
            ("r-done", "finished", None),
        ):
            s.add(
                Run(
                    id=rid,
                    monitor_id=m.id,
                    monitor="rules",
                    template="direct",
                    status=status,
                    n=2,
                    params={"lease": lease} if lease else {},
                )
            )


def test_a_killed_run_is_listed_as_running_without_a_live_process(cli, sqlite_url, sqlite_engine):
    _seed(sqlite_engine, _dead_pid(), time.time())
    r = cli(["runs", "--json"], db=sqlite_url)
    assert r.returncode == 0, r.stderr
    rows = {row["run_id"]: row for row in json.loads(r.stdout)["runs"]}
    assert rows["r-dead"]["status"] == "running" and rows["r-dead"]["process_alive"] is False
    assert rows["r-live"]["process_alive"] is True  # the pytest process holds it: alive
    assert rows["r-done"]["process_alive"] is None
    table = cli(["runs"], db=sqlite_url, env={"COLUMNS": "250"})
    assert table.returncode == 0, table.stderr
    dead_line = next(line for line in table.stdout.splitlines() if "r-dead" in line)
    live_line = next(line for line in table.stdout.splitlines() if "r-live" in line)
    assert "no live process" in dead_line and "no live process" not in live_line
