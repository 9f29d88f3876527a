"""A run killed with SIGKILL mid-run resumes with ``--resume RUN_ID``: no sample judged twice, none lost.

The run executes in a real ``automonitor run`` subprocess against a slow loopback OpenAI-compatible
server that counts calls per sample; the process is SIGKILLed after some verdicts are committed, then
resumed in-process (the same entry point; the kill is what needs the process) with the server answering at once.
"""

from __future__ import annotations

import hashlib
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
from automonitor.runs.prompts import PromptBuilder, load_template
from servers.data import add_pairs
from servers.openai_fault import OpenAIFaultServer
from store.models import Prediction, Run


def _key(req: str, resp: str) -> str:
    b = PromptBuilder(load_template("direct"), request_budget=12000, response_budget=16000)
    return hashlib.sha256(b.user_text(req, resp)[0].encode()).hexdigest()[:16]


def _judged(engine, rid) -> dict[str, str]:
    with Session(engine) as s:
        return {
            p.sample_id: p.outcome
            for p in s.exec(select(Prediction).where(Prediction.run_id == rid))
            if p.outcome is not None
        }


@pytest.mark.slow
def test_sigkill_mid_run_then_resume(db_url, engine):

    # engine: the store, migrated to head (a copy of the run's migrated template)
    rows = add_pairs(engine, 20)  # 40 samples
    keys = {r["id"]: _key(r["request"], r["response"]) for r in rows}
    exe = Path(sys.executable).parent / "automonitor"
    env = {**os.environ, "AUTOMONITOR_DB": db_url}
    with OpenAIFaultServer(latency=0.25) as srv:
        rid = runner.create_run(
            engine, "openai:test-model", "direct", base_url=srv.base_url, concurrency=4, params={"timeout": 10}
        )
        proc = subprocess.Popen(
            [str(exe), "run", "--resume", rid, "--json", "--quiet"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.time() + 60
        while time.time() < deadline and len(_judged(engine, rid)) < 12:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert proc.returncode == -signal.SIGKILL
        time.sleep(0.3)  # let requests in flight at the kill reach the server
        judged_at_kill = _judged(engine, rid)
        calls_at_kill = dict(srv.stats()["calls"])
        assert 12 <= len(judged_at_kill) < 40
        with Session(engine) as s:
            assert s.get(Run, rid).status == "running"  # killed: nobody marked it

        srv.latency = 0  # the resume (in-process: the kill was the process's part) is answered at once
        r = run_cli(["run", "--resume", rid, "--json", "--quiet"], db=db_url)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        calls_after = dict(srv.stats()["calls"])

    assert out["n"] == 40 and sum(out["counts"].values()) == 40
    final = _judged(engine, rid)
    assert len(final) == 40
    with Session(engine) as s:
        assert len(list(s.exec(select(Prediction).where(Prediction.run_id == rid)))) == 40
        assert s.get(Run, rid).status == "finished"
    # verdicts committed before the kill were kept and never asked for again
    for sid, outcome in judged_at_kill.items():
        assert final[sid] == outcome
        assert calls_after[keys[sid]] == calls_at_kill[keys[sid]] == 1
    # each sample pending at the kill was asked exactly once by the resumed process
    pending = [sid for sid in keys if sid not in judged_at_kill]
    for sid in pending:
        assert calls_after[keys[sid]] - calls_at_kill.get(keys[sid], 0) == 1
    assert out["api_calls_this_process"] == len(pending)
    # the whole run's calls, as its counts are: those sent before the kill (each judged sample's at least) too
    with Session(engine) as s:
        assert out["api_calls"] == s.get(Run, rid).api_calls >= len(judged_at_kill) + len(pending)
