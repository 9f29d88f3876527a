"""A generation run holds a pid lease: while its process lives a second ``generate resume``
is refused; after ``kill -9`` the run is not stuck ``running`` for good: ``generate resume`` takes it
over and finishes it without losing or duplicating items (both databases, two real processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from helpers import RAW, run_cli, sycophancy_script


@pytest.fixture
def slow_scripted():
    from servers.scripted_generator import ScriptedGenerator

    class Slow(ScriptedGenerator):
        delay = 0.5  # seconds per answer while the first executor runs (it is killed after 2 of 6 items)

        def handle(self, h, path, body):
            time.sleep(self.delay)
            return super().handle(h, path, body)

    srv = Slow(sycophancy_script(6)).start()
    yield srv
    srv.stop()


def _run_row(eng):
    from sqlmodel import select

    from store import session_scope
    from store.models import Run

    with session_scope(eng) as s:
        run = s.exec(select(Run).where(Run.kind == "generation")).first()
        return None if run is None else (run.id, run.status, dict(run.params or {}))


@pytest.mark.slow
def test_generation_run_lease_refuses_a_second_executor_and_survives_kill_9(engine, db_url, slow_scripted):
    eng = engine
    args = [
        "generate",
        "sycophancy",
        "--generator",
        "openai:scripted-gen",
        "--base-url",
        slow_scripted.base_url,
        "--source",
        "bct_truthfulqa_cues",
        "--limit",
        "6",
        "--concurrency",
        "1",
        "--json",
    ]
    env = {**os.environ, "AUTOMONITOR_DB": db_url, "AUTOMONITOR_RAW": str(RAW)}
    exe = os.path.join(os.path.dirname(sys.executable), "automonitor")
    first = subprocess.Popen([exe, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 60
        row = None
        while time.time() < deadline:
            row = _run_row(eng)
            if row and row[1] == "running" and row[2].get("progress", {}).get("done", 0) >= 2:
                break
            time.sleep(0.1)
        assert row and row[1] == "running", row
        run_id, _, params = row
        assert params["lease"]["pid"] == first.pid
        # a live executor: a second one is refused
        r = run_cli(["generate", "resume", run_id, "--json"], db=db_url)
        # exit 1: a run busy in another process is no bad input (CONTRACT: 2 is for bad usage or input)
        assert r.returncode == 1 and f"being executed by another process (pid {first.pid} on " in r.stderr, r.stderr
        assert "`automonitor generate resume` cannot execute it" in r.stderr, r.stderr
        assert f"automonitor runs --cancel {run_id}" in r.stderr and "then:" not in r.stderr, r.stderr
    finally:
        first.kill()  # SIGKILL: no cleanup at all
        first.wait()
    run_id, status, params = _run_row(eng)
    assert status == "running" and params["lease"]["pid"] == first.pid
    done_before = params["progress"]["done"]
    assert 2 <= done_before < 6
    slow_scripted.delay = 0  # the resumed run needs no time to be caught in
    r = run_cli(["generate", "resume", run_id, "--json"], db=db_url)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["prompts"], doc["kept"], doc["candidates_added"]) == (6, 3, 3), doc
    run_id, status, params = _run_row(eng)
    assert status == "finished" and "lease" not in params
    assert params["took_over"]["pid"] == first.pid and params["took_over"]["at_item"] == done_before
    ids = [x["item_id"] for x in params["items"]]
    assert len(ids) == 6 and len(set(ids)) == 6  # every item once, none lost
    with eng.connect() as c:
        n = c.execute(sa.text("SELECT count(*) FROM sample WHERE pair_id LIKE :p"), {"p": f"gen:{run_id}:%"}).scalar()
    assert n == 6  # 3 pairs, none twice
    # a finished run is not resumed again
    r = run_cli(["generate", "resume", run_id], db=db_url)
    assert r.returncode == 2 and "finished" in r.stderr
