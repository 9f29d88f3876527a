"""A run that never reached its judge fails (closed port, exhausted quota), fast and resumable; a run with
many errors finishes with a warning and is marked; secrets in a base URL are never stored nor printed.
Store-facing tests run on SQLite and PostgreSQL (the ``engine`` fixture)."""

from __future__ import annotations

import json
import re

import pytest
import sqlalchemy as sa

from automonitor.errors import InputError
from automonitor.runs import runner
from automonitor.runs.params import redact_url
from automonitor.runs.status import answer_quality, error_warning
from helpers import run_cli
from servers.data import add_custom, add_pairs
from servers.llamacpp_server import free_port
from servers.openai_fault import OpenAIFaultServer

FAST = {"backoff_initial": 0.01, "backoff_max": 0.02, "timeout": 5}
SECRET = "sk-proj-TOPSECRET0123456789abcdef"


def _status(engine, run_id):
    info = runner.run_info(engine, run_id)
    return info["status"], info.get("error") or ""


TRANSPORTS = ("direct", "sdk")  # the lean default and the official SDK fail the same way


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_closed_port_fails_within_ten_calls_and_resumes_once_the_server_is_up(engine, monkeypatch, transport):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 6)
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    rid = runner.create_run(engine, "openai:m", "direct", base_url=url, params={**FAST, "transport": transport})
    out = runner.execute_run(engine, rid)
    status, error = _status(engine, rid)
    assert status == "failed"
    assert out["api_calls"] <= 10
    assert "no call reached the judge" in error and url in error and "--resume" in error
    assert out["counts"]["error"] == 0  # nothing was judged: every sample stays pending
    with OpenAIFaultServer(port=port) as srv:
        again = runner.execute_run(engine, rid)
        assert srv.stats()["total"] == 12
    assert _status(engine, rid)[0] == "finished"
    assert again["counts"]["misbehavior"] == again["counts"]["benign"] == 6


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_judge_that_drops_every_connection_is_said_reached_not_unreachable(engine, monkeypatch, transport):
    """Trial 46 (U4): a judge server that took the requests and dropped each connection before a complete
    answer failed the run (rc 1, right) with "no call reached the judge ... start the server or correct
    --base-url", though it had received the calls. The line now says it was reached, how many calls did,
    and points at the server, not at the URL; nothing is judged, every sample stays pending. Its count of
    calls is the summary's ``api_calls``."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 6)
    with OpenAIFaultServer() as srv:
        srv.force = "reset"  # the connection accepted, the request read, then reset
        rid = runner.create_run(
            engine, "openai:m", "direct", base_url=srv.base_url, params={**FAST, "transport": transport}
        )
        out = runner.execute_run(engine, rid)
        received = srv.stats()["total"]
    status, error = _status(engine, rid)
    assert status == "failed" and received >= 3
    assert "no call reached the judge" not in error and "start the server" not in error, error
    assert f"the judge at {srv.base_url} was reached but answered no call" in error, error
    assert "calls reached it and lost their connection before an answer" in error and "--resume" in error, error
    # the line counts every call sent, as the summary's api_calls does: a call in flight when the run stopped
    # failed after the stop and was missing from "3 of 3 calls" beside api_calls 4 (trial48 item G)
    calls = out["api_calls"]
    assert calls == received and f"{calls} of {calls} calls reached it" in error, (calls, received, error)
    assert out["counts"]["error"] == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("force", ["quota", "401", "403", "404"])
def test_permanent_failures_fail_fast_name_the_cause_and_resume(engine, monkeypatch, transport, force):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 6)
    with OpenAIFaultServer() as srv:
        srv.force = force
        params = {**FAST, "transport": transport}
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, concurrency=16, params=params)
        out = runner.execute_run(engine, rid)
        calls = srv.stats()["total"]
        status, error = _status(engine, rid)
        assert status == "failed" and calls <= 10 and out["api_calls"] == calls
        assert srv.base_url in error
        if force == "quota":
            assert "insufficient_quota" in error and "quota" in error
        else:
            assert f"HTTP {force}" in error, error
        srv.force = None  # credit added, key or model fixed
        runner.execute_run(engine, rid)
    assert _status(engine, rid)[0] == "finished"


def test_a_share_of_errors_above_ten_percent_is_warned_and_marked(engine, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    items = [(f"[scenario:400] q{k}" if k == 0 else f"question {k}", f"bad {k}", f"good {k}") for k in range(5)]
    add_custom(engine, items)
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, params=FAST)
        out = runner.execute_run(engine, rid)
    assert _status(engine, rid)[0] == "finished" and out["counts"]["error"] == 2
    line = error_warning(engine, rid)
    assert line is not None and "20%" in line and "permanent HTTP 400" in line and "\n" not in line
    qa = answer_quality(engine, [rid])[rid]
    assert qa["marks"] == ["errors 20%"] and qa["error_cause"] == "permanent HTTP 400"
    assert qa["parse"] == "strict" and qa["score_method"] == "verdict-token"


def test_a_run_of_cut_off_answers_is_warned_once_and_its_invalid_share_named(engine, monkeypatch):
    """Every answer cut off at the token limit (finish_reason length): the run finishes with every sample
    ``invalid`` (never a verdict it did not give) and the command line says so in one warning line with the
    way to re-ask them; a run with a few invalid answers gets no such line."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 3)
    with OpenAIFaultServer() as srv:
        srv.force = "length"
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, params=FAST)
        out = runner.execute_run(engine, rid)
        assert _status(engine, rid)[0] == "finished" and out["counts"]["invalid"] == out["n"] > 0
        line = error_warning(engine, rid)
        assert line is not None and "100%" in line and "invalid" in line and "\n" not in line
        assert f"--retry-errors {rid} --retry invalid" in line
        srv.force = None
        rid2 = runner.create_run(engine, "openai:m2", "direct", base_url=srv.base_url, params=FAST)
        runner.execute_run(engine, rid2)
    assert error_warning(engine, rid2) is None


