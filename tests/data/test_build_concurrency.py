"""Builds serialise, ``build --force`` never deletes an executing run, and a runner whose
run is deleted stops at once. Real processes (``automonitor build`` / ``automonitor run``), SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from automonitor.data.build.reconcile import BUILD_LOCK
from automonitor.runs import runner
from servers.data import add_pairs
from servers.openai_fault import OpenAIFaultServer
from store import get_engine, init_db, session_scope
from store.models import Monitor, Prediction, Run, Sample
from store.queries import build as build_queries
from store.queries.locks import advisory_key

from helpers import PG_ADMIN_URL, RAW

EXE = Path(sys.executable).parent / "automonitor"


def _popen(args, db):
    env = {**os.environ, "AUTOMONITOR_DB": db, "AUTOMONITOR_RAW": str(RAW)}
    return subprocess.Popen([str(EXE), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _snapshot(engine):
    with engine.connect() as c:
        return sorted(c.execute(sa.select(Sample.id, Sample.split, Sample.status, Sample.label)).all())


def _holds_build_lock(proc, db_url) -> bool:
    """Whether ``proc`` (an ``automonitor build``) holds the store-wide build lock of ``db_url``
    (:func:`store.queries.locks.try_named_lock`; not the ``migrate`` lock it takes before, creating the
    store): on SQLite the lock file beside the database names its pid (written once the ``flock`` is
    taken), on PostgreSQL the store's database has the build lock's advisory key granted (only ``proc``
    works on that database). A bigint advisory key shows in ``pg_locks`` as its high and low 32 bits."""
    url = sa.engine.make_url(db_url)
    if url.get_backend_name() == "sqlite":
        lock = Path(f"{url.database}.{BUILD_LOCK}.lock")
        return lock.exists() and lock.read_text().strip() == str(proc.pid)
    key = advisory_key(BUILD_LOCK) & 0xFFFF_FFFF_FFFF_FFFF
    admin = sa.create_engine(PG_ADMIN_URL)
    try:
        with admin.connect() as c:
            return bool(
                c.execute(
                    sa.text(
                        "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
                        "WHERE l.locktype = 'advisory' AND l.granted AND d.datname = :db "
                        "AND l.classid::bigint = :hi AND l.objid::bigint = :lo"
                    ),
                    {"db": url.database, "hi": key >> 32, "lo": key & 0xFFFF_FFFF},
                ).scalar()
            )
    finally:
        admin.dispose()


@pytest.mark.slow
def test_two_builds_at_once_one_builds_the_other_exits_2(db_url, cli, small_raw_dir):
    """Two ``automonitor build`` processes on one store: the one holding the store-wide build lock builds,
    the other exits 2 naming the running build. Deterministic: the first process is stopped (SIGSTOP) as
    soon as it holds the lock, the second runs to its end meanwhile, then the first continues. A build of
    two small sources (``small_raw_dir``): the lock, not the data, is under test."""
    args = ["build", "--raw", str(small_raw_dir), "--seed", "0", "--json"]
    first, second = _popen(args, db_url), None
    try:
        deadline = time.time() + 120
        while not _holds_build_lock(first, db_url):
            assert first.poll() is None, first.communicate()[1][-2000:]  # it ended before we saw the lock
            assert time.time() < deadline, "the first build never took the build lock"
            time.sleep(0.01)
        first.send_signal(signal.SIGSTOP)
        second = _popen(args, db_url)
        _, loser = second.communicate(timeout=300)
    finally:
        first.send_signal(signal.SIGCONT)
        if second is not None and second.poll() is None:
            second.kill()
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err[-2000:]
    assert json.loads(out)["inserted"] > 0
    assert second.returncode == 2, loser[-2000:]
    assert "another build is running" in loser and "sqlalchemy" not in loser.lower() and "SELECT" not in loser
    # the store is the one build's result: building again changes nothing
    again = cli(args, db=db_url)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["unchanged"] is True


@pytest.mark.slow
def test_build_force_refuses_to_delete_a_run_with_a_live_lease(small_built_url, cli, small_raw_dir):
    """On a store built from ``small_raw_dir`` with seed 0 (two small sources: the refusal, not the data,
    is under test), a reseed that would delete a sample of a run whose runner process is alive is refused
    even with ``--force``; once that process is gone, ``--force`` deletes the run."""
    from automonitor.data.build import plan_build

    db_url = small_built_url
    raw = ["--raw", str(small_raw_dir)]
    eng = init_db(get_engine(db_url, fresh=True))
    with eng.connect() as c:
        in_test = set(c.execute(sa.select(Sample.id).where(Sample.split == "test")).scalars())
    leaving = sorted(in_test - {r["id"] for r in plan_build(small_raw_dir, 1, hard=False).rows})[0]
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
        res = cli(["build", *raw, "--seed", "1", "--force"], db=db_url)
        assert res.returncode == 2, res.stderr[-2000:]
        assert "executing now" in res.stderr and "run-live" in res.stderr
        assert _snapshot(eng) == before
        with eng.connect() as c:
            assert c.execute(sa.select(Run.status).where(Run.id == "run-live")).scalar() == "running"
        holder.kill()
        holder.wait(10)  # the runner is gone: its lease is dead and --force may delete the run
        res = cli(["build", *raw, "--seed", "1", "--force", "--json"], db=db_url)
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
