"""A judge that rate-limits a run (trial50: an OpenAI-compatible server answering every call HTTP 429 with
``Retry-After: 3600``; the run waited 4 min printing nothing, then ended with a fix naming ``--param timeout``).

A ``Retry-After`` over ``--param retry_after_max`` stops the run at once, its samples pending, with one line
naming the status, the wait asked, the cap and the time to come back; one within the cap is waited and the
call retried as before. A run whose every call was rate-limited names rate limiting in its fix. Real fault
server; SQLite and PostgreSQL (the ``engine`` fixture)."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import datetime, timedelta, timezone

import pytest

from automonitor.runs import runner
from automonitor.runs.runner.retries import Circuit, RetryPolicy, WaitTooLong
from automonitor.runs.monitors import TransientError
from helpers import run_cli
from servers.data import add_custom, add_pairs
from servers.openai_fault import OpenAIFaultServer

FAST = {"backoff_initial": 0.01, "backoff_max": 0.02, "timeout": 5}
UNTIL = re.compile(r"wait until (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC, then automonitor run --resume ")


def _info(engine, rid):
    info = runner.run_info(engine, rid)
    return info["status"], info.get("error") or "", info["counts"]


@pytest.mark.parametrize("status", ["429", "503"])
def test_a_retry_after_over_the_cap_stops_the_run_at_once_with_every_sample_pending(engine, monkeypatch, status):
    """Retry-After 3600 s against retry_after_max 60 s, 3 attempts a sample: on main each sample waited the cap
    twice and ended ``error`` (a no-answer line naming --param timeout). Now the first such answer stops the
    run: no retry, at most the calls already in flight, nothing judged, every sample pending; the line names
    the status, the wait asked, the cap and the UTC time the server named, and ``--resume`` finishes the run
    once the server takes calls again."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 4)
    params = {**FAST, "max_attempts": 3, "retry_after_max": 60}
    with OpenAIFaultServer(retry_after=3600) as srv:
        srv.force = status
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, concurrency=2, params=params)
        t0 = time.monotonic()
        out = runner.execute_run(engine, rid)
        took = time.monotonic() - t0
        sent = srv.stats()["total"]
        state, error, counts = _info(engine, rid)
        asked_at = datetime.now(timezone.utc)
        assert state == "failed", (state, error, counts)
        assert took < 20, took  # no wait of retry_after_max (60 s, twice on main), let alone 3600 s; wide for CI load
        assert sent == out["api_calls"] <= 2, (sent, out)  # the calls in flight at once, none retried
        assert counts["error"] == 0 and counts["pending"] == 8, counts
        assert error.startswith(f"stopped: the judge at {srv.base_url} "), error
        what = "rate limited the run (HTTP 429)" if status == "429" else "could not take the calls (HTTP 503)"
        assert what in error, error
        assert (
            "asked to wait 3600 s (1 h) (Retry-After), longer than this run waits (--param retry_after_max: 60 s)"
            in error
        )
        assert "the samples not judged stay pending" in error and "--param timeout" not in error, error
        m = UNTIL.search(error)
        assert m is not None, error
        until = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
        assert abs(until - (asked_at + timedelta(seconds=3600))) < timedelta(seconds=30), (until, asked_at)
        assert f"automonitor run --resume {rid} (or a new run with --param retry_after_max=3600" in error, error
        assert "\n" not in error
        srv.force = None
        again = runner.execute_run(engine, rid)
    assert _info(engine, rid)[0] == "finished"
    assert again["counts"]["misbehavior"] == again["counts"]["benign"] == 4 and again["counts"]["error"] == 0