def test_no_warning_at_or_below_ten_percent(engine, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 3)
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, params=FAST)
        runner.execute_run(engine, rid)
    assert error_warning(engine, rid) is None and answer_quality(engine, [rid])[rid]["marks"] == []


# ---------------------------------------------------------------------------------------------------
# secrets in base URLs


@pytest.mark.parametrize(
    "url,expected",
    [
        ("http://h/v1?key=sk-1", "http://h/v1?key=***"),
        ("http://h/v1?api_key=a&x=1&access_token=t&sig=s", "http://h/v1?api_key=***&x=1&access_token=***&sig=***"),
        ("https://h/v1?api-version=2024-01&token=t", "https://h/v1?api-version=2024-01&token=***"),
        ("http://u:sk-2@h:8/v1", "http://***@h:8/v1"),
        ("http://h/v1", "http://h/v1"),
        (None, None),
    ],
)
def test_redact_url(url, expected):
    assert redact_url(url) == expected


def test_userinfo_credentials_are_refused_pointing_to_the_key_variable(engine):
    add_pairs(engine, 1)
    with pytest.raises(InputError) as exc:
        runner.create_run(engine, "openai:m", "direct", base_url=f"http://user:{SECRET}@127.0.0.1:9/v1")
    assert "OPENAI_API_KEY" in exc.value.message and SECRET not in exc.value.message
    with engine.connect() as c:
        assert c.execute(sa.text("select count(*) from run")).scalar() == 0


def test_a_key_in_the_query_is_never_stored_printed_or_reported(engine, db_url, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 2)
    with OpenAIFaultServer() as srv:
        url = f"{srv.base_url}?key={SECRET}"
        rid = runner.create_run(engine, "openai:m", "direct", base_url=url, params=FAST)
        runner.execute_run(engine, rid, base_url=url)  # a server echoing the URL in its errors too
        with pytest.raises(InputError):  # another URL cannot stand in for the stored one
            runner.execute_run(engine, rid, base_url=srv.base_url + "/other?key=x")
    with engine.connect() as c:
        for table in ("run", "prediction", "cache_entry", "monitor"):
            for row in c.execute(sa.text(f"select * from {table}")):
                assert SECRET not in str(tuple(row)) and "sk-proj" not in str(tuple(row))
    assert runner.run_info(engine, rid)["base_url"].endswith("?key=***")
    listed = run_cli(["runs", "--json"], db=db_url)
    assert listed.returncode == 0 and rid in listed.stdout and SECRET not in listed.stdout
    assert "key=***" in json.dumps(json.loads(listed.stdout))
    html = tmp_path / "report.html"
    rep = run_cli(["report", "--format", "html", "--output", str(html), "--n-boot", "20"], db=db_url)
    assert rep.returncode == 0, rep.stderr
    assert SECRET not in html.read_text() and "sk-proj" not in html.read_text()


