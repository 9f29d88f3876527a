"""The options of a batch run (``run --batch --param batch_poll=SECONDS --param batch_size=N``) are declared once
with type and range (:class:`automonitor.runs.params.BatchSettings`, like the runner's own parameters) and
validated before any row is written: any value is either accepted and normalised within range, or exit 2 naming
the option, never another exception (fresh-user trial: the CLI read them with bare ``float()``/``int()`` after the
run was created: ``batch_size=2.5`` ran parts of 2, ``batch_poll=abc`` left a run behind and exited 1,
``batch_poll=Infinity`` was accepted). The batch steps read the stored options through the same rule, and the
batch/repeat refusal looks at the effective repeat (``--repeat`` or ``--param repeat``)."""

from __future__ import annotations

import json
import math

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automonitor.errors import InputError
from automonitor.runs import runner
from automonitor.runs.params import BATCH_PARAMS, batch_settings
from helpers import declared_ok, param_values, pending_batch_run, run_cli
from servers.batch_replay import BatchReplayServer
from servers.data import add_pairs
from store import session_scope
from store.models import Run

#: (kind, least, most, least is exclusive) per option, written out here (not read from the model)
DECLARED = {
    "batch_poll": ("seconds", 0.0, 86_400.0, True),
    "batch_size": ("whole", 1, 100_000, False),  # Anthropic's documented limit, the largest of the providers
}
#: a loopback port nothing listens on: a run that got as far as executing fails at once, offline
NOWHERE = "http://127.0.0.1:9/v1"


def test_the_declared_options_are_the_batch_options():
    assert tuple(DECLARED) == BATCH_PARAMS


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(BATCH_PARAMS), value=param_values())
def test_each_batch_option_is_normalised_within_range_or_refused_naming_it(name, value):
    try:
        got = getattr(batch_settings({name: value, "other": value}), name)
    except InputError as exc:
        assert exc.field == name, (name, value, exc.field)
        assert f"--param {name}" in exc.message
        assert not declared_ok(DECLARED, name, value), (name, value, exc.message)
        return
    assert declared_ok(DECLARED, name, value), (name, value, got)
    kind, least, most, _exclusive = DECLARED[name]
    if kind == "whole":
        assert type(got) is int and got == int(value.strip() if isinstance(value, str) else value) and got >= least
    else:
        assert type(got) is float and math.isfinite(got) and least < got <= most
        assert got == float(value.strip() if isinstance(value, str) else value)


def _counts(engine) -> tuple[int, int]:
    with engine.connect() as c:
        return (
            c.execute(sa.text("select count(*) from run")).scalar(),
            c.execute(sa.text("select count(*) from prediction")).scalar(),
        )


def _batch_run(db_url: str, *extra: str):
    return run_cli(
        ["run", "--monitor", "openai:gpt-4o-mini", "--template", "direct", "--base-url", NOWHERE, "--batch"]
        + list(extra)
        + ["--json", "--quiet"],
        db=db_url,
        env={"OPENAI_API_KEY": "sk-test-not-a-key"},
    )


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ("batch_poll=0", "batch_poll"),
        ("batch_poll=-1", "batch_poll"),
        ("batch_poll=NaN", "batch_poll"),
        ("batch_poll=Infinity", "batch_poll"),
        ("batch_poll=1e400", "batch_poll"),
        ("batch_poll=abc", "batch_poll"),
        ("batch_poll=null", "batch_poll"),
        ("batch_size=2.5", "batch_size"),
        ('batch_size="2.5"', "batch_size"),
        ("batch_size=3.0", "batch_size"),
        ("batch_size=0", "batch_size"),
        ("batch_size=true", "batch_size"),
        ("batch_size=abc", "batch_size"),
        ("batch_size=50001", "batch_size"),  # over OpenAI's 50,000 requests per batch file
        ("batch_size=100001", "batch_size"),
        ("batch_size=1e9", "batch_size"),
    ],
)
def test_a_bad_batch_option_exits_2_naming_it_and_writes_nothing(db_url, engine, item, field):
    """Fails on the main before this rule: ``batch_poll=abc`` exited 1 (a bare ``ValueError``) after the run
    was created, ``batch_size=2.5``/``3.0``/``true`` and ``batch_poll=Infinity`` were accepted and the run
    executed (exit 1 against the dead port), ``batch_poll=NaN``/``0``... exited 2 naming ``batch`` with the
    run already written."""
    add_pairs(engine, 2)
    r = _batch_run(db_url, "--param", item)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert f"--param {field} must be" in r.stderr and "Traceback" not in r.stderr
    assert _counts(engine) == (0, 0)


