"""Run a run in a detached process that outlives the caller."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from store import session_scope
from store.models import Run


def spawn_detached(db_url: str, run_id: str, *command: str) -> tuple[int, Path]:
    """Start ``python -m automonitor COMMAND... --json`` (``AUTOMONITOR_DB=db_url``) as a detached process in
    its own session, so it continues when the caller (e.g. a browser tab's Streamlit session) goes away;
    its output is appended to ``<tmp>/automonitor-runs/RUN_ID.log``. Returns ``(pid, log path)``."""
    log_dir = Path(tempfile.gettempdir()) / "automonitor-runs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{run_id}.log"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "automonitor", *command, "--json"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env={**os.environ, "AUTOMONITOR_DB": db_url},
            start_new_session=True,
            close_fds=True,
        )
    return proc.pid, log_path


def launch_detached(db_url: str, run_id: str) -> int:
    """Start ``automonitor run --resume RUN_ID --json`` detached (:func:`spawn_detached`), so the run
    continues when the caller goes away.

    Output goes to ``<tmp>/automonitor-runs/RUN_ID.log`` (path kept in ``Run.params["detached"]``).
    Returns the child's pid.
    """
    pid, log_path = spawn_detached(db_url, run_id, "run", "--resume", run_id)
    from store import get_engine

    with contextlib.suppress(Exception), session_scope(get_engine(db_url)) as s:  # the child runs regardless
        run = s.get(Run, run_id)
        if run is not None:
            run.params = {**(run.params or {}), "detached": {"pid": pid, "log": str(log_path)}}
            s.add(run)
    return pid