def test_cli_run_against_a_closed_port_exits_1_with_one_line(db_url, engine, monkeypatch):
    add_pairs(engine, 2)
    url = f"http://127.0.0.1:{free_port()}/v1?token={SECRET}"
    r = run_cli(
        ["run", "--monitor", "openai:m", "--template", "direct", "--base-url", url, "--param", "backoff_initial=0.01"],
        db=db_url,
        env={"OPENAI_API_KEY": None},
    )
    assert r.returncode == 1
    failed = [ln for ln in r.stderr.splitlines() if "failed:" in ln]
    assert len(failed) == 1 and "no call reached the judge" in failed[0] and "token=***" in failed[0]
    assert "automonitor.runs.status" not in r.stderr, r.stderr  # the failure is said once, not logged again
    assert SECRET not in r.stderr + r.stdout
    # the samples stay pending (resumable): no line may say that one ended in error
    assert "outcome error" not in r.stderr, r.stderr
    # trial53: the first line said a bare "run RUN_ID" above the stop; it now says what was started
    first = r.stderr.splitlines()[0]
    assert re.fullmatch(r"run run_\w+ created: monitor openai:m, template direct, 4 samples", first), r.stderr


@pytest.mark.parametrize("url", [f"http://u:{SECRET}@127.0.0.1:9/v1", f"http://127.0.0.1:9/v1?api_key={SECRET}"])
def test_a_generation_job_with_a_credential_in_its_url_is_refused(url):
    from automonitor.runs.generation.job import GenerationSpec, build_job

    spec = GenerationSpec(kind="sycophancy", generator="openai:m", source="bct_truthfulqa_cues", base_url=url)
    with pytest.raises(InputError) as exc:
        build_job(spec)
    assert "OPENAI_API_KEY" in exc.value.message and SECRET not in exc.value.message


def test_cli_run_with_twenty_percent_errors_finishes_with_one_warning_line(db_url, engine):
    items = [(f"[scenario:400] q{k}" if k == 0 else f"question {k}", f"bad {k}", f"good {k}") for k in range(5)]
    add_custom(engine, items)
    with OpenAIFaultServer() as srv:
        args = ["run", "--monitor", "openai:m", "--template", "direct", "--base-url", srv.base_url, "--quiet"]
        r = run_cli(args + ["--param", "backoff_initial=0.01"], db=db_url, env={"OPENAI_API_KEY": None})
    assert r.returncode == 0, r.stderr
    warnings = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: run")]
    assert len(warnings) == 1 and "20%" in warnings[0] and "permanent HTTP 400" in warnings[0]
    listed = run_cli(["runs"], db=db_url)
    assert "(lenient parse)" not in listed.stdout


