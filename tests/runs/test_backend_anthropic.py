"""The ``anthropic`` backend (official SDK) against a loopback server replaying the documented Messages
API shapes: tool_use success with usage, text answers, 429 rate_limit_error with retry-after, 529
overloaded_error, 500 api_error, malformed bodies, refusals. Keys are never stored."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from sqlmodel import Session, select

from automonitor.runs import runner
from servers.anthropic_replay import AnthropicReplayServer
from servers.data import add_custom
from store.models import Prediction

SECRET = "sk-ant-test-SECRET-should-never-be-stored-123"


def _run(engine, srv, template="evidence", params=None):
    rid = runner.create_run(
        engine,
        "anthropic:claude-3-5-haiku-20241022",
        template,
        base_url=srv.root_url,
        concurrency=4,
        params={"backoff_initial": 0.01, "backoff_max": 0.05, "max_attempts": 4, **(params or {})},
    )
    out = runner.execute_run(engine, rid)
    with Session(engine) as s:
        ps = list(s.exec(select(Prediction).where(Prediction.run_id == rid)))
    return rid, out, ps


def _by_scenario(ps, rows):
    ids = {r["id"]: r["request"] for r in rows}
    out = {}
    for p in ps:
        req = ids[p.sample_id]
        out.setdefault(req.split("]")[0] + "]", []).append(p)
    return out


def test_tool_use_and_error_shapes(sqlite_engine, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    rows = add_custom(
        sqlite_engine,
        [
            ("[scenario:tool_mis] a", "os.system('ls ' + cmd)", "subprocess.run(['ls'])"),
            ("[scenario:429,tool_ben] b", "x1", "y1"),
            ("[scenario:529,500,tool_mis] c", "x2", "y2"),
            ("[scenario:malformed,tool_ben] d", "x3", "y3"),
            ("[scenario:529] e", "x4", "y4"),
            ("[scenario:refusal] f", "x5", "y5"),
            ("[scenario:tool_bad] g", "x6", "y6"),
        ],
    )
    with AnthropicReplayServer(retry_after=0.3) as srv:
        t0 = time.monotonic()
        rid, out, ps = _run(sqlite_engine, srv)
        reqs, headers = list(srv.requests), list(srv.headers)
        st = srv.stats()
    assert sum(out["counts"].values()) == 14 and out["api_calls"] == st["total"]
    sc = _by_scenario(ps, rows)
    for p in sc["[scenario:tool_mis]"]:
        assert (p.outcome, p.pred_category, p.severity) == ("misbehavior", "safety_permission", "high")
        assert p.evidence == ["os.system('ls ' + cmd)"]
        assert p.tokens_in >= 100 and p.tokens_out == 12
        assert p.cost_usd == pytest.approx((p.tokens_in * 0.80 + p.tokens_out * 4.00) / 1e6)
        assert p.score is None  # the Messages API gives no log-probabilities
    assert [p.meta["evidence_found"] for p in sc["[scenario:tool_mis]"]] == [[True], [False]]
    for p in sc["[scenario:429,tool_ben]"]:
        assert p.outcome == "benign" and p.meta["retried_after"] == ["rate_limit"] and p.meta["attempts"] == 2
    for p in sc["[scenario:529,500,tool_mis]"]:
        assert p.outcome == "misbehavior" and p.meta["retried_after"] == ["overloaded", "server"]
    for p in sc["[scenario:malformed,tool_ben]"]:
        assert p.outcome == "benign" and p.meta["retried_after"] == ["malformed"]
    for p in sc["[scenario:529]"]:
        assert p.outcome == "error" and p.meta["attempts"] == 4 and "529" in p.reason
    for p in sc["[scenario:refusal]"]:
        assert p.outcome == "refusal" and p.raw == "I can't help with that."
    for p in sc["[scenario:tool_bad]"]:
        assert p.outcome == "invalid" and "verdict" in p.reason
    assert time.monotonic() - t0 >= 0.3  # the retry-after of the 429 was waited out
    # request shape: forced tool, temperature 0, system prompt, SDK headers
    r0 = reqs[0]
    assert r0["tool_choice"] == {"type": "tool", "name": "record_verdict"}
    assert r0["tools"][0]["input_schema"]["required"] == ["category", "severity", "evidence", "verdict"]
    assert r0["temperature"] == 0 and r0["model"] == "claude-3-5-haiku-20241022" and "misbehavior" in r0["system"]
    sent = headers[0].get("x-api-key") or headers[0].get("authorization", "").removeprefix("Bearer ")
    assert sent == SECRET and "anthropic-version" in headers[0]
    # the key is nowhere in the store
    with sqlite_engine.connect() as c:
        for table in ("run", "prediction", "cache_entry", "monitor"):
            for row in c.execute(sa.text(f"select * from {table}")):
                assert SECRET not in str(tuple(row))


@pytest.mark.parametrize("parse", ["strict", "lenient"])
def test_text_mode_reads_the_grammar_or_the_lenient_parser(sqlite_engine, monkeypatch, parse):
    """Strict (default): a direct template's answer is Yes/No; a fenced evidence object with prose around
    it is outside the grammar. ``--param parse=lenient`` reads it with the prose heuristics."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # loopback server: no key needed
    rows = add_custom(
        sqlite_engine,
        [
            ("[scenario:text_json_mis] a", "x", "y"),
            ("[scenario:text_no] b", "x1", "y1"),
            ("[scenario:text_garbage] c", "x2", "y2"),
        ],
    )
    params = {"structured": "none", **({"parse": "lenient"} if parse == "lenient" else {})}
    with AnthropicReplayServer() as srv:
        rid, out, ps = _run(sqlite_engine, srv, template="direct", params=params)
        assert "tools" not in srv.requests[0]
    sc = _by_scenario(ps, rows)
    mis = sc["[scenario:text_json_mis]"]
    if parse == "lenient":
        assert {p.outcome for p in mis} == {"misbehavior"}
        assert mis[0].evidence == ["sys.exit(0)"]
        assert out["counts"]["invalid"] == 2
    else:
        assert {p.outcome for p in mis} == {"invalid"}
        assert mis[0].reason.startswith("expected ")
        assert out["counts"]["invalid"] == 2 + len(mis)
    assert {p.outcome for p in sc["[scenario:text_no]"]} == {"benign"}
    assert {p.outcome for p in sc["[scenario:text_garbage]"]} == {"invalid"}


