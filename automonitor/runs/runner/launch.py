"""Run a run in a detached process that outlives the caller."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from store import session_scope
from store.models import Run


def launch_detached(db_url: str, run_id: str) -> int:
    """Start ``automonitor run --resume RUN_ID --json`` as a detached process in its own session, so
    the run continues when the caller (e.g. a browser tab's Streamlit session) goes away.

    Output goes to ``<tmp>/automonitor-runs/RUN_ID.log`` (path kept in ``Run.params["detached"]``).
    Returns the child's pid.
    """
    log_dir = Path(tempfile.gettempdir()) / "automonitor-runs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{run_id}.log"
    env = {**os.environ, "AUTOMONITOR_DB": db_url}
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "automonitor", "run", "--resume", run_id, "--json"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    from store import get_engine

    try:
        with session_scope(get_engine(db_url)) as s:
            run = s.get(Run, run_id)
            if run is not None:
                run.params = {**(run.params or {}), "detached": {"pid": proc.pid, "log": str(log_path)}}
                s.add(run)
    except Exception:  # noqa: BLE001 - the child runs regardless
        pass
    return proc.pid
