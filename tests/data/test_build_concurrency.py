"""Builds serialise, ``build --force`` never deletes an executing run, and a runner whose
run is deleted stops at once. Real processes (``automonitor build`` / ``automonitor run``), SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from automonitor.runs import runner
from servers.data import add_pairs
from servers.openai_fault import OpenAIFaultServer
from store import get_engine, init_db, session_scope
from store.models import Monitor, Prediction, Run, Sample
from store.queries import build as build_queries

from helpers import RAW

EXE = Path(sys.executable).parent / "automonitor"


def _popen(args, db):
    env = {**os.environ, "AUTOMONITOR_DB": db, "AUTOMONITOR_RAW": str(RAW)}
    return subprocess.Popen([str(EXE), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _snapshot(engine):
    with engine.connect() as c:
        return sorted(c.execute(sa.select(Sample.id, Sample.split, Sample.status, Sample.label)).all())


@pytest.mark.slow
def test_two_builds_at_once_one_builds_the_other_exits_2(db_url, cli):
    procs = [_popen(["build", "--seed", "0", "--json"], db_url) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], [(p.returncode, e[-2000:]) for p, (_, e) in zip(procs, outs)]
    loser = next(e for p, (_, e) in zip(procs, outs) if p.returncode == 2)
    assert "another build is running" in loser and "sqlalchemy" not in loser.lower() and "SELECT" not in loser
    # the store is the one build's result: building again changes nothing
    again = cli(["build", "--seed", "0", "--json"], db=db_url)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["unchanged"] is True


@pytest.mark.slow
def test_build_force_refuses_to_delete_a_run_with_a_live_lease(built_db_url, cli, seed_plan):
    db_url = built_db_url  # the seed-0 build
    eng = init_db(get_engine(db_url, fresh=True))
    leaving = sorted(
        {r["id"] for r in seed_plan(0).rows if r["split"] == "test"} - {r["id"] for r in seed_plan(1).rows}
    )[0]
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])  # the "runner" process
    try:
        import socket

        with session_scope(eng) as s:
            m = Monitor(name="rules", backend="rules")
            s.add(m)
            s.flush()
            lease = {"pid": holder.pid, "host": socket.gethostname(), "heartbeat": time.time() + 600}
            s.add(
                Run(
                    id="run-live",
                    monitor_id=m.id,
                    monitor="rules",
                    template="direct",
                    n=1,
                    status="running",
                    params={"lease": lease},
                )
            )
            s.flush()
            s.add(Prediction(run_id="run-live", sample_id=leaving))
        before = _snapshot(eng)
        res = cli(["build", "--seed", "1", "--force"], db=db_url)
        assert res.returncode == 2, res.stderr[-2000:]
        assert "executing now" in res.stderr and "run-live" in res.stderr
        assert _snapshot(eng) == before
        with eng.connect() as c:
            assert c.execute(sa.select(Run.status).where(Run.id == "run-live")).scalar() == "running"
        holder.kill()
        holder.wait(10)  # the runner is gone: its lease is dead and --force may delete the run
        res = cli(["build", "--seed", "1", "--force", "--json"], db=db_url)
        assert res.returncode == 0, res.stderr[-2000:]
        assert json.loads(res.stdout)["dependents_deleted"]["runs"] == 1
    finally:
        holder.kill()
        eng.dispose()


@pytest.mark.slow
def test_a_runner_whose_run_is_deleted_stops_at_once(db_url):
    engine = init_db(get_engine(db_url, fresh=True))
    add_pairs(engine, 30)  # 60 samples
    with OpenAIFaultServer(latency=0.3) as srv:
        rid = runner.create_run(
            engine, "openai:test-model", "direct", base_url=srv.base_url, concurrency=2, params={"timeout": 10}
        )
        proc = _popen(["run", "--resume", rid, "--json", "--quiet"], db_url)
        deadline = time.time() + 60
        while time.time() < deadline and srv.stats()["total"] < 6:
            time.sleep(0.02)
        with session_scope(engine) as s:  # what build --force does to a run (delete_dependents)
            ids = list(s.execute(sa.select(Prediction.sample_id).where(Prediction.run_id == rid)).scalars())
            build_queries.delete_dependents(s, ids)
        at_delete = srv.stats()["total"]
        t0 = time.time()
        out, err = proc.communicate(timeout=60)
        stopped_after = time.time() - t0
        time.sleep(0.5)
        total = srv.stats()["total"]
    assert proc.returncode != 0 and "deleted while it executed" in err, (proc.returncode, err[-2000:])
    assert stopped_after < 5
    assert total - at_delete <= 12, (at_delete, total)  # at most ~2 s of 2 workers, not the 60 samples
    with engine.connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(Run)).scalar() == 0
    engine.dispose()
