"""A run stopped by SIGTERM ends as one stopped by Ctrl-C (SIGINT): status ``cancelled`` (error
``interrupted``), lease released, exit 130 with one stderr line naming the pending samples and the
``--resume`` command, and the resumed run judges only what was pending. Before, SIGTERM (what
``kill``, systemd and container runtimes send) left the run ``running`` with a live-looking lease, and
Ctrl-C exited 0 without a word.

A real ``automonitor run`` subprocess against a slow loopback OpenAI-compatible server is signalled; the
resume (no signal, no process boundary in question) runs in-process against the same server, answering at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlmodel import Session, select

from automonitor.runs import runner
from helpers import run_cli
from servers.data import add_pairs
from servers.openai_fault import OpenAIFaultServer
from store.models import Prediction, Run


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _judged(engine, rid) -> dict[str, str]:
    with Session(engine) as s:
        rows = s.exec(select(Prediction).where(Prediction.run_id == rid))
        return {p.sample_id: p.outcome for p in rows if p.outcome is not None}


@pytest.mark.slow
@pytest.mark.parametrize(
    "sig, db",
    [
        (signal.SIGTERM, "sqlite"),
        pytest.param(signal.SIGTERM, "postgresql", marks=pytest.mark.postgres),
        (signal.SIGINT, "sqlite"),
    ],
)
def test_a_signalled_run_is_marked_stopped_releases_its_lease_and_resumes(sig, db, request):
    from store import get_engine, init_db

    url = request.getfixturevalue("sqlite_url" if db == "sqlite" else "pg_url")
    engine = init_db(get_engine(url, fresh=True))
    add_pairs(engine, 10)  # 20 samples
    exe = Path(sys.executable).parent / "automonitor"
    env = {**os.environ, "AUTOMONITOR_DB": url}
    with OpenAIFaultServer(latency=0.3) as srv:
        rid = runner.create_run(engine, "openai:test-model", "direct", base_url=srv.base_url, concurrency=2)
        proc = subprocess.Popen(
            [str(exe), "run", "--resume", rid, "--quiet", "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # a foreground command's Ctrl-C: SIGINT at its default. An ignored SIGINT is inherited across exec
            # (what a shell gives a background job), and an earlier test in this worker may have left it so:
            # the run then rightly ignores Ctrl-C and finishes, exit 0 (full run 2026-12-05)
            preexec_fn=_sigint_default,
        )
        deadline = time.time() + 60
        while time.time() < deadline and len(_judged(engine, rid)) < 4:
            time.sleep(0.02)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        judged = _judged(engine, rid)
        assert 4 <= len(judged) < 20
        # --json: the summary so far on stdout, as a failed run prints its own (before: empty stdout)
        doc = json.loads(out)
        assert (doc["run_id"], doc["n"], doc["status"], doc["error"]) == (rid, 20, "cancelled", "interrupted")
        assert sum(doc["counts"].values()) == len(judged) and doc["pending"] == 20 - len(judged)
        # this invocation's tallies, as ints (the contract's shape): a call per judged sample at least (none
        # was cached), and no more than the judge received plus the 2 (--concurrency) counted as sent when
        # the signal came; the run's are the same (its first invocation)
        assert doc["cache_hits_this_process"] == 0 and len(judged) <= doc["api_calls_this_process"] <= srv.total + 2
        assert (doc["api_calls"], doc["cache_hits"]) == (doc["api_calls_this_process"], 0), (doc, srv.total)
        with Session(engine) as s:
            run = s.get(Run, rid)
            assert (run.status, run.error) == ("cancelled", "interrupted")
            assert "lease" not in (run.params or {})  # released: a resume need not wait for it to go stale
        pending = 20 - len(judged)
        hint = f"run {rid} stopped (cancelled, interrupted) with {pending} pending; continue with: automonitor run --resume {rid}"
        assert hint in err.splitlines(), err  # one line, through a pipe too

        srv.latency = 0  # the resume is about what it judges, not about time: answered at once, in-process
        r = run_cli(["run", "--resume", rid, "--json", "--quiet"], db=url)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
    assert out["n"] == 20 and out["api_calls_this_process"] == pending
    assert out["api_calls"] == doc["api_calls"] + pending  # the whole run's: before the signal and the resume's
    assert runner.run_info(engine, rid)["status"] == "finished"
    final = _judged(engine, rid)
    assert all(final[sid] == outcome for sid, outcome in judged.items())
    engine.dispose()