@pytest.mark.parametrize("force", ["quota", "401"])
def test_a_run_too_small_to_be_stopped_does_not_claim_it_was(engine, monkeypatch, force):
    """One pair (2 samples) meets 2 identical permanent failures and ends: nothing stopped it (the
    fail-fast needs 3), so the failure line says how many samples were left pending, not "stopped after 2
    identical permanent failures" (fresh-user trial)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 1)
    with OpenAIFaultServer() as srv:
        srv.force = force
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, concurrency=1, params=FAST)
        runner.execute_run(engine, rid)
        assert srv.stats()["total"] == 2
    status, error = _status(engine, rid)
    assert status == "failed" and "stopped" not in error, error
    assert error.startswith("2 sample(s) left pending by permanent failures (HTTP ") and f"--resume {rid}" in error


def _serve_in_process_of_its_own(port: int, latency: str):
    """The fault server (``servers.openai_fault``) in a process of its own on ``port``, answering after
    ``latency`` seconds, once it prints its URL (so that killing it is a crash: every socket closes at once)."""
    import subprocess
    import sys
    from pathlib import Path

    proc = subprocess.Popen(
        [sys.executable, "-m", "servers.openai_fault", "--port", str(port), "--latency", latency],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None and "http" in proc.stdout.readline().decode()
    return proc


def _calls_received(port: int) -> int:
    """How many calls the fault server on ``port`` has received (its ``/stats``)."""
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as r:
        return int(json.loads(r.read())["total"])


def test_a_judge_that_dies_mid_run_stops_the_run_failed_with_the_rest_pending(engine, monkeypatch, tmp_path):
    """The judge server answers, then dies (killed: every socket closed, as a crashed server). Before, each
    remaining sample was retried against the dead port and the run ended ``finished`` with exit 0 and
    most samples ``error`` (fresh-user trial, sixth sitting). Now, once :data:`retries.LOST_AFTER` calls in a
    row fail to connect with no answer between them, no more calls are sent: the run ends ``failed`` naming
    the cause, the samples not judged stay pending (not ``error``), and ``--resume`` on a live server judges
    exactly those. SQLite and PostgreSQL."""
    import threading
    import time

    from automonitor.runs.runner import retries

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 40)  # 80 test samples
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"

    srv = _serve_in_process_of_its_own(port, "0.05")
    rid = runner.create_run(engine, "openai:m", "direct", base_url=url, concurrency=4, params=FAST)
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(runner.execute_run(engine, rid)))
    try:
        t.start()
        deadline = time.monotonic() + 120
        while _calls_received(port) < 10:
            assert time.monotonic() < deadline, "the judge never answered 10 calls"
            time.sleep(0.02)
        srv.kill()  # a crash: the listening socket and every kept-alive connection close at once
        srv.wait(10)
        t.join(120)
        assert not t.is_alive(), "the run kept going against a dead judge"
    finally:
        srv.kill()
    status, error = _status(engine, rid)
    assert status == "failed"
    assert "the judge stopped answering" in error and url in error and "--resume" in error
    counts = out["counts"]
    judged = counts["misbehavior"] + counts["benign"] + counts.get("invalid", 0)
    # the server had received 10 calls; up to 4 (the concurrency) were cut in flight by the kill
    assert 10 - 4 <= judged < 80 and counts["error"] == 0  # the rest is pending, not error
    # calls after the death are bounded: the streak that marks the judge lost, not retries of every sample
    assert out["api_calls"] <= answered_before_kill_bound(judged)
    srv = _serve_in_process_of_its_own(port, "0.05")
    try:
        again = runner.execute_run(engine, rid)
    finally:
        srv.kill()
        srv.wait(10)
    assert _status(engine, rid)[0] == "finished"
    assert again["counts"]["misbehavior"] + again["counts"]["benign"] + again["counts"].get("invalid", 0) == 80
    assert again["counts"]["error"] == 0 and retries.LOST_AFTER >= 3


def answered_before_kill_bound(judged: int) -> int:
    """At most: every judged sample's call with a retry each, then the samples in flight at the death (the
    concurrency, 4) each retrying to its last attempt (6: the default 5 retries) while the streak that marks
    the judge lost builds up, and the streak itself (:data:`~automonitor.runs.runner.retries.LOST_AFTER`).
    Before, every remaining sample was tried 6 times: 6 x 70 and more."""
    from automonitor.runs.runner.retries import LOST_AFTER

    return 2 * judged + 4 * 6 + LOST_AFTER


# ---------------------------------------------------------------------------------------------------
# a judge that answers only HTTP 5xx stops like a lost one (fresh-user trial: a server that always answered
# 500 was never cut off; 172 samples x 6 attempts, 13 minutes, then `finished`, exit 0)


def test_a_server_that_answers_only_500_stops_the_run_failed_with_the_rest_pending(engine, monkeypatch):
    """Every call answers HTTP 500: once :attr:`Circuit.lost_after` of them in a row (12) have lasted
    :data:`retries.LOST_SECONDS` (shortened here from 5 s) with no answer between them, no call is
    sent; the run ends ``failed`` naming HTTP 500, the URL and ``--resume``, the samples not judged pending;
    the samples whose retries ran out before the stop are ``error`` and the line names ``--retry-errors``.
    ``--resume`` on a healthy server judges the pending ones. SQLite and PostgreSQL."""
    from automonitor.runs.runner import retries

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(retries, "LOST_SECONDS", 1.0)
    add_pairs(engine, 10)  # 20 test samples
    with OpenAIFaultServer() as srv:
        srv.force = "500"
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, concurrency=1, params=FAST)
        out = runner.execute_run(engine, rid)
        calls = srv.stats()["total"]
        status, error = _status(engine, rid)
        assert status == "failed", (status, error, out["counts"])
        assert "HTTP 500" in error and srv.base_url in error and f"--resume {rid}" in error, error
        assert "\n" not in error
        counts = runner.run_info(engine, rid)["counts"]
        assert counts["pending"] > 0 and counts["misbehavior"] == counts["benign"] == 0
        assert calls < 20 * retries.DEFAULT_MAX_ATTEMPTS, calls  # before: every sample tried 6 times
        # the first sample's 6 attempts are fewer than the 12 that stop the run: it ends error, and the line
        # says that --resume will not re-send it
        assert counts["error"] >= 1
        assert f"{counts['error']} sample(s) ended in error" in error and f"--retry-errors {rid}" in error
        srv.force = None  # the server fixed
        again = runner.execute_run(engine, rid)
    assert _status(engine, rid)[0] == "finished"
    assert runner.run_info(engine, rid)["counts"]["pending"] == 0 and again["counts"]["error"] == counts["error"]


def test_500s_among_answers_and_a_500_then_200_never_stop_a_run(engine, monkeypatch):
    """A 500 retried into an answer is judged; 5xx scattered among answers (each answer ends the streak)
    never stop a run, even with the streak's time shortened to 0."""
    from automonitor.runs.runner import retries

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(retries, "LOST_SECONDS", 0.0)
    items = [
        (f"[scenario:500,500,ok] q{k}" if k % 3 == 0 else f"question {k}", f"bad {k}", f"good {k}") for k in range(12)
    ]
    add_custom(engine, items)
    with OpenAIFaultServer(fault_rate=0.3, faults=("500",)) as srv:
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, concurrency=4, params=FAST)
        out = runner.execute_run(engine, rid)
        assert srv.fault_counts.get("500", 0) + sum(1 for k in srv.log if k[2] == "500") > 0
    assert _status(engine, rid)[0] == "finished"
    assert runner.run_info(engine, rid)["counts"]["pending"] == 0 and out["counts"]["error"] == 0
    assert out["counts"]["misbehavior"] + out["counts"]["benign"] == 24