def test_a_retry_after_within_the_cap_is_waited_and_the_call_retried(engine, monkeypatch):
    """Today's behaviour stays: a 429 whose Retry-After (0.3 s) is within the cap is waited (at least that
    long) and the call sent again; the run finishes with the verdict."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_custom(engine, [("plain a [scenario:429,ok]", "os.system('a')", "good a")])
    with OpenAIFaultServer(retry_after=0.3) as srv:
        rid = runner.create_run(
            engine, "openai:m", "direct", base_url=srv.base_url, concurrency=1, params={**FAST, "retry_after_max": 2}
        )
        t0 = time.monotonic()
        out = runner.execute_run(engine, rid)
        took = time.monotonic() - t0
    state, error, counts = _info(engine, rid)
    assert state == "finished" and not error, (state, error)
    assert out["api_calls"] == 4 and counts["error"] == 0 and counts["pending"] == 0, (out, counts)
    assert took >= 0.3, took


def test_a_run_whose_every_call_was_rate_limited_names_rate_limiting_not_the_timeout(engine, monkeypatch):
    """Trial50 (B): every call answered 429 (Retry-After within the cap), the retries ran out: the no-answer
    line's fix said "answers the model within --param timeout". It now names rate limiting: wait, fewer calls
    at once, and the commands that re-send the samples."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 1)
    with OpenAIFaultServer(retry_after=0.01) as srv:
        srv.force = "429"
        rid = runner.create_run(
            engine, "openai:m", "direct", base_url=srv.base_url, concurrency=1, params={**FAST, "max_attempts": 2}
        )
        runner.execute_run(engine, rid)
    state, error, counts = _info(engine, rid)
    assert state == "failed" and counts["error"] == 2, (state, error, counts)
    assert error.startswith("none of the 4 call(s) sent got an answer from the judge at "), error
    assert "HTTP 429" in error and "--param timeout" not in error, error
    assert "fix: the judge is rate limiting this run: wait until its limit resets" in error, error
    assert f"automonitor run --retry-errors {rid} --concurrency 1" in error, error
    assert f"automonitor run --resume {rid}" in error, error


def test_a_wait_over_the_cap_cuts_the_other_samples_back_off_short():
    """The circuit stopped by a WaitTooLong wakes the retries sleeping in their back-off at once, and every
    later check raises it (no call is sent after the stop)."""
    policy = RetryPolicy(retry_after_max=2)
    assert policy.too_long(TransientError("rate_limit", "x", retry_after=2, status=429)) is None
    assert policy.too_long(TransientError("rate_limit", "x", status=429)) is None
    long = policy.too_long(TransientError("rate_limit", "x", retry_after=3600, status=429))
    assert isinstance(long, WaitTooLong) and long.run_wide and long.status == 429

    async def go() -> float:
        c = Circuit()
        t0 = time.monotonic()
        sleeper = asyncio.create_task(c.pause(30))
        await asyncio.sleep(0.05)
        c.stop(long)
        await sleeper
        with pytest.raises(WaitTooLong):
            c.check()
        return time.monotonic() - t0

    assert asyncio.run(go()) < 10.0  # not the 30 s back-off; wide for CI load


def test_cli_run_against_a_judge_asking_for_an_hour_exits_1_at_once_with_one_line(db_url, engine):
    """The trial's command, with --param retry_after_max=60 (main waited 2 x 60 s, then printed the no-answer
    line naming --param timeout): exit 1 within seconds, one line on stderr, nothing judged."""
    add_pairs(engine, 4)
    with OpenAIFaultServer(retry_after=3600) as srv:
        srv.force = "429"
        t0 = time.monotonic()
        r = run_cli(
            [
                "run", "--monitor", "openai:m", "--template", "direct", "--base-url", srv.base_url,
                "--limit", "4", "--no-controls", "--retries", "2", "--quiet", "--param", "retry_after_max=60",
            ],
            db=db_url,
            env={"OPENAI_API_KEY": None},
        )  # fmt: skip
        took = time.monotonic() - t0
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert took < 30, took  # main waited 2 x 60 s; wide for a process start under CI load
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "asked to wait 3600 s (1 h) (Retry-After)" in lines[0], r.stderr
    assert "(--param retry_after_max: 60 s)" in lines[0] and "then automonitor run --resume " in lines[0], lines
    assert "--param timeout" not in r.stderr
