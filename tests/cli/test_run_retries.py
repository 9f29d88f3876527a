"""``automonitor run --retries N`` (fresh-user trial, issue 41: retries could not be turned off from
``run --help``): against the real loopback OpenAI-compatible server, ``--retries 0`` sends a request that
fails transiently exactly once (an ``error`` outcome, no back-off), the default retries it; bad values and
a disagreeing ``--param max_attempts`` exit 2."""

from __future__ import annotations

import json

from automonitor.cli.runs import DEFAULT_RETRIES
from automonitor.runs.runner.retries import DEFAULT_MAX_ATTEMPTS
from helpers import run_cli
from servers.data import add_custom
from servers.openai_fault import OpenAIFaultServer
from store import get_engine, init_db

FAST = ["--param", "backoff_initial=0.01", "--param", "backoff_max=0.05", "--param", "timeout=10"]


def _run(srv, db: str, *extra: str):
    args = ["run", "--monitor", "openai:test-model", "--template", "direct", "--base-url", srv.base_url]
    return run_cli([*args, "--no-controls", "--json", "--quiet", *FAST, *extra], db=db)


def test_retries_zero_tries_a_failing_request_once(sqlite_url, sqlite_engine):
    # sqlite_engine: sqlite_url is a copy of the run's migrated empty store (the migrations are not under test)
    init_db(get_engine(sqlite_url))
    add_custom(get_engine(sqlite_url), [("[scenario:500,ok] a", "bad a", "good a")])
    with OpenAIFaultServer() as srv:
        off = _run(srv, sqlite_url, "--retries", "0")
        assert off.returncode in (0, 1), off.stderr
        once = srv.stats()
        srv.reset()
        default = _run(srv, sqlite_url)
        assert default.returncode == 0, default.stderr
        again = srv.stats()
    # two samples (both sides of the pair), each failed once with 500 and was not sent again
    assert once["total"] == 2 and set(once["calls"].values()) == {1} and once["faults"] == {"500": 2}
    doc = json.loads(off.stdout)
    assert doc["counts"]["error"] == 2 and doc["api_calls"] == 2
    # without --retries the runner retries: the second attempt of each sample answers
    assert again["total"] == 4 and set(again["calls"].values()) == {2}
    assert json.loads(default.stdout)["counts"]["error"] == 0


def test_retries_default_and_bad_values(sqlite_url, sqlite_engine):
    # sqlite_engine: sqlite_url is a copy of the run's migrated empty store (the migrations are not under test)
    assert DEFAULT_RETRIES == DEFAULT_MAX_ATTEMPTS - 1  # the help text's default is the runner's
    init_db(get_engine(sqlite_url))
    add_custom(get_engine(sqlite_url), [("plain a", "os.system('a')", "good a")])
    with OpenAIFaultServer() as srv:
        neg = _run(srv, sqlite_url, "--retries", "-1")
        clash = _run(srv, sqlite_url, "--retries", "1", "--param", "max_attempts=5")
        agree = _run(srv, sqlite_url, "--retries", "2", "--param", "max_attempts=3")
        sent = srv.stats()["total"]
    assert neg.returncode == 2 and "--retries" in neg.stderr
    assert clash.returncode == 2 and "disagree" in clash.stderr
    assert agree.returncode == 0, agree.stderr
    assert sent == 2  # only the run that agreed sent anything
    resume = run_cli(["run", "--resume", "nope", "--retries", "0"], db=sqlite_url)
    assert resume.returncode == 2 and "new run" in resume.stderr
    help_text = run_cli(["run", "--help"], db=sqlite_url, env={"COLUMNS": "400"}).stdout
    assert "--retries" in help_text and "0 sends each request once" in help_text, help_text
