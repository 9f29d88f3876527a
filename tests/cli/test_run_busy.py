"""A second ``automonitor run --resume`` (or an identical ``--reuse``) while another process executes the run is
refused with a line a newcomer can act on (trial50: ``error: field 'resume': run ... is being executed by pid
N on HOST``, exit 2, as for bad input): the run is busy in that process, wait for it or cancel it with
``automonitor runs --cancel RUN_ID``, then resume. Exit 1: the CONTRACT keeps 2 for bad usage or bad input,
and the same command succeeds once that process has ended. The first process is a real ``automonitor run``
whose calls the fault server holds; SQLite and PostgreSQL."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from automonitor.runs import runner
from helpers import run_cli
from servers.data import add_pairs
from servers.openai_fault import OpenAIFaultServer


def test_a_run_executing_in_another_process_is_refused_with_the_fix_and_exit_1(db_url, engine):
    add_pairs(engine, 2)
    exe = Path(sys.executable).parent / "automonitor"
    env = {**os.environ, "AUTOMONITOR_DB": db_url}
    env.pop("OPENAI_API_KEY", None)
    with OpenAIFaultServer() as srv:
        srv.hold = threading.Event()  # the first process's calls wait here until the checks are done
        srv.hold_s = 60
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, concurrency=2)
        first = subprocess.Popen(
            [str(exe), "run", "--resume", rid, "--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + 60
            while srv.stats()["total"] < 1 and time.monotonic() < deadline and first.poll() is None:
                time.sleep(0.05)
            assert srv.stats()["total"] >= 1, first.communicate(timeout=5)
            resumed = run_cli(["run", "--resume", rid, "--quiet"], db=db_url, env={"OPENAI_API_KEY": None})
            reused = run_cli(
                ["run", "--monitor", "openai:m", "--template", "direct", "--base-url", srv.base_url,
                 "--concurrency", "2", "--reuse", "--quiet"],
                db=db_url,
                env={"OPENAI_API_KEY": None},
            )  # fmt: skip
            cancel = run_cli(["runs", "--cancel", rid], db=db_url)
            time.sleep(3.5)  # the executing process reads its run's status once a second: three reads under CI load
        finally:
            srv.hold.set()
            out, err = first.communicate(timeout=60)
        host = socket.gethostname()
        for r, asked in ((resumed, "run --resume"), (reused, "run --reuse")):
            assert r.returncode == 1, (asked, r.returncode, r.stderr)
            line = r.stderr.strip()
            assert "\n" not in line, line
            assert line.startswith(
                f"error: run {rid} is already being executed by another process (pid {first.pid} on {host}); "
                f"`automonitor {asked}` cannot execute it at the same time. Fix: wait for that process to end"
            ), line
            assert f"or stop it: automonitor runs --cancel {rid}, then: automonitor run --resume {rid}" in line, line
            assert "field '" not in line and "RunBusy" not in line, line
        # the fix works as said: the cancel stops the first process, then --resume finishes the run
        assert cancel.returncode == 0, cancel.stderr
        stopped = runner.run_info(engine, rid)
        assert stopped["status"] == "cancelled" and stopped["counts"]["pending"] >= 1, (stopped, err)
        again = run_cli(["run", "--resume", rid, "--quiet"], db=db_url, env={"OPENAI_API_KEY": None})
    assert again.returncode == 0, again.stderr
    info = runner.run_info(engine, rid)
    assert info["status"] == "finished" and info["counts"]["pending"] == 0, info
