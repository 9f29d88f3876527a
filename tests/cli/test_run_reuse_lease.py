"""``automonitor run --reuse`` on a run that another live process executes is refused naming ``--reuse``,
the option the user gave (fresh-user trial, fifth sitting: the refusal named ``field 'resume'``), with exit
1 (trial50: a busy run is no bad input) and nothing judged; ``--resume`` of the same run names ``--resume``."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

from sqlmodel import Session

from helpers import run_cli
from servers.data import add_custom
from store import get_engine, init_db
from store.models import Run

ARGS = ["run", "--monitor", "rules", "--template", "direct", "--no-controls", "--quiet"]


def test_a_reused_run_held_by_another_process_is_refused_naming_reuse(sqlite_url):
    engine = get_engine(sqlite_url)
    init_db(engine)
    add_custom(engine, [("plain a", "os.system('a')", "good a")])
    first = run_cli([*ARGS, "--json"], db=sqlite_url)
    assert first.returncode == 0, first.stderr
    run_id = json.loads(first.stdout)["run_id"]
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        with Session(engine) as s:
            run = s.get(Run, run_id)
            assert run is not None
            run.params = {
                **(run.params or {}),
                "lease": {"host": socket.gethostname(), "pid": holder.pid, "heartbeat": time.time()},
            }
            s.add(run)
            s.commit()
        reused = run_cli([*ARGS, "--reuse"], db=sqlite_url)
        resumed = run_cli(["run", "--resume", run_id, "--quiet"], db=sqlite_url)
    finally:
        holder.kill()
        holder.wait()
    # exit 1, not 2: a run busy in another process is no bad input (test_run_busy.py)
    assert reused.returncode == 1, reused.stderr
    assert f"is already being executed by another process (pid {holder.pid} on " in reused.stderr, reused.stderr
    assert "`automonitor run --reuse` cannot execute it" in reused.stderr, reused.stderr
    assert "--resume` cannot" not in reused.stderr, reused.stderr
    assert resumed.returncode == 1, resumed.stderr
    assert "`automonitor run --resume` cannot execute it" in resumed.stderr, resumed.stderr
