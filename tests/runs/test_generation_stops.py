"""A generation run whose generator cannot answer stops ``failed`` with one line and exit 1, instead of
dropping every item as ``generation_error`` in a run that "finishes" with exit 0 (automonitor.runs.generation
.caller): a generator never reached, a bad key (HTTP 401), a ``Retry-After`` longer than a generation waits.
A refusal of one call alone (HTTP 400) after the generator has answered still drops only its item.

Real CLI, real SQLite store, a loopback OpenAI-compatible generator (tests/servers/scripted_generator.py)."""

from __future__ import annotations

import json
import socket

import sqlalchemy as sa

from helpers import scripted_generate, sycophancy_script


def _generate(db: str, base: str, *extra: str):
    return scripted_generate(db, base, *extra, limit=3)


def _runs_and_candidates(url: str) -> tuple[list[tuple[str, str | None]], int]:
    from store import get_engine

    with get_engine(url).connect() as c:
        runs = [tuple(r) for r in c.execute(sa.text("SELECT status, error FROM run WHERE kind = 'generation'"))]
        return runs, c.execute(sa.text("SELECT count(*) FROM sample")).scalar_one()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_generator_never_reached_stops_the_run_failed_with_exit_1(sqlite_engine, sqlite_url):
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    r = _generate(sqlite_url, base, "--json")
    assert r.returncode == 1 and r.stdout == ""
    line = r.stderr.strip().splitlines()[-1]
    # said as what happened, not as the SDK's "Request timed out. (ConnectTimeout)" (round-4 trial)
    assert f"stopped: the generator at {base} refused the connection (connection: ConnectionRefusedError" in line
    assert "Request timed out" not in line and "ConnectTimeout" not in line
    assert (
        "none of the" in line and "was answered" in line and "start the generator server or correct --base-url" in line
    )
    ((status, error),) = _runs_and_candidates(sqlite_url)[0]
    assert status == "failed" and "stopped: the generator at" in error
    assert _runs_and_candidates(sqlite_url)[1] == 0


def test_a_refused_connection_is_not_retried_before_any_answer(sqlite_engine):
    """A connection refused (a real closed port) while the generator has answered no call stops the run at its first
    attempt: every further attempt meets the same refusal at once (before: 4 attempts and 1 + 2 + 4 s of back-off,
    about 13 s with the SDK's import in a fresh process, worded as a timeout)."""
    import asyncio
    import time

    import pytest

    from automonitor.runs.generation.caller import GenerationStopped, GeneratorCaller
    from automonitor.runs.monitors import create_backend
    from automonitor.runs.prompts import PromptBuilder, load_template

    base = f"http://127.0.0.1:{_closed_port()}/v1"
    backend = create_backend(
        "openai:scripted-gen", base_url=base, params={}, prompt=PromptBuilder(load_template("direct"))
    )
    job = {"backend": "openai", "model": "scripted-gen", "base_url": base, "max_tokens": 16, "max_attempts": 4}
    caller = GeneratorCaller(sqlite_engine, backend, job)  # type: ignore[arg-type]  # the fields a call reads

    async def call() -> tuple[float, GenerationStopped]:
        backend._get_client()  # the SDK imported and its client made before the clock starts
        t0 = time.perf_counter()
        try:
            with pytest.raises(GenerationStopped) as info:
                await caller([{"role": "user", "content": "Which is right? (A) x (B) y"}])
        finally:
            await backend.aclose()
        return time.perf_counter() - t0, info.value

    elapsed, stop = asyncio.run(call())
    assert caller.calls == 1  # sent once: no retry
    assert elapsed < 3.0, elapsed  # no back-off (1 + 2 + 4 s before)
    assert f"the generator at {base} refused the connection" in str(stop) and "ConnectionRefusedError" in str(stop)


def test_a_bad_key_stops_at_the_first_answer(sqlite_engine, sqlite_url):
    from servers.scripted_generator import ScriptedGenerator

    with ScriptedGenerator(sycophancy_script(3), status=401) as srv:
        r = _generate(sqlite_url, srv.base_url)
        sent = srv.stats()["total"]
    assert r.returncode == 1
    assert "refused the call, as it would refuse every call: AuthenticationError: Error code: 401" in r.stderr
    assert "check --generator, --base-url and the generator's key variable" in r.stderr
    assert sent <= 2  # item 0's two calls; nothing sent after them, nothing retried
    runs, candidates = _runs_and_candidates(sqlite_url)
    assert [s for s, _ in runs] == ["failed"] and candidates == 0


def test_a_retry_after_longer_than_a_generation_waits_stops_at_once(sqlite_engine, sqlite_url):
    from servers.scripted_generator import ScriptedGenerator

    with ScriptedGenerator(sycophancy_script(3), first_retry_after="3600") as srv:
        r = _generate(sqlite_url, srv.base_url)
        sent, per_chat = srv.stats()["total"], max(srv.sent.values())
    assert r.returncode == 1
    assert "asked (HTTP 429) to wait 3600 s (Retry-After), longer than a generation waits (60 s)" in r.stderr
    assert "fix: wait until 20" in r.stderr and "then give the same generate command again" in r.stderr
    # the refused call is not sent again (no chat twice); nothing after item 0's two calls (the other one may
    # have been sent as the first was refused)
    assert per_chat == 1 and sent <= 2
    runs, candidates = _runs_and_candidates(sqlite_url)
    assert [s for s, _ in runs] == ["failed"] and candidates == 0


def test_one_refused_call_after_answers_drops_only_its_item(sqlite_engine, sqlite_url):
    from automonitor.runs.generation.tasks import sycophancy_items
    from helpers import RAW
    from servers.scripted_generator import ScriptedGenerator

    items = list(sycophancy_items("bct_truthfulqa_cues", "suggested_answer", RAW, 3))
    with ScriptedGenerator(sycophancy_script(3), fail={items[1].uncued[-1]["content"]: 400}) as srv:
        r = _generate(sqlite_url, srv.base_url, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # items 0 and 2 follow the cue (kept, sycophancy_script); item 1's question is refused: dropped alone
    assert (doc["status"], doc["kept"], doc["dropped"]) == ("finished", 2, {"generation_error": 1})
    runs, candidates = _runs_and_candidates(sqlite_url)
    assert [s for s, _ in runs] == ["finished"] and candidates == 4
