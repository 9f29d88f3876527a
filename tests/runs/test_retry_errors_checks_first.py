"""``run --retry-errors RUN_ID`` validates what the resume will read before it changes anything: a run whose
stored parameters the rule refuses (written before the rule or straight into the store: ``max_attempts: 3.0``,
``fewshot_k: "abc"``, a batch run's ``size: "abc"``) or whose template changed exits 2 naming the field, and
its rows are exactly as they were (fresh-user trial: the error samples were made pending first, then the resume refused, leaving the
run's errors erased into history and the run pending)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automonitor.errors import InputError
from automonitor.runs import runner
from automonitor.runs.params import RUNNER_PARAMS, runner_settings
from helpers import param_values, pending_batch_run, run_cli
from servers.data import add_pairs
from store import session_scope
from store.models import Run

NOWHERE = "http://127.0.0.1:9/v1"  # a loopback port nothing listens on: never contacted here


def _snapshot(engine, rid: str) -> tuple:
    """Every column of the run's row and of its predictions (by id), and the judge cache's size."""
    with engine.connect() as c:
        run = c.execute(sa.text("select * from run where id = :r"), {"r": rid}).mappings().one()
        preds = c.execute(sa.text("select * from prediction where run_id = :r order by id"), {"r": rid}).all()
        cache = c.execute(sa.text("select count(*) from cache_entry")).scalar()
    return dict(run), [tuple(p) for p in preds], cache


def _with_errors(engine, rid: str, judge: dict | None = None, batch: dict | None = None) -> None:
    """Mark the run's first two predictions ``error`` (as a judge's transport failure would) and, when given,
    overwrite its stored judge parameters or batch state with ``judge``/``batch`` (straight into the store)."""
    with session_scope(engine) as s:
        ids = s.execute(sa.text("select id from prediction where run_id = :r order by id"), {"r": rid}).scalars()
        first = list(ids)[:2]
        s.execute(
            sa.text("update prediction set outcome = 'error', reason = 'connection refused' where id in (:a, :b)"),
            {"a": first[0], "b": first[1]},
        )
        run = s.get(Run, rid)
        params = dict(run.params)
        if judge is not None:
            params["judge"] = {**params.get("judge", {}), **judge}
        if batch is not None:
            params["batch"] = {**params["batch"], **batch}
        run.params = params


def _finished_rules_run(engine) -> str:
    rid = runner.create_run(engine, "rules", "direct-fewshot")
    runner.execute_run(engine, rid)
    return rid


@pytest.mark.parametrize(
    ("name", "bad"), [("max_attempts", 3.0), ("fewshot_k", "abc"), ("repeat", 2.5), ("timeout", "x")]
)
def test_retry_errors_refuses_a_stored_parameter_and_changes_nothing(db_url, engine, name, bad):
    """Fails on the main before this rule: the two error predictions were pending (their attempt moved into
    ``meta.history``) when the resume refused the parameter."""
    add_pairs(engine, 3, train_pairs=8)
    rid = _finished_rules_run(engine)
    _with_errors(engine, rid, judge={name: bad})
    before = _snapshot(engine, rid)
    r = run_cli(["run", "--retry-errors", rid, "--json"], db=db_url)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert f"--param {name}" in r.stderr, r.stderr
    assert rid in r.stderr and "re-sending" not in r.stderr
    assert _snapshot(engine, rid) == before
    with pytest.raises(InputError) as exc:
        runner.retry_errors(engine, rid)
    assert exc.value.field == name
    assert _snapshot(engine, rid) == before


def test_retry_errors_refuses_a_stored_batch_option_and_changes_nothing(db_url, engine, monkeypatch):
    rid = pending_batch_run(engine, monkeypatch)
    with session_scope(engine) as s:  # a finished batch run: its verdicts written by the collect step
        s.execute(sa.text("update prediction set outcome = 'benign' where run_id = :r"), {"r": rid})
        s.execute(sa.text("update run set status = 'finished' where id = :r"), {"r": rid})
    _with_errors(engine, rid, batch={"size": "abc"})
    before = _snapshot(engine, rid)
    r = run_cli(["run", "--retry-errors", rid], db=db_url, env={"OPENAI_API_KEY": "sk-test-not-a-key"})
    assert r.returncode == 2 and "--param batch_size" in r.stderr, r.stderr
    assert _snapshot(engine, rid) == before


def test_a_batch_run_resume_refuses_a_stored_runner_parameter_before_its_lease(engine, monkeypatch):
    """The batch path reads the stored runner parameters through the same rule as the live runner (before, it
    never checked them: ``max_attempts: 3.0`` went on to submit)."""
    rid = pending_batch_run(engine, monkeypatch, "judge", max_attempts=3.0)
    before = _snapshot(engine, rid)
    with pytest.raises(InputError) as exc:
        runner.execute_run(engine, rid)
    assert exc.value.field == "max_attempts" and rid in exc.value.message
    assert _snapshot(engine, rid) == before


def test_retry_errors_refuses_a_changed_template_and_changes_nothing(db_url, engine):
    """The template's file changed since the run was created (its recorded sha256 differs): the resume would
    refuse it, so the retry does, before it makes any sample pending."""
    add_pairs(engine, 3, train_pairs=8)
    rid = _finished_rules_run(engine)
    _with_errors(engine, rid)
    with session_scope(engine) as s:
        s.get(Run, rid).template_hash = "0" * 64
    before = _snapshot(engine, rid)
    r = run_cli(["run", "--retry-errors", rid], db=db_url)
    assert r.returncode == 2 and "changed since run" in r.stderr, r.stderr
    assert _snapshot(engine, rid) == before


def test_retry_errors_of_a_valid_run_still_resets_its_errors(db_url, engine):
    add_pairs(engine, 3, train_pairs=8)
    rid = _finished_rules_run(engine)
    _with_errors(engine, rid, judge={"max_attempts": "3"})  # a string of digits: accepted, as at create
    assert runner.retry_errors(engine, rid) == 2
    assert runner.run_info(engine, rid)["counts"]["pending"] == 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(RUNNER_PARAMS), value=param_values())
def test_retry_errors_changes_rows_only_when_the_resume_would_accept_them(sqlite_engine, name, value):
    """Any drawn stored value of any runner parameter: ``retry_errors`` either refuses naming it with every row
    unchanged, or (the value is one the resume accepts) makes exactly the two error samples pending."""
    from store.models import Prediction

    with sqlite_engine.connect() as c:
        rid = c.execute(sa.select(Run.id)).scalar()
    if rid is None:
        add_pairs(sqlite_engine, 3, train_pairs=8)
        rid = _finished_rules_run(sqlite_engine)
    with session_scope(sqlite_engine) as s:  # back to a finished run with valid parameters, no history
        s.execute(sa.update(Prediction).where(Prediction.run_id == rid).values(outcome="benign", meta={}))
        run = s.get(Run, rid)
        run.status = "finished"
        run.params = {**run.params, "judge": {k: v for k, v in run.params["judge"].items() if k not in RUNNER_PARAMS}}
    _with_errors(sqlite_engine, rid, judge={name: value})
    try:
        runner_settings({name: value})
        accepted = True
    except InputError:
        accepted = False
    before = _snapshot(sqlite_engine, rid)
    try:
        n = runner.retry_errors(sqlite_engine, rid)
    except InputError as exc:
        assert exc.field == name and not accepted, (name, value, exc.message)
        assert _snapshot(sqlite_engine, rid) == before
        return
    assert accepted, (name, value)
    assert n == 2 and runner.run_info(sqlite_engine, rid)["counts"]["pending"] == 2