def test_a_finished_run_with_server_errors_names_retry_errors(engine, monkeypatch):
    """Two samples of 20 (one pair) end ``error`` after HTTP 500 on every attempt (10%: not above the share
    warning): the
    finish still warns in one line that ``--resume`` does not re-send them and names ``--retry-errors``."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    items = [(f"[scenario:500] q{k}" if k == 0 else f"question {k}", f"bad {k}", f"good {k}") for k in range(10)]
    add_custom(engine, items)
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, concurrency=4, params=FAST)
        out = runner.execute_run(engine, rid)
    assert _status(engine, rid)[0] == "finished" and out["counts"]["error"] == 2
    line = error_warning(engine, rid)
    assert line is not None and "server HTTP 500" in line and f"automonitor run --retry-errors {rid}" in line
    assert answer_quality(engine, [rid])[rid]["marks"] == []  # 10% is not marked in the report


def test_the_sample_in_flight_when_the_judge_dies_stays_pending(engine, monkeypatch):
    """At concurrency 1 the sample in flight at the server's death retries into the dead port 6 times,
    fewer than the 12 failures that mark the judge lost: before, it was stored ``error``
    (``ClientConnectorError``) and ``--resume`` never re-asked it (fresh-user trial). Its failures have no
    answer between them since its first one, so it stays pending with the rest, and ``--resume`` judges
    every sample. SQLite and PostgreSQL."""
    import time

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 10)  # 20 test samples
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"

    import threading

    srv = _serve_in_process_of_its_own(port, "0.3")  # slow answers: the kill lands while a call is in flight
    rid = runner.create_run(engine, "openai:m", "direct", base_url=url, concurrency=1, params=FAST)
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(runner.execute_run(engine, rid)))
    try:
        t.start()
        deadline = time.monotonic() + 60
        while _calls_received(port) < 3:
            assert time.monotonic() < deadline, "the judge never received 3 calls"
            time.sleep(0.01)
        srv.kill()
        srv.wait(10)
        t.join(60)
        assert not t.is_alive()
    finally:
        srv.kill()
    status, error = _status(engine, rid)
    assert status == "failed" and "the judge stopped answering" in error, error
    assert out["counts"]["error"] == 0, out["counts"]  # before: the sample in flight was stored error
    assert "--retry-errors" not in error
    srv = _serve_in_process_of_its_own(port, "0")
    try:
        again = runner.execute_run(engine, rid)
    finally:
        srv.kill()
        srv.wait(10)
    assert _status(engine, rid)[0] == "finished"
    assert again["counts"]["misbehavior"] + again["counts"]["benign"] == 20 and again["counts"]["error"] == 0


# ---------------------------------------------------------------------------------------------------
# a judge that never gives a usable answer (timeouts, unreadable bodies) fails the run too (fresh-user trial,
# 2026-12-06: 8 of 8 samples timed out and the run ended `finished`, exit 0, with one warning line)


@pytest.mark.parametrize("force", ["timeout", "truncated"])
def test_a_run_whose_every_call_got_no_answer_ends_failed_naming_retry_errors(engine, monkeypatch, force):
    """One pair, two attempts each, every call a timeout (the server holds it past the client's deadline) or a
    body that is not JSON: too few calls for the streak that stops a run, and nothing is pending at the end.
    The run still ends ``failed`` (not ``finished``): its error names how many calls got no answer, the URL,
    the last failure and ``--retry-errors``; the samples are ``error``, and ``--retry-errors`` on a healthy
    server judges them. SQLite and PostgreSQL."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 1)
    params = {**FAST, "timeout": 0.3, "max_attempts": 2}
    with OpenAIFaultServer(timeout_sleep=1.0) as srv:
        srv.force = force
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, concurrency=1, params=params)
        runner.execute_run(engine, rid)
        status, error = _status(engine, rid)
        counts = runner.run_info(engine, rid)["counts"]
        assert status == "failed", (status, error, counts)
        assert counts["error"] == 2 and counts["pending"] == 0
        assert error.startswith("none of the 4 call(s) sent got an answer from the judge at ") and srv.base_url in error
        assert f"the last: {'timeout' if force == 'timeout' else 'malformed'}: " in error, error
        assert error.endswith(f"automonitor run --retry-errors {rid}") and "\n" not in error
        srv.force = None
        runner.retry_errors(engine, rid)
        again = runner.execute_run(engine, rid)
    assert _status(engine, rid)[0] == "finished" and again["counts"]["error"] == 0


