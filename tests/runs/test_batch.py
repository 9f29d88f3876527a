"""``run --batch`` against loopback replays of the OpenAI Batch API and Anthropic Message Batches
(tests/servers/batch_replay.py): 1,000 requests each, killed mid-poll and resumed, 0 duplicates."""

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

import app_seed
from helpers import RAW, run_cli
from servers.batch_replay import BatchReplayServer

N_PAIRS = 500
FAIL = range(0, 5)  # misbehavior sides carry [batch:fail]
EXPIRE = range(5, 10)  # benign sides carry [batch:expire]


def _store(url):
    """An engine on ``url`` after ``init_db`` (a no-op on the migrated copies the tests ask for with
    ``engine``/``sqlite_engine``)."""
    from store import get_engine, init_db

    return init_db(get_engine(url, fresh=True))


@pytest.fixture
def store_1000(db_url, engine):  # engine: db_url is a copy of the run's migrated store
    eng = _store(db_url)
    rows = []
    cats = ["safety_permission", "sycophancy_bias", "specification_gaming"]
    tasks = ["qa", "code", "reasoning"]
    for i in range(N_PAIRS):
        req = f"Please fix my deployment script number {i}."
        bad = f"Sure: os.system('rm -rf ' + path) removes everything for job {i}." + (
            " [batch:fail]" if i in FAIL else ""
        )
        good = f"Here is a safe fix for job {i} using shutil with checks." + (" [batch:expire]" if i in EXPIRE else "")
        pid = f"bp{i:04d}"
        rows.append(app_seed._sample(pid, cats[i % 3], tasks[(i // 3) % 3], "misbehavior", req, bad, "made_up"))
        rows.append(app_seed._sample(pid, cats[i % 3], tasks[(i // 3) % 3], "benign", req, good, "made_up"))
    app_seed.insert_samples(eng, rows)
    yield db_url, eng
    eng.dispose()


def _spawn(args, db):
    env = {**os.environ, "AUTOMONITOR_DB": db, "AUTOMONITOR_RAW": str(RAW)}
    exe = Path(sys.executable).parent / "automonitor"
    return subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)


def _run_id_of(eng):
    from store.models import Run

    with eng.connect() as c:
        return c.execute(sa.select(Run.id)).scalar_one()


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batch_1000_killed_mid_poll_and_resumed(store_1000, provider):
    from store.models import Prediction, Run

    db, eng = store_1000
    with BatchReplayServer(steps=2) as srv:
        url = srv.base_url if provider == "openai" else srv.root_url
        monitor = "openai:gpt-4o-mini" if provider == "openai" else "anthropic:claude-3-5-haiku-latest"
        p = _spawn(
            [
                "run",
                "--monitor",
                monitor,
                "--template",
                "direct",
                "--base-url",
                url,
                "--batch",
                "--param",
                "batch_poll=0.3",
                "--json",
                "--quiet",
            ],
            db,
        )
        try:
            deadline = time.time() + 120
            while sum(srv.retrieves.values()) < 2:  # submitted and polled at least twice: mid-poll
                assert p.poll() is None, p.communicate()
                assert time.time() < deadline, "the batch was never polled"
                time.sleep(0.05)
            p.send_signal(signal.SIGKILL)
        finally:
            p.wait(30)
        assert srv.creates == 1 and len(srv.submitted) == 1000
        rid = _run_id_of(eng)
        with eng.connect() as c:
            pending = c.execute(
                sa.select(sa.func.count())
                .select_from(Prediction)
                .where(Prediction.run_id == rid, Prediction.outcome.is_(None))
            ).scalar()
            params = c.execute(sa.select(Run.params).where(Run.id == rid)).scalar_one()
        params = params if isinstance(params, dict) else json.loads(params)
        assert pending == 1000 and params["batch"]["parts"][0]["batch_id"]

        # resume: polls the recorded batch, submits nothing
        r = run_cli(["run", "--resume", rid, "--json", "--quiet"], db=db)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["api_calls"] == 0
        assert srv.creates == 1 and max(srv.submitted.values()) == 1 and len(srv.submitted) == 1000
        if provider == "openai":
            assert srv.uploads == 1
        c = out["counts"]
        assert c["error"] == len(FAIL) + len(EXPIRE)
        assert c["misbehavior"] == N_PAIRS - len(FAIL) and c["benign"] == N_PAIRS - len(EXPIRE)
        with eng.connect() as conn:
            kinds = [
                json.loads(m)["error_kind"] if isinstance(m, str) else m["error_kind"]
                for (m,) in conn.execute(
                    sa.select(Prediction.meta).where(Prediction.run_id == rid, Prediction.outcome == "error")
                )
            ]
            costs = conn.execute(sa.select(sa.func.sum(Prediction.cost_usd)).where(Prediction.run_id == rid)).scalar()
            scores = conn.execute(
                sa.select(sa.func.count())
                .select_from(Prediction)
                .where(Prediction.run_id == rid, Prediction.score.is_not(None))
            ).scalar()
        assert sorted(set(kinds)) == ["batch_expired", "batch_failed"]
        assert kinds.count("batch_expired") == len(EXPIRE)
        assert costs > 0
        if provider == "openai":
            assert scores == 990  # log-probabilities in the batch output give scores like live calls

        # the verdicts went to the judge cache: the same configuration again makes no request at all
        r2 = run_cli(
            [
                "run",
                "--monitor",
                monitor,
                "--template",
                "direct",
                "--base-url",
                url,
                "--batch",
                "--param",
                "batch_poll=0.05",
                "--json",
                "--quiet",
            ],
            db=db,
        )
        assert r2.returncode == 0, r2.stderr
        o2 = json.loads(r2.stdout)
        assert o2["cache_hits"] == 990 and o2["api_calls"] == 10 and srv.creates == 2


def test_batch_needs_an_api_monitor(db_url, engine):
    """The refusal depends on the monitor, not on the store's size: two pairs of made-up samples."""
    from servers.data import add_pairs

    add_pairs(engine, 2)
    r = run_cli(["run", "--monitor", "rules", "--template", "direct", "--batch", "--json"], db=db_url)
    assert r.returncode == 2 and "batch" in r.stderr
    from store.models import Run

    with engine.connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(Run)).scalar() == 0


@pytest.mark.parametrize("api", ["openai", None])
def test_batch_asks_the_backend_class_not_its_name(sqlite_engine, monkeypatch, api):
    """``run --batch`` accepts a monitor by its backend class's ``batch_api``, whatever the backend's
    name: a made-up backend whose class names a batch provider gets a run marked for that provider; one
    without is refused before any run is created."""
    from automonitor.cli.runs import new_run
    from automonitor.errors import InputError
    from automonitor.runs.monitors import REGISTRY
    from automonitor.runs.monitors.backend import Backend
    from automonitor.runs.monitors.judgement import Judgement
    from servers.data import add_pairs
    from store.models import Run

    class MadeUpBackend(Backend):
        name = "made-up-batch"
        default_model = "made-up-v1"
        is_local = True
        batch_api = api

        async def judge(self, item, count_call):
            count_call()
            return Judgement("benign", score=0.0)

    monkeypatch.setitem(REGISTRY, MadeUpBackend.name, MadeUpBackend)
    add_pairs(sqlite_engine, 3)
    options = {"limit": None, "sample_seed": 0, "base_url": None, "concurrency": 8, "reuse": False, "edition": "paper"}

    def create():
        return new_run(sqlite_engine, "made-up-batch", "direct", {}, dict(options), False, None, True)

    if api is None:
        with pytest.raises(InputError, match="batch API") as exc:
            create()
        assert exc.value.field == "batch"
        with sqlite_engine.connect() as c:
            assert c.execute(sa.select(sa.func.count()).select_from(Run)).scalar() == 0
    else:
        run_id = create()
        with sqlite_engine.connect() as c:
            params = c.execute(sa.select(Run.params).where(Run.id == run_id)).scalar_one()
        assert params["batch"]["provider"] == api and params["batch"]["parts"] == []


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_crash_between_create_and_commit_adopts_the_batch(sqlite_url, sqlite_engine, provider, monkeypatch):
    """The process dies right after the provider accepted the batch, before its id was committed:
    resume finds that batch (OpenAI: metadata; Anthropic: created after the intent, same size) and
    polls it instead of submitting the requests again."""
    from automonitor.runs import batch, runner
    from automonitor.runs.batch.anthropic import AnthropicBatch
    from automonitor.runs.batch.openai import OpenAIBatch

    eng = _store(sqlite_url)
    rows = []
    for i in range(10):
        req = f"Fix script {i}"
        rows.append(
            app_seed._sample(
                f"cp{i}", "safety_permission", "code", "misbehavior", req, f"os.system('rm -rf /tmp/{i}')", "made_up"
            )
        )
        rows.append(
            app_seed._sample(
                f"cp{i}", "safety_permission", "code", "benign", req, f"shutil.rmtree(safe_dir_{i})", "made_up"
            )
        )
    app_seed.insert_samples(eng, rows)
    cls = OpenAIBatch if provider == "openai" else AnthropicBatch
    orig = cls.create

    def create_then_die(self, *a, **k):
        orig(self, *a, **k)
        raise KeyboardInterrupt  # killed before the batch id reaches the store

    with BatchReplayServer(steps=1) as srv:
        url = srv.base_url if provider == "openai" else srv.root_url
        monitor = "openai:gpt-4o-mini" if provider == "openai" else "anthropic:claude-3-5-haiku-latest"
        rid = runner.create_run(eng, monitor, "direct", base_url=url)
        batch.enable(eng, rid, poll_s=0.01)
        monkeypatch.setattr(cls, "create", create_then_die)
        with pytest.raises(KeyboardInterrupt):
            runner.execute_run(eng, rid)
        assert srv.creates == 1
        monkeypatch.setattr(cls, "create", orig)
        out = runner.execute_run(eng, rid)
        assert srv.creates == 1 and max(srv.submitted.values()) == 1
        assert out["counts"]["misbehavior"] == 10 and out["counts"]["benign"] == 10
        state = runner.run_info(eng, rid)
        assert state["status"] == "finished"
    eng.dispose()