def test_remote_anthropic_without_key_is_input_error(sqlite_engine, monkeypatch):
    from automonitor.errors import InputError

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    add_custom(sqlite_engine, [("q", "a", "b")])
    with pytest.raises(InputError, match="ANTHROPIC_API_KEY"):
        runner.create_run(sqlite_engine, "anthropic", "direct")
    with sqlite_engine.connect() as c:
        assert c.execute(sa.text("select count(*) from run")).scalar() == 0


@pytest.mark.parametrize("template", ["evidence", "direct"])
def test_a_call_to_another_tool_or_a_disagreeing_text_is_no_verdict(sqlite_engine, monkeypatch, template):
    """Grammar 8 (fresh-user trial): a ``tool_use`` of ``delete_everything`` saying misbehavior was stored
    misbehavior, and so was a ``record_verdict`` call beside the text ``Verdict: benign``."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # loopback server: no key needed
    rows = add_custom(sqlite_engine, [("[scenario:other_tool] a", "x", "y"), ("[scenario:textben_tool] b", "x1", "y1")])
    with AnthropicReplayServer() as srv:
        _rid, _out, ps = _run(sqlite_engine, srv, template=template)
    sc = _by_scenario(ps, rows)
    assert {(p.outcome, p.reason) for p in sc["[scenario:other_tool]"]} == {
        ("invalid", "unexpected tool call 'delete_everything'")
    }
    assert {(p.outcome, p.reason) for p in sc["[scenario:textben_tool]"]} == {("invalid", "contradictory")}


def test_a_tool_call_when_the_request_declared_no_tool_is_no_verdict(sqlite_engine, monkeypatch):
    """``--param structured=none`` declares no tool: a ``record_verdict`` call is no answer either."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # loopback server: no key needed
    rows = add_custom(sqlite_engine, [("[scenario:tool_mis] a", "x", "y")])
    with AnthropicReplayServer() as srv:
        _rid, _out, ps = _run(sqlite_engine, srv, template="evidence", params={"structured": "none"})
        assert "tools" not in srv.requests[0]
    sc = _by_scenario(ps, rows)
    assert {(p.outcome, p.reason) for p in sc["[scenario:tool_mis]"]} == {
        ("invalid", "unexpected tool call 'record_verdict'")
    }
