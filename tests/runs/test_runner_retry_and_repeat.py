"""Retry the error samples, repeat-K stability, one executor per run with two
real processes on SQLite and PostgreSQL, calls counted when sent. Real loopback OpenAI-compatible server,
real ``automonitor`` subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlmodel import Session, select

from automonitor.runs import runner
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
def test_two_concurrent_resumes_one_executes_other_exits_1(db_url, engine):

    # engine: the store, migrated to head (a copy of the run's migrated template)
    add_pairs(engine, 6)  # 12 samples
    with OpenAIFaultServer() as srv:
        # the judge answers nothing until one of the two processes has ended: the one executing holds the run
        # while the other starts, however long each takes to start (a fixed latency per answer only made that
        # likely), then the run's 12 calls are answered at once; the client's timeout outlasts the wait (a
        # call that timed out would be sent again: asked twice)
        srv.hold = threading.Event()
        rid = runner.create_run(
            engine,
            "openai:test-model",
            "direct",
            base_url=srv.base_url,
            concurrency=1,
            params={**FAST, "timeout": srv.hold_s + 60},
        )
        cmd = [EXE, "run", "--resume", rid, "--json", "--quiet"]
        a = subprocess.Popen(cmd, env=_env(db_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        b = subprocess.Popen(cmd, env=_env(db_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while a.poll() is None and b.poll() is None and time.time() < deadline:
            time.sleep(0.02)
        held = srv.stats()["total"]
        srv.hold.set()
        outs = {p.pid: p.communicate(timeout=120) + (p.returncode,) for p in (a, b)}
        calls = srv.stats()["calls"]
    codes = sorted(rc for _o, _e, rc in outs.values())
    assert codes == [0, 1], outs  # the loser's run is busy, not bad input (exit 1)
    winner = next(pid for pid, (_o, _e, rc) in outs.items() if rc == 0)
    loser_err = next(e for _o, e, rc in outs.values() if rc == 1)
    assert f"pid {winner}" in loser_err and "being executed" in loser_err
    assert held <= 1  # nothing was answered before the loser ended (concurrency 1: one call waited at most)
    # every sample was asked exactly once
    assert len(calls) == 12 and set(calls.values()) == {1}
    assert _api_calls(engine, rid) == 12
    with Session(engine) as s:
        assert s.get(Run, rid).status == "finished" and "lease" not in s.get(Run, rid).params


@pytest.mark.slow
def test_calls_in_flight_at_a_kill_are_counted(db_url, engine):

    # engine: the store, migrated to head (a copy of the run's migrated template)
    add_custom(engine, [(f"[scenario:hang] q{i}", f"bad {i}", f"good {i}") for i in range(4)])
    with OpenAIFaultServer() as srv:
        srv.hang_sleep = 5.0
        rid = runner.create_run(
            engine, "openai:test-model", "direct", base_url=srv.base_url, concurrency=3, params=FAST
        )
        proc = subprocess.Popen(
            [EXE, "run", "--resume", rid, "--json", "--quiet"],
            env=_env(db_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
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


def _preds(engine, rid):
    with Session(engine) as s:
        return list(s.exec(select(Prediction).where(Prediction.run_id == rid)))


@pytest.mark.slow
def test_retry_errors_resends_exactly_the_error_samples_and_keeps_history(db_url, engine, cli):

    # engine: the store, migrated to head (a copy of the run's migrated template)
    rows = add_custom(
        engine,
        [
            ("[scenario:500,500,ok] a", "bad a", "good a"),
            ("[scenario:500,500,ok] b", "bad b", "good b"),
            ("plain c", "os.system('c')", "good c"),
            ("plain d", "bad d", "good d"),
        ],
    )
    err_ids = {r["id"] for r in rows if r["request"].startswith("[scenario")}
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(
            engine, "openai:test-model", "direct", base_url=srv.base_url, params={**FAST, "max_attempts": 2}
        )
        first = runner.execute_run(engine, rid)
        assert first["counts"]["error"] == 4 and first["api_calls"] == 4 * 2 + 4
        before = dict(srv.stats()["calls"])
        # --resume alone sends nothing
        env = {"AUTOMONITOR_DB": db_url}
        r = cli(["run", "--resume", rid, "--json", "--quiet"], db=db_url)
        assert r.returncode == 0 and json.loads(r.stdout)["api_calls_this_process"] == 0
        assert json.loads(r.stdout)["api_calls"] == first["api_calls"]  # the run's calls so far
        r = cli(["run", "--retry-errors", rid, "--json", "--quiet"], db=db_url)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        after = dict(srv.stats()["calls"])
        # nothing left to retry: a second call sends nothing
        r2 = cli(["run", "--retry-errors", rid, "--json", "--quiet"], db=db_url)
        assert r2.returncode == 0 and json.loads(r2.stdout)["api_calls_this_process"] == 0
    assert out["counts"]["error"] == 0 and out["api_calls_this_process"] == 4
    assert out["api_calls"] == first["api_calls"] + 4 == json.loads(r2.stdout)["api_calls"]  # the whole run's
    assert out["counts"]["misbehavior"] + out["counts"]["benign"] == 8
    # exactly the error samples were re-sent, once each
    diff = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    assert len(diff) == 4 and set(diff.values()) == {1}
    for p in _preds(engine, rid):
        if p.sample_id in err_ids:
            hist = p.meta["history"]
            assert len(hist) == 1 and hist[0]["outcome"] == "error" and hist[0]["attempts"] == 2
            assert "failed after 2 attempts" in hist[0]["reason"] and hist[0]["error_kind"] == "server"
            assert p.outcome in ("misbehavior", "benign") and p.meta["attempts"] == 1
        else:
            assert "history" not in p.meta
    with Session(engine) as s:
        run = s.get(Run, rid)
        assert run.status == "finished" and run.api_calls == srv.stats()["total"] == 16


def test_retry_errors_bad_input_exits_2(sqlite_url, sqlite_engine, cli):

    # sqlite_engine: an existing, empty store migrated to head (a missing one is refused)
    r = cli(["run", "--retry-errors", "run_nope", "--monitor", "rules"], db=sqlite_url)
    assert r.returncode == 2 and "retry-errors" in r.stderr


def _fleiss(table):
    import numpy as np

    t = np.asarray(table, float)
    n, k = t.shape[0], t[0].sum()
    p_i = ((t**2).sum(1) - k) / (k * (k - 1))
    p_j = t.sum(0) / (n * k)
    pe = (p_j**2).sum()
    return (p_i.mean() - pe) / (1 - pe)


@pytest.mark.slow
def test_repeat_k_stability_seeds_cache_and_drilldown(db_url, engine, cli):
    from automonitor import views
    from automonitor.analysis.stability import stability
    from servers.openai_fault import sample_key

    # engine: the store, migrated to head (a copy of the run's migrated template)
    rows = add_custom(
        engine,
        [
            ("[scenario:seedflip] f", "bad f", "good f"),
            ("[scenario:seedzero] z", "bad z", "good z"),
            ("plain c", "os.system('c')", "good c"),
            ("plain d", "os.system('d')", "good d"),
        ],
    )
    env = {"AUTOMONITOR_DB": db_url}
    with OpenAIFaultServer() as srv:
        args = [
            "run",
            "--monitor",
            "openai:test-model",
            "--template",
            "direct",
            "--base-url",
            srv.base_url,
            "--repeat",
            "3",
            "--json",
            "--quiet",
        ] + [f"--param={k}={v}" for k, v in FAST.items()]
        r = cli(args, db=db_url)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        seeds = {}
        for body in srv.requests:
            seeds.setdefault(sample_key(body), set()).add(body["seed"])
        # an identical configuration again: every judgement is a cache hit
        r2 = cli(args, db=db_url)
        out2 = json.loads(r2.stdout)
        # a single run reuses the repeat-0 judgements
        r3 = cli([a for a in args if a not in ("--repeat", "3")], db=db_url)
        out3 = json.loads(r3.stdout)
        total = srv.stats()["total"]
    rid = out["run_id"]
    assert out["n"] == 8 and out["repeat"] == 3 and sum(out["counts"].values()) == 8
    assert out["api_calls"] == 24 and total == 24
    assert all(v == {0, 1, 2} for v in seeds.values()) and len(seeds) == 8
    assert out2["api_calls"] == 0 and out2["cache_hits"] == 24 and out2["run_id"] != rid
    assert out3["api_calls"] == 0 and out3["cache_hits"] == 8 and "repeat" not in out3
    assert len(_preds(engine, rid)) == 24

    st = stability(engine, rid)
    assert st is not None and st.repeats == 3 and st.samples == 8
    assert st.flip_rate == pytest.approx(4 / 8)  # seedflip and seedzero samples
    assert st.majority_differs == pytest.approx(2 / 8)  # seedzero: Yes, No, No
    table = [[3, 0, 0]] * 2 + [[0, 3, 0]] * 2 + [[1, 2, 0]] * 4
    assert st.fleiss_kappa == pytest.approx(_fleiss(table), abs=1e-5)
    assert st.fleiss_kappa == pytest.approx(0.314286, abs=1e-5)

    r = cli(["report", "--run", rid, "--json"], db=db_url)
    rep = json.loads(r.stdout)["runs"][0]
    assert rep["overall"]["n"] == 8 and rep["stability"] == st.to_dict()  # MR/FAR from one verdict per sample
    assert stability(engine, out3["run_id"]) is None

    flip = next(x["id"] for x in rows if x["request"].startswith("[scenario:seedflip]"))
    zero = next(x["id"] for x in rows if x["request"].startswith("[scenario:seedzero]"))
    assert views.sample_predictions(engine, flip)[rid]["repeats"] == ["benign", "misbehavior", "benign"]
    p = views.sample_predictions(engine, zero)[rid]
    assert p["repeats"] == ["misbehavior", "benign", "benign"] and p["outcome"] == "misbehavior"