@pytest.mark.parametrize("force", ["429", "405"])
def test_a_run_whose_every_call_got_an_http_error_names_the_status(engine, monkeypatch, force):
    """Fresh-user trial 45: a 429-only storm, or a --base-url at a server answering HTTP 405, ended with
    "none of the N call(s) sent got an answer ... (the last: )": those failures were kept nowhere. The line
    names the last call's HTTP status."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add_pairs(engine, 1)
    params = {**FAST, "max_attempts": 2}
    with OpenAIFaultServer(retry_after=0.01) as srv:
        srv.force = force
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, concurrency=1, params=params)
        runner.execute_run(engine, rid)
    status, error = _status(engine, rid)
    assert status == "failed", (status, error)
    assert error.startswith("none of the ") and "got an answer from the judge at " in error, error
    assert "(the last: )" not in error and f"HTTP {force}" in error, error


def test_one_answer_among_timeouts_lets_a_small_run_finish(engine, monkeypatch):
    """A run in which one call of several got an answer reached its judge: it finishes (with its errors and the
    warning), the no-answer rule does not fire."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    items = [(f"[scenario:timeout,timeout] q{k}" if k else f"question {k}", f"bad {k}", f"good {k}") for k in range(2)]
    add_custom(engine, items)
    params = {**FAST, "timeout": 0.3, "max_attempts": 2}
    with OpenAIFaultServer(timeout_sleep=1.0) as srv:
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, concurrency=1, params=params)
        runner.execute_run(engine, rid)
    status, error = _status(engine, rid)
    counts = runner.run_info(engine, rid)["counts"]
    assert status == "finished" and not error, (status, error)
    assert counts["error"] == 2 and counts["misbehavior"] + counts["benign"] == 2


