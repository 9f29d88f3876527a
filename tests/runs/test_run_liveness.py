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


def test_a_run_waiting_on_a_slow_judge_keeps_its_lease_fresh(sqlite_engine, monkeypatch):
    """The lease heartbeat was refreshed only with a commit of results: a run whose judge took longer than
    the stale limit to answer (a small local server under load, fresh-user trial) was listed as "(no live
    process)" while it ran, and `run --resume` could take it over. The writer now beats on its own."""
    import threading

    from automonitor import leases
    from automonitor.runs import runner
    from automonitor.runs.runner import writer
    from servers.data import add_pairs
    from servers.openai_fault import OpenAIFaultServer
    from store import session_scope
    from store.models import Run

    monkeypatch.setattr(writer, "HEARTBEAT_S", 0.2)
    monkeypatch.setattr(leases, "LEASE_STALE_S", 1.0)
    add_pairs(sqlite_engine, 1)
    with OpenAIFaultServer() as srv:
        srv.hold = threading.Event()  # no answer until the lease is read below
        rid = runner.create_run(sqlite_engine, "openai:m", "direct", base_url=srv.base_url, concurrency=1)
        t = threading.Thread(target=runner.execute_run, args=(sqlite_engine, rid))
        t.start()
        try:
            time.sleep(2.0)  # twice the stale limit with the first call unanswered: nothing was committed but the calls
            with session_scope(sqlite_engine) as s:
                run = s.get(Run, rid)
                lease, status = dict(run.params["lease"]), run.status
            assert status == "running" and srv.stats()["total"] == 1
            assert time.time() - lease["heartbeat"] < leases.LEASE_STALE_S, lease
        finally:
            srv.hold.set()
            t.join()
    assert runner.run_info(sqlite_engine, rid)["status"] == "finished"
