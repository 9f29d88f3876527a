"""The runner's own parameters (:data:`automonitor.runs.params.RUNNER_PARAMS`) are declared once with type and
range (:class:`automonitor.runs.params.RunnerSettings`) and validated when a run is created or estimated: any
value is either accepted and normalised to the declared type within range, or an ``InputError`` naming the
field, never another exception (fresh-user trial: ``repeat=2.5`` ran 2 repeats, ``max_attempts=abc`` failed
late with a bare ``ValueError``, ``max_attempts=0``, negative or NaN/Infinity back-offs were accepted)."""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.errors import InputError
from automonitor.runs import runner
from automonitor.runs.params import MAX_REPEAT, RUNNER_PARAMS, normalised_params, runner_settings
from automonitor.runs.runner.retries import RetryPolicy
from helpers import declared_ok, param_values
from servers.data import add_pairs
from store import session_scope
from store.models import Run

#: (kind, least, most, least is exclusive) per parameter, written out here (not read from the model)
DECLARED = {
    "max_attempts": ("whole", 1, None, False),
    "backoff_initial": ("seconds", 0.0, None, False),
    "backoff_max": ("seconds", 0.0, None, False),
    "retry_after_max": ("seconds", 0.0, None, False),
    "timeout": ("seconds", 0.0, None, True),
    "fewshot_k": ("whole", 1, None, False),
    "fewshot_seed": ("whole", None, None, False),
    "repeat": ("whole", 1, MAX_REPEAT, False),
}

json_values = param_values()


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(RUNNER_PARAMS)), value=json_values)
def test_each_runner_parameter_is_normalised_within_range_or_refused_naming_it(name, value):
    try:
        out = normalised_params({name: value, "other": value})
    except InputError as exc:
        assert exc.field == name, (name, value, exc.field)
        assert f"--param {name}" in exc.message
        assert not declared_ok(DECLARED, name, value), (name, value, exc.message)
        return
    assert declared_ok(DECLARED, name, value), (name, value, out)
    got = out[name]
    kind, least, most, exclusive = DECLARED[name]
    assert out["other"] is value  # other keys are left as given
    if kind == "whole":
        assert type(got) is int and got == int(value.strip() if isinstance(value, str) else value)
    else:
        assert type(got) is float and math.isfinite(got)
        assert got == float(value.strip() if isinstance(value, str) else value)
    assert least is None or (got > least if exclusive else got >= least)
    assert most is None or got <= most
    assert getattr(runner_settings({name: value}), name) == got


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("repeat", 2.5),
        ("repeat", "2.5"),
        ("repeat", 0),
        ("repeat", MAX_REPEAT + 1),
        ("max_attempts", "abc"),
        ("max_attempts", 2.5),
        ("max_attempts", 0),
        ("max_attempts", True),
        ("max_attempts", 3.0),
        ("backoff_initial", -1),
        ("backoff_max", float("nan")),
        ("retry_after_max", float("inf")),
        ("timeout", 0),
        ("timeout", float("inf")),
        ("timeout", "abc"),
        ("fewshot_k", 0),
    ],
)
def test_create_and_estimate_refuse_a_bad_runner_parameter_naming_it_and_store_nothing(sqlite_engine, name, bad):
    add_pairs(sqlite_engine, 4, train_pairs=8)
    with pytest.raises(InputError) as exc:
        runner.create_run(sqlite_engine, "openai:gpt-4o-mini", "direct-fewshot", params={name: bad})
    assert exc.value.field == name
    with pytest.raises(InputError) as exc:
        runner.estimate_run(sqlite_engine, "openai:gpt-4o-mini", "direct-fewshot", params={name: bad})
    assert exc.value.field == name
    with sqlite_engine.connect() as c:
        assert c.execute(sa.text("select count(*) from run")).scalar() == 0
        assert c.execute(sa.text("select count(*) from prediction")).scalar() == 0


def test_created_run_stores_the_normalised_values_and_the_policy_reads_them(sqlite_engine):
    add_pairs(sqlite_engine, 4, train_pairs=8)
    given = {"max_attempts": "3", "backoff_initial": "0.25", "backoff_max": 2, "repeat": "2", "fewshot_k": "3"}
    rid = runner.create_run(sqlite_engine, "rules", "direct-fewshot", params=given)
    with session_scope(sqlite_engine) as s:
        params = s.get(Run, rid).params
    judge = params["judge"]
    assert judge["max_attempts"] == 3 and type(judge["max_attempts"]) is int
    assert judge["backoff_initial"] == 0.25 and judge["backoff_max"] == 2.0 and type(judge["backoff_max"]) is float
    assert judge["repeat"] == 2 and judge["fewshot_k"] == 3 and len(params["fewshot"]) == 3
    policy = RetryPolicy.from_params(judge)
    assert (policy.max_attempts, policy.backoff_initial, policy.backoff_max) == (3, 0.25, 2.0)
    assert policy.retry_after_max == 120.0  # the default, not stored


def test_policy_refuses_a_bad_value_with_input_error_not_value_error():
    with pytest.raises(InputError) as exc:
        RetryPolicy.from_params({"max_attempts": "abc"})
    assert exc.value.field == "max_attempts"


def test_an_old_run_with_a_value_now_refused_stays_readable_and_resume_refuses_it_cleanly(sqlite_engine):
    """A run stored before the rule with ``max_attempts: 2.5`` in its parameters: its info and listing read
    as before; ``execute_run`` (what ``--resume`` calls) raises an InputError naming the field and the run,
    and leaves the run pending with nothing judged (no lease taken)."""
    add_pairs(sqlite_engine, 2)
    rid = runner.create_run(sqlite_engine, "rules", "direct")
    with session_scope(sqlite_engine) as s:
        run = s.get(Run, rid)
        run.params = {**run.params, "judge": {"max_attempts": 2.5, "timeout": "x"}}
    with pytest.raises(InputError) as exc:
        runner.execute_run(sqlite_engine, rid)
    assert exc.value.field == "max_attempts" and rid in exc.value.message
    info = runner.run_info(sqlite_engine, rid)
    assert info["status"] == "pending" and info["counts"]["pending"] == info["n"]
    with session_scope(sqlite_engine) as s:
        assert "lease" not in (s.get(Run, rid).params or {})
    from store.queries.run_list import list_runs

    with session_scope(sqlite_engine) as s:
        assert any(r["run_id"] == rid for r in list_runs(s))
