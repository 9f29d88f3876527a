"""``make demo-stop`` (``scripts/demo_runs.sh stop-background``): the demo's background phase runs in a process group
of its own, and stopping it stops what it started too (trial60: nothing said how to stop the demo, and killing the
background ``make`` left its judge run using the CPU)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from helpers import REPO

SCRIPT = REPO / "scripts" / "demo_runs.sh"


def _phase(phase: str, tmp_path: Path, fake_make: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DEMO_MAKE": str(fake_make),
        "DEMO_PID": str(tmp_path / "demo.pid"),
        "DEMO_LOG": str(tmp_path / "demo.log"),
        "PY": sys.executable,
        "AUTOMONITOR_DB": f"sqlite:///{tmp_path / 'demo.db'}",
        "PYTHONPATH": str(REPO),
    }
    return subprocess.run(["bash", str(SCRIPT), phase], env=env, capture_output=True, text=True, timeout=60)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def test_demo_stop_stops_the_background_phase_and_what_it_started(tmp_path):
    # a stand-in for `make demo-background`: it starts a child (as make starts pip or a judge run) and waits
    child_file = tmp_path / "child.pid"
    fake_make = tmp_path / "fake-make"
    fake_make.write_text(f"#!/usr/bin/env bash\nsleep 300 &\necho $! > {child_file}\nwait\n")
    fake_make.chmod(0o755)
    assert _phase("stop-background", tmp_path, fake_make).stdout.startswith("no background demo phase")

    started = _phase("start-background", tmp_path, fake_make)
    assert started.returncode == 0, started.stderr
    pid = int((tmp_path / "demo.pid").read_text().splitlines()[0])
    for _ in range(100):
        if child_file.exists() and child_file.read_text().strip():
            break
        time.sleep(0.05)
    child = int(child_file.read_text())
    try:
        assert _alive(pid) and _alive(child)
        assert os.getpgid(pid) == pid == os.getpgid(child)  # a group of its own, the child in it

        stopped = _phase("stop-background", tmp_path, fake_make)
        assert stopped.returncode == 0, stopped.stderr
        assert "stopped the background demo phase" in stopped.stdout
        for _ in range(100):
            if not _alive(pid) and not _alive(child):
                break
            time.sleep(0.05)
        assert not _alive(pid) and not _alive(child)
        assert "has already ended" in _phase("stop-background", tmp_path, fake_make).stdout
    finally:
        for p in (pid, child):
            try:
                os.kill(p, 9)
            except ProcessLookupError:
                pass
