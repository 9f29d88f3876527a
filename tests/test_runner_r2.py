"""Issue 10 items 7-10 (runs): retry the error samples, repeat-K stability, one executor per run with two
real processes on SQLite and PostgreSQL, calls counted when sent. Real loopback OpenAI-compatible server,
real ``automonitor`` subprocesses."""

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

from automonitor import runner
from servers.data import add_custom, add_pairs
from servers.openai_fault import OpenAIFaultServer
from store.models import Prediction, Run

FAST = {"backoff_initial": 0.01, "backoff_max": 0.05, "timeout": 10}
EXE = str(Path(sys.executable).parent / "automonitor")


def _env(db_url):
    return {**os.environ, "AUTOMONITOR_DB": db_url}


def _api_calls(engine, rid) -> int:
    with Session(engine) as s:
        return s.get(Run, rid).api_calls


@pytest.mark.slow
def test_item9_two_concurrent_resumes_one_executes_other_exits_2(db_url):
    from store import get_engine, init_db

    engine = init_db(get_engine(db_url, fresh=True))
    add_pairs(engine, 6)  # 12 samples
    with OpenAIFaultServer(latency=0.4) as srv:
        rid = runner.create_run(engine, "openai:test-model", "direct", base_url=srv.base_url, concurrency=1,
                                params=FAST)
        cmd = [EXE, "run", "--resume", rid, "--json", "--quiet"]
        a = subprocess.Popen(cmd, env=_env(db_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        b = subprocess.Popen(cmd, env=_env(db_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        outs = {p.pid: p.communicate(timeout=120) + (p.returncode,) for p in (a, b)}
        calls = srv.stats()["calls"]
    codes = sorted(rc for _o, _e, rc in outs.values())
    assert codes == [0, 2], outs
    winner = next(pid for pid, (_o, _e, rc) in outs.items() if rc == 0)
    loser_err = next(e for _o, e, rc in outs.values() if rc == 2)
    assert f"pid {winner}" in loser_err and "being executed" in loser_err
    # every sample was asked exactly once
    assert len(calls) == 12 and set(calls.values()) == {1}
    assert _api_calls(engine, rid) == 12
    with Session(engine) as s:
        assert s.get(Run, rid).status == "finished" and "lease" not in s.get(Run, rid).params


@pytest.mark.slow
def test_item10_calls_in_flight_at_a_kill_are_counted(db_url):
    from store import get_engine, init_db

    engine = init_db(get_engine(db_url, fresh=True))
    add_custom(engine, [(f"[scenario:hang] q{i}", f"bad {i}", f"good {i}") for i in range(4)])
    with OpenAIFaultServer() as srv:
        srv.hang_sleep = 5.0
        rid = runner.create_run(engine, "openai:test-model", "direct", base_url=srv.base_url, concurrency=3,
                                params=FAST)
        proc = subprocess.Popen([EXE, "run", "--resume", rid, "--json", "--quiet"], env=_env(db_url),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while time.time() < deadline and srv.stats()["total"] < 3:
            time.sleep(0.02)
        assert srv.stats()["total"] == 3  # three requests in flight, none answered
        # the count is committed when sent, not when the answer comes back
        while time.time() < deadline and _api_calls(engine, rid) < 3:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        sent = srv.stats()["total"]
    assert _api_calls(engine, rid) == sent == 3
    with Session(engine) as s:
        assert all(p.outcome is None for p in s.exec(select(Prediction).where(Prediction.run_id == rid)))
