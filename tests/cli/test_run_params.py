"""``automonitor run --param`` for the runner's own parameters (``max_attempts``, ``backoff_*``,
``retry_after_max``, ``timeout``, ``fewshot_*``, ``repeat``): a value of the wrong type or out of range exits 2
naming the field and creates nothing (fresh-user trial: ``repeat=2.5`` ran 2 repeats, ``max_attempts=abc``
ended the run with a bare ``ValueError``, exit 1, after it was created); ``--resume`` of a run stored with such
a value exits 2 naming it and leaves the run as it was."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from automonitor.runs import runner
from helpers import run_cli
from servers.data import add_custom
from store import session_scope
from store.models import Run

ARGS = ["run", "--monitor", "rules", "--template", "direct", "--no-controls", "--json"]


def _store(engine):
    """One pair in ``engine``'s store (``sqlite_engine``: a copy of the run's migrated empty store, so the
    test's ``sqlite_url`` is that store; the migrations are not under test here)."""
    add_custom(engine, [("plain a", "os.system('a')", "good a")])
    return engine


def _n_runs(engine) -> int:
    with engine.connect() as c:
        return int(c.execute(sa.text("select count(*) from run")).scalar() or 0)


@pytest.mark.parametrize(
    ("param", "field"),
    [
        ("repeat=2.5", "repeat"),
        ('repeat="2.5"', "repeat"),
        ("max_attempts=abc", "max_attempts"),
        ("max_attempts=0", "max_attempts"),
        ("max_attempts=true", "max_attempts"),
        ("backoff_initial=-1", "backoff_initial"),
        ("backoff_max=NaN", "backoff_max"),
        ("retry_after_max=Infinity", "retry_after_max"),
        ("timeout=0", "timeout"),
        ("timeout=Infinity", "timeout"),
        ("fewshot_seed=1.5", "fewshot_seed"),
    ],
)
def test_a_bad_runner_parameter_exits_2_naming_it_and_creates_no_run(sqlite_url, sqlite_engine, param, field):
    engine = _store(sqlite_engine)
    res = run_cli([*ARGS, "--param", param], db=sqlite_url)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert f"--param {field}" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert _n_runs(engine) == 0


def test_whole_numbers_as_strings_are_accepted_and_stored_normalised(sqlite_url, sqlite_engine):
    engine = _store(sqlite_engine)
    res = run_cli([*ARGS, "--param", 'repeat="2"', "--param", "max_attempts=3", "--retries", "2"], db=sqlite_url)
    assert res.returncode == 0, res.stderr
    with session_scope(engine) as s:
        judge = s.get(Run, json.loads(res.stdout)["run_id"]).params["judge"]
    assert judge["repeat"] == 2 and judge["max_attempts"] == 3


def test_retries_with_a_string_max_attempts_that_agrees_or_is_bad(sqlite_url, sqlite_engine):
    engine = _store(sqlite_engine)
    agree = run_cli([*ARGS, "--retries", "2", "--param", 'max_attempts="3"'], db=sqlite_url)
    assert agree.returncode == 0, agree.stderr  # "3" and --retries 2 say the same (before: "disagree")
    bad = run_cli([*ARGS, "--retries", "2", "--param", "max_attempts=2.5"], db=sqlite_url)
    assert bad.returncode == 2 and "--param max_attempts" in bad.stderr, bad.stderr
    assert _n_runs(engine) == 1


def test_resume_of_a_run_stored_with_a_value_now_refused_exits_2_and_keeps_it(sqlite_url, sqlite_engine):
    engine = _store(sqlite_engine)
    rid = runner.create_run(engine, "rules", "direct", controls=False)
    with session_scope(engine) as s:
        run = s.get(Run, rid)
        run.params = {**run.params, "judge": {"max_attempts": "abc"}}
    res = run_cli(["run", "--resume", rid], db=sqlite_url)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "max_attempts" in res.stderr and rid in res.stderr and "Traceback" not in res.stderr
    listing = run_cli(["runs", "--json"], db=sqlite_url)
    assert listing.returncode == 0 and rid in listing.stdout, listing.stderr
    report = run_cli(["report", "--run", rid, "--json"], db=sqlite_url)
    assert report.returncode in (0, 1) and "Traceback" not in report.stderr, report.stderr
    assert runner.run_info(engine, rid)["status"] == "pending"