@pytest.mark.parametrize("item", ["batch_size=5", "batch_poll=10"])
def test_a_batch_option_without_batch_exits_2_naming_it_and_writes_nothing(db_url, engine, item):
    """Fresh-user trial 44: ``run --param batch_size=5`` without ``--batch`` exited 0 with a live run and the
    option dropped unread (not in the run's parameters): an option that does nothing is refused, as an
    unknown ``--param`` key is (CONTRACT), before any row is written."""
    add_pairs(engine, 2)
    r = run_cli(
        ["run", "--monitor", "openai:gpt-4o-mini", "--template", "direct", "--base-url", NOWHERE, "--param", item]
        + ["--json", "--quiet"],
        db=db_url,
        env={"OPENAI_API_KEY": "sk-test-not-a-key"},
    )
    name = item.split("=")[0]
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert f"--param {name} is an option of run --batch" in r.stderr and "Traceback" not in r.stderr
    assert _counts(engine) == (0, 0)


@pytest.mark.parametrize(
    ("monitor", "size", "code"),
    [
        ("openai:gpt-4o-mini", 50_000, 0),  # accepted: the run executes (against the loopback batch replay)
        ("openai:gpt-4o-mini", 50_001, 2),
        ("anthropic:claude-3-5-haiku-latest", 100_000, 0),
        ("anthropic:claude-3-5-haiku-latest", 100_001, 2),
    ],
)
def test_batch_size_is_bounded_by_the_providers_documented_limit(db_url, engine, monitor, size, code):
    """Fresh-user trial 44: ``batch_size`` had no upper bound, so a part larger than the provider takes (OpenAI
    50,000 requests per batch file, Anthropic 100,000 per Message Batch) was submitted and refused there. Now
    the provider's limit is part of the option's rule: over it, exit 2 naming the option and the limit, nothing
    written; at it, the run is created and runs, its one part submitted to the provider (the loopback replay of
    its Batch API, tests/servers/batch_replay.py: a dead port instead cost the SDK's retry pauses, ~3.5 s)."""
    add_pairs(engine, 2)
    with BatchReplayServer(steps=1) as srv:
        url = srv.base_url if monitor.startswith("openai:") else srv.root_url
        r = run_cli(
            ["run", "--monitor", monitor, "--template", "direct", "--base-url", url, "--batch"]
            + ["--param", f"batch_size={size}", "--param", "batch_poll=0.01", "--json", "--quiet"],
            db=db_url,
            env={"OPENAI_API_KEY": "sk-test-not-a-key", "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key"},
        )
        creates = srv.creates
    assert r.returncode == code, (r.returncode, r.stderr)
    if code == 2:
        limit = size - 1
        assert f"--param batch_size must be a whole number >= 1 and <= {limit}" in r.stderr, r.stderr
        assert _counts(engine) == (0, 0) and creates == 0
    else:
        assert _counts(engine)[0] == 1 and "--param batch_size" not in r.stderr, r.stderr
        assert creates == 1 and json.loads(r.stdout)["n"] == 4  # the 4 samples in one part


def test_a_stored_batch_size_over_the_providers_limit_stops_the_resume(db_url, engine, monkeypatch):
    """A batch run whose stored part size is over its provider's limit (a run created before the bound, or
    written into the store): ``--resume`` exits 2 naming ``batch_size`` and the run before anything changes."""
    rid = pending_batch_run(engine, monkeypatch, "batch", size=60_000)
    r = run_cli(["run", "--resume", rid, "--json"], db=db_url, env={"OPENAI_API_KEY": "sk-test-not-a-key"})
    assert r.returncode == 2 and "--param batch_size" in r.stderr and "50000" in r.stderr and rid in r.stderr
    assert runner.run_info(engine, rid)["status"] == "pending"


def test_good_batch_options_are_stored_normalised(db_url, engine, monkeypatch):
    from automonitor.cli.runs import new_run

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    add_pairs(engine, 2)
    options = {"limit": None, "sample_seed": 0, "base_url": NOWHERE, "concurrency": 8, "reuse": False}
    params = {"batch_poll": "0.5", "batch_size": " 7 ", "timeout": 5}
    rid = new_run(engine, "openai:gpt-4o-mini", "direct", params, options, False, None, True)
    with session_scope(engine) as s:
        stored = s.get(Run, rid).params
    state = stored["batch"]
    assert state["poll_s"] == 0.5 and type(state["poll_s"]) is float
    assert state["size"] == 7 and type(state["size"]) is int
    assert "batch_poll" not in stored["judge"] and "batch_size" not in stored["judge"]  # not runner keys
    assert stored["judge"]["timeout"] == 5.0