def test_a_judge_that_only_times_out_stops_a_long_run_with_the_rest_pending(engine, monkeypatch):
    """Every call times out: once :attr:`Circuit.lost_after` of them in a row (12) have lasted
    :data:`retries.LOST_SECONDS` (shortened here) the run stops ``failed`` as a server that answers only 5xx
    does, naming no usable answer, the URL and ``--resume``, most samples pending."""
    from automonitor.runs.runner import retries

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(retries, "LOST_SECONDS", 1.0)
    add_pairs(engine, 10)  # 20 test samples
    with OpenAIFaultServer(timeout_sleep=1.0) as srv:
        srv.force = "timeout"
        params = {**FAST, "timeout": 0.2}
        rid = runner.create_run(engine, "openai:m", "direct", base_url=srv.base_url, concurrency=1, params=params)
        runner.execute_run(engine, rid)
        calls = srv.stats()["total"]
    status, error = _status(engine, rid)
    counts = runner.run_info(engine, rid)["counts"]
    assert status == "failed", (status, error, counts)
    assert "no usable answer (timeouts or unreadable bodies)" in error and f"--resume {rid}" in error, error
    assert srv.base_url in error and "\n" not in error
    assert counts["pending"] > 10 and calls < 20 * retries.DEFAULT_MAX_ATTEMPTS


def test_cli_run_whose_every_answer_is_unscored_exits_1_and_keeps_its_answers(db_url, engine):
    """Fresh-user trial: a judge that answered every sample with a cut-off text finished with exit 0 and a
    warning, so a script could not tell it from a good run. It stays ``finished`` (its answers kept, re-askable)
    but the command exits 1 with one line saying it has no verdict and how to re-ask; a run with verdicts
    among its invalid answers still exits 0."""
    add_pairs(engine, 3)
    args = ["run", "--monitor", "openai:m", "--template", "direct", "--quiet", "--param", "backoff_initial=0.01"]
    with OpenAIFaultServer() as srv:
        srv.force = "length"
        r = run_cli([*args, "--base-url", srv.base_url, "--json"], db=db_url, env={"OPENAI_API_KEY": None})
        assert r.returncode == 1, r.stderr
        summary = json.loads(r.stdout)  # the summary is still printed
        rid = summary["run_id"]
        assert summary["counts"]["invalid"] == summary["n"] > 0
        assert _status(engine, rid)[0] == "finished"
        lines = [ln for ln in r.stderr.splitlines() if "finished without a verdict" in ln]
        assert len(lines) == 1 and f"invalid {summary['n']}" in lines[0]
        assert "warning: run" not in r.stderr, r.stderr  # said once: not the 100%-invalid warning beside it
        assert lines[0].endswith(f"--retry-errors {rid} --retry invalid")
        srv.force = None  # the judge fixed: re-asking gives verdicts and exit 0
        again_args = ["run", "--retry-errors", rid, "--retry", "invalid", "--quiet"]
        again = run_cli(again_args, db=db_url, env={"OPENAI_API_KEY": None})
    assert again.returncode == 0, again.stderr
    assert "finished without a verdict" not in again.stderr


def test_no_verdict_line_names_each_unscored_outcome_and_only_when_no_verdict():
    from automonitor.runs.status import no_verdict_line

    assert no_verdict_line("r", {"misbehavior": 0, "benign": 1, "invalid": 9, "pending": 0}) is None
    assert no_verdict_line("r", {"misbehavior": 0, "benign": 0, "pending": 4}) is None  # nothing answered
    line = no_verdict_line("r", {"misbehavior": 0, "benign": 0, "invalid": 2, "refusal": 1, "error": 3, "pending": 1})
    assert line is not None and "none of its 6 answered samples" in line
    assert "invalid 2, refusal 1, error 3" in line and line.endswith("--retry-errors r --retry invalid,refusal")
    only_errors = no_verdict_line("r", {"misbehavior": 0, "benign": 0, "error": 2})
    assert only_errors is not None and only_errors.endswith("--retry-errors r")
