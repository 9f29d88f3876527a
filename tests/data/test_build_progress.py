"""``automonitor build`` on a terminal: a rich progress bar on stderr for the long stages, the stage lines
unchanged without a terminal, and stdout exactly the JSON document either way (issue 41, item 3)."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _build(raw: Path, db: str, cache: Path, *, tty: bool) -> tuple[int, str, str]:
    """Run the installed ``automonitor build --json`` in a new process, stderr on a pseudo-terminal when ``tty``
    (stdout a pipe either way); return (exit code, stdout, stderr as written, ANSI codes and all)."""
    exe = Path(sys.executable).parent / "automonitor"
    env = {
        **os.environ,
        "AUTOMONITOR_DB": db,
        "AUTOMONITOR_RAW": str(raw),
        "AUTOMONITOR_CACHE_DIR": str(cache),
        "TERM": "xterm-256color",
        "COLUMNS": "120",
    }
    for k in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(k, None)
    args = [str(exe), "build", "--raw", str(raw), "--json"]
    if not tty:
        res = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        return res.returncode, res.stdout, res.stderr
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc = subprocess.run(
            args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, timeout=120
        )
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    return proc.returncode, proc.stdout.decode(), b"".join(chunks).decode(errors="replace")


def test_build_shows_a_progress_bar_on_a_terminal_and_plain_stage_lines_otherwise(tmp_path, raw_dir):
    """One small source (hh_rlhf): on a terminal the sources, detector-ladder and store stages draw rich bars
    with their step counts (every source, every detector, every write phase done) beside the stage lines; without
    a terminal stderr is only the plain lines. stdout is the JSON document in both cases."""
    from automonitor.data.build.ladder import BUILD_DETECTORS
    from automonitor.data.build.reconcile import STORE_PHASES
    from automonitor.data.sources import REGISTRY

    raw = tmp_path / "raw"
    shutil.copytree(raw_dir / "hh_rlhf", raw / "hh_rlhf")
    db = f"sqlite:///{tmp_path / 'store.db'}"
    cache = tmp_path / "cache"  # a cold ladder cache: the detectors really run, one step each

    rc, out, err = _build(raw, db, cache, tty=True)
    assert rc == 0, err
    doc = json.loads(out)  # stdout is exactly the JSON document, the bar is on stderr
    assert doc["inserted"] > 0 and doc["sources"]["hh_rlhf"]["pairs_available"] > 0
    text = _ANSI.sub("", err)
    assert "━" in text  # rich's bar
    n_src, n_det, n_store = len(REGISTRY), len(BUILD_DETECTORS), len(STORE_PHASES)
    assert re.search(rf"sources\s+━+\s+{n_src}/{n_src}\b", text), text[-3000:]
    assert re.search(rf"detector ladder\s+━+\s+{n_det}/{n_det}\b", text), text[-3000:]
    assert re.search(rf"store\s+━+\s+{n_store}/{n_store}\b", text), text[-3000:]
    assert re.search(r"edition hard\s+━+\s+\d+/\?", text)  # a pulse: no counted steps
    # the stage lines with their counts are still printed on the terminal
    assert re.search(r"hh_rlhf: [\d,]+ pairs from 1 file", text)
    assert re.search(r"gates: [\d,]+ pairs pass", text)
    assert re.search(r"store: [\d,]+ inserted, 0 updated, 0 deleted", text)
    assert "\x1b[" in err  # drawn and redrawn with cursor control: a live display

    rc, out, err = _build(raw, db, cache, tty=False)  # the same build again, stderr a pipe
    assert rc == 0, err
    assert json.loads(out)["unchanged"] is True
    assert "━" not in err and "\x1b[" not in err and not re.search(r"\d+/\d+", err)
    assert re.search(r"^hh_rlhf: [\d,]+ pairs from 1 file", err, re.M)
    assert re.search(r"^gates: [\d,]+ pairs pass", err, re.M)
    assert re.search(r"^selection: [\d,]+ test pairs, [\d,]+ sample rows", err, re.M)
    assert re.search(r"^detector ladder: [\d,]+ pairs tiered", err, re.M)
    assert re.search(r"^edition hard: [\d,]+ pairs kept", err, re.M)
    assert re.search(r"^store: 0 inserted, 0 updated, 0 deleted", err, re.M)