@pytest.mark.parametrize(("key", "bad", "field"), [("size", "abc", "batch_size"), ("poll_s", 0, "batch_poll")])
def test_a_stored_batch_option_now_refused_stops_the_resume_before_anything_changes(
    db_url, engine, monkeypatch, key, bad, field
):
    """A batch run whose stored state holds a value the rule refuses (written straight into the store):
    ``--resume`` exits 2 naming the option and the run; the run stays pending, unleased, nothing judged.
    Fails on the main before this rule (``int("abc")`` raised a bare ``ValueError`` after the lease)."""
    rid = pending_batch_run(engine, monkeypatch, "batch", **{key: bad})
    with pytest.raises(InputError) as exc:
        runner.execute_run(engine, rid)
    assert exc.value.field == field and rid in exc.value.message
    r = run_cli(["run", "--resume", rid, "--json"], db=db_url, env={"OPENAI_API_KEY": "sk-test-not-a-key"})
    assert r.returncode == 2 and f"--param {field}" in r.stderr and rid in r.stderr, r.stderr
    info = runner.run_info(engine, rid)
    assert info["status"] == "pending" and info["counts"]["pending"] == info["n"]
    with session_scope(engine) as s:
        params = s.get(Run, rid).params
    assert "lease" not in params and params["batch"][key] == bad and params["batch"]["parts"] == []


def test_enable_refuses_a_bad_option_naming_it(sqlite_engine, monkeypatch):
    from automonitor.runs import batch

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    add_pairs(sqlite_engine, 2)
    rid = runner.create_run(sqlite_engine, "openai:gpt-4o-mini", "direct", base_url=NOWHERE)
    for kw, field in (({"poll_s": float("inf")}, "batch_poll"), ({"size": 2.5}, "batch_size")):
        with pytest.raises(InputError) as exc:
            batch.enable(sqlite_engine, rid, **kw)
        assert exc.value.field == field
    with session_scope(sqlite_engine) as s:
        assert "batch" not in s.get(Run, rid).params


@pytest.mark.parametrize("given", [["--param", "repeat=3"], ["--param", 'repeat="3"'], ["--repeat", "3"]])
def test_batch_refuses_an_effective_repeat_above_one_from_the_flag_or_the_param(db_url, engine, given):
    """Fails on the main before this rule for ``--param repeat=3``: the check read only ``--repeat``, so the
    run was created with 3 repeats and marked for the batch API (which judges each sample once)."""
    add_pairs(engine, 2)
    r = _batch_run(db_url, *given)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "--batch judges each sample once" in r.stderr and "--param repeat" in r.stderr
    assert _counts(engine) == (0, 0)


def test_repeat_flag_and_param_that_disagree_exit_2(db_url, engine):
    """``--repeat 1 --param repeat=3``: the flag used to overwrite the param silently (and so passed the batch
    check); now they must agree, as ``--retries`` and ``--param max_attempts`` must."""
    add_pairs(engine, 2)
    r = _batch_run(db_url, "--repeat", "1", "--param", "repeat=3")
    assert r.returncode == 2 and "disagree" in r.stderr, r.stderr
    assert _counts(engine) == (0, 0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=param_values() | st.integers(-3, 60) | st.integers(-3, 60).map(str))
def test_batch_takes_an_effective_repeat_of_one_only(sqlite_engine, monkeypatch, value):
    """Any drawn ``--param repeat``: a batch run is created only for an effective repeat of 1; a valid K > 1 is
    refused as a batch/repeat conflict (field ``batch``), an invalid value naming ``repeat``; nothing is
    written on a refusal."""
    from automonitor.cli.runs import new_run

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    with sqlite_engine.connect() as c:
        if not c.execute(sa.text("select count(*) from sample")).scalar():
            add_pairs(sqlite_engine, 2)
    before = _counts(sqlite_engine)
    options = {"limit": None, "sample_seed": 0, "base_url": NOWHERE, "concurrency": 8, "reuse": False}
    valid = _repeat_ok(value)
    try:
        new_run(sqlite_engine, "openai:gpt-4o-mini", "direct", {"repeat": value}, options, False, None, True)
    except InputError as exc:
        assert exc.field == ("batch" if valid else "repeat"), (value, exc.field, exc.message)
        assert valid is None or valid > 1, (value, exc.message)
        assert _counts(sqlite_engine) == before
        return
    assert valid == 1, value
    assert _counts(sqlite_engine)[0] == before[0] + 1


def _repeat_ok(value: object) -> int | None:
    """``value`` as a repeat count when it is one (a whole number, or a string of one, in 1..50), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    if isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text[:1] in "+-" else text
        if not digits or any(c not in "0123456789" for c in digits) or len(digits) > 4300:
            return None
        value = int(text)
    return value if 1 <= value <= 50 else None
