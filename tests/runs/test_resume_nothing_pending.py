"""A ``--resume`` of a run with no sample pending sends nothing and leaves the run as it is (fresh-user trial 44:
a second ``--resume``). CONTRACT: a command that did its job exits 0, a run that did not reach its judge exits 1
with status ``failed``. A finished run resumed (twice) stays ``finished``, exit 0, saying there is nothing to
resume; a run that ended ``failed`` with every sample ``error`` (its judge gave no answer) stays ``failed``, exit
1, its line naming ``--retry-errors`` (before, a bare ``--resume`` that sent nothing turned it ``finished``).
Real CLI, a real OpenAI-compatible server (``servers.openai_fault``), SQLite and PostgreSQL."""

from __future__ import annotations

import json

from automonitor.runs import runner
from helpers import run_cli
from servers.data import add_pairs
from servers.openai_fault import OpenAIFaultServer

FAST = ["--param", "backoff_initial=0.01", "--param", "backoff_max=0.02", "--param", "max_attempts=2"]


def _new_run(db_url: str, url: str) -> tuple[int, str]:
    args = ["run", "--monitor", "openai:m", "--template", "direct", "--base-url", url, "--quiet", "--json", *FAST]
    r = run_cli(args, db=db_url, env={"OPENAI_API_KEY": None})
    return r.returncode, json.loads(r.stdout)["run_id"]


def test_resuming_a_finished_run_twice_sends_nothing_and_exits_0(db_url, engine):
    add_pairs(engine, 2)
    with OpenAIFaultServer() as srv:
        code, rid = _new_run(db_url, srv.base_url)
        assert code == 0
        before = runner.run_info(engine, rid)
        for _ in range(2):
            r = run_cli(["run", "--resume", rid, "--json"], db=db_url, env={"OPENAI_API_KEY": None})
            assert r.returncode == 0, r.stderr
            assert f"run {rid} is finished with no sample pending: nothing to resume, nothing sent" in r.stderr
            doc = json.loads(r.stdout)
            assert doc["api_calls_this_process"] == 0 and doc["api_calls"] == 4  # the first run's, the whole run's
        line = run_cli(["run", "--resume", rid], db=db_url, env={"OPENAI_API_KEY": None}).stdout
        assert "api_calls=4 cache_hits=0 (this invocation: api_calls=0 cache_hits=0)" in line, line
        assert srv.stats()["total"] == 4  # the first run's calls only
    after = runner.run_info(engine, rid)
    assert after["status"] == "finished" and after["counts"] == before["counts"]
    assert after["finished_at"] == before["finished_at"]


def test_resuming_a_run_that_never_reached_its_judge_keeps_it_failed(db_url, engine):
    add_pairs(engine, 2)
    with OpenAIFaultServer() as srv:
        srv.force = "500"
        code, rid = _new_run(db_url, srv.base_url)
        assert code == 1
        failed = runner.run_info(engine, rid)
        assert failed["status"] == "failed" and failed["counts"]["error"] == 4 and failed["counts"]["pending"] == 0
        srv.force = None
        r = run_cli(["run", "--resume", rid], db=db_url, env={"OPENAI_API_KEY": None})
        assert srv.stats()["total"] == 8  # the first run's calls only: nothing sent
    assert r.returncode == 1, r.stderr
    assert f"run {rid} is failed with no sample pending: nothing to resume, nothing sent" in r.stderr
    after = runner.run_info(engine, rid)
    assert after["status"] == "failed" and after["error"] == failed["error"], after
    assert f"run {rid} failed: {failed['error']}" in r.stderr and f"--retry-errors {rid}" in failed["error"]
