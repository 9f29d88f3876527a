"""The test harness's ``run_cli`` runs the command's entry point in the test process by default; it must
give what the installed console script gives in a new process: the same exit codes, stdout and stderr
(usage lines naming ``automonitor``, one JSON document, the store note), and leave nothing behind (the
environment, ``sys.argv``, open engines)."""

from __future__ import annotations

import os
import sys

from helpers import run_cli


def _pairs(tmp_path):
    import json

    f = tmp_path / "pairs.jsonl"
    rows = [
        {
            "pair_id": "p1",
            "category": "specification_gaming",
            "task": "code",
            "label": lab,
            "request": "r",
            "response": f"{lab} answer",
        }
        for lab in ("misbehavior", "benign")
    ]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f


def _both(args, db, **kw):
    inproc = run_cli(args, db=db, **kw)
    sub = run_cli(args, db=db, subprocess_only=True, **kw)
    return inproc, sub


def test_in_process_calls_give_what_the_console_script_gives(tmp_path):
    from store.engine import engines

    db = f"sqlite:///{tmp_path / 'h.db'}"
    argv0, env_db, before = sys.argv[0], os.environ.get("AUTOMONITOR_DB"), set(engines)
    calls = [
        ["import", str(_pairs(tmp_path))],
        ["stats", "--json"],
        ["stats", "--split", "nope"],  # a usage error: exit 2, usage line
        ["report", "--run", "missing", "--json"],  # not found: exit 2 naming the store
        ["nosuchcommand"],
    ]
    for i, args in enumerate(calls):
        if i == 0:  # a write: once (in process), then both read the same store
            first = run_cli(args, db=db)
            assert first.returncode == 0, first.stderr
            continue
        a, b = _both(args, db)
        assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr), args
    a, _ = _both(["stats", "--no-such-option"], db)
    assert a.returncode == 2 and "Usage: automonitor" in a.stderr
    # nothing left behind in this process
    assert sys.argv[0] == argv0 and os.environ.get("AUTOMONITOR_DB") == env_db and set(engines) == before
