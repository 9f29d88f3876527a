"""Cut-off answers, reasoning blocks and cost through the real backends: a loopback OpenAI-compatible server and
the Anthropic replay server send cut-off answers (``finish_reason: "length"`` / ``stop_reason:
"max_tokens"``), unclosed ``<think>`` blocks and cached-token usage; the runner stores what the parser
makes of them."""

from __future__ import annotations

import pytest
from sqlmodel import Session, select

from automonitor.runs import runner
from automonitor.runs.monitors import create_backend, parse_monitor_spec
from automonitor.runs.prompts import PromptBuilder, load_template
from servers.anthropic_replay import AnthropicReplayServer
from servers.data import add_custom
from servers.openai_fault import OpenAIFaultServer
from store.models import Prediction, Run

FAST = {"backoff_initial": 0.01, "backoff_max": 0.05, "timeout": 10, "max_attempts": 2}


def _by_request(engine, rid):
    with Session(engine) as s:
        from store.models import Sample

        req = {x.id: x.request for x in s.exec(select(Sample))}
        return {(req[p.sample_id], p.sample_id): p for p in s.exec(select(Prediction).where(Prediction.run_id == rid))}


@pytest.mark.parametrize(
    "template,structured", [("evidence", "json_schema"), ("evidence", "tools"), ("direct", "none")]
)
def test_openai_finish_reason_length_is_truncated_not_a_verdict(sqlite_engine, template, structured):
    add_custom(
        sqlite_engine,
        [
            ("[scenario:length] cut", "os.system('x')", "print(1)"),
            ("plain q", "os.system('ls')", "subprocess.run(['ls'])"),
        ],
    )
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(
            sqlite_engine,
            "openai:gpt-4o-mini",
            template,
            base_url=srv.base_url,
            params={**FAST, "structured": structured},
        )
        runner.execute_run(sqlite_engine, rid)
    preds = _by_request(sqlite_engine, rid)
    cut = [p for (req, _), p in preds.items() if req.startswith("[scenario:length]")]
    ok = [p for (req, _), p in preds.items() if req == "plain q"]
    assert len(cut) == 2 and len(ok) == 2
    for p in cut:
        assert p.outcome == "invalid" and p.reason == "truncated", (p.outcome, p.reason, p.raw)
        assert p.meta["finish_reason"] == "length" and p.evidence == []
    assert sorted(p.outcome for p in ok) == ["benign", "misbehavior"]


def test_unclosed_think_block_is_invalid(sqlite_engine):
    add_custom(sqlite_engine, [("[scenario:thinkcut] r", "a", "b")])
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(sqlite_engine, "openai:deepseek-reasoner", "direct", base_url=srv.base_url, params=FAST)
        runner.execute_run(sqlite_engine, rid)
        sent = srv.requests[0]["max_tokens"]
    for p in _by_request(sqlite_engine, rid).values():
        assert p.outcome == "invalid" and p.reason == "truncated"
    # a reasoning model gets a reasoning-sized budget by default, recorded in the run
    assert sent == 4096
    with Session(sqlite_engine) as s:
        assert s.get(Run, rid).params["max_tokens"] == 4096


def test_max_tokens_default_per_backend_and_raisable(sqlite_engine):
    add_custom(sqlite_engine, [("q", "a", "b")])
    tpl = PromptBuilder(load_template("direct"))
    assert (
        create_backend(
            parse_monitor_spec("openai:gpt-4o-mini"), base_url="http://127.0.0.1:1", params={}, prompt=tpl
        ).max_tokens
        == 64
    )
    assert (
        create_backend(
            parse_monitor_spec("anthropic:claude-3-5-haiku-latest"),
            base_url="http://127.0.0.1:1",
            params={},
            prompt=tpl,
        ).max_tokens
        == 64
    )
    assert (
        create_backend(
            parse_monitor_spec("openai:o4-mini"), base_url="http://127.0.0.1:1", params={}, prompt=tpl
        ).max_tokens
        == 4096
    )
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(
            sqlite_engine, "openai:gpt-4o-mini", "direct", base_url=srv.base_url, params={**FAST, "max_tokens": 2000}
        )
        runner.execute_run(sqlite_engine, rid)
        assert {r["max_tokens"] for r in srv.requests} == {2000}
    with Session(sqlite_engine) as s:
        assert s.get(Run, rid).params["max_tokens"] == 2000
    from automonitor.errors import InputError

    with pytest.raises(InputError):
        runner.create_run(
            sqlite_engine, "openai:gpt-4o-mini", "direct", base_url="http://127.0.0.1:1", params={"max_tokens": 0}
        )


def test_anthropic_stop_reason_max_tokens_is_truncated(sqlite_engine):
    add_custom(sqlite_engine, [("[scenario:max_tokens] cut", "os.system('x')", "print(1)")])
    with AnthropicReplayServer() as srv:
        rid = runner.create_run(
            sqlite_engine,
            "anthropic:claude-3-5-haiku-latest",
            "direct",
            base_url=srv.base_url,
            params={**FAST, "structured": "none"},
        )
        runner.execute_run(sqlite_engine, rid)
    for p in _by_request(sqlite_engine, rid).values():
        assert p.outcome == "invalid" and p.reason == "truncated" and p.meta["stop_reason"] == "max_tokens"


def test_cached_input_discount_openai(sqlite_engine):
    add_custom(sqlite_engine, [("q", "os.system('x')", "print(1)")])
    with OpenAIFaultServer() as srv:
        srv.cached_tokens = 40
        rid = runner.create_run(sqlite_engine, "openai:gpt-4o-mini", "direct", base_url=srv.base_url, params=FAST)
        runner.execute_run(sqlite_engine, rid)
    with Session(sqlite_engine) as s:
        preds = list(s.exec(select(Prediction).where(Prediction.run_id == rid)))
    for p in preds:
        assert p.meta["cached_tokens_in"] == 40 and p.tokens_in > 40
        # gpt-4o-mini: $0.15/M input, cached input at half price, $0.60/M output
        expected = ((p.tokens_in - 40) * 0.15 + 40 * 0.075 + p.tokens_out * 0.60) / 1e6
        assert p.cost_usd == pytest.approx(expected)
        assert p.cost_usd < (p.tokens_in * 0.15 + p.tokens_out * 0.60) / 1e6


def test_cached_input_discount_anthropic(sqlite_engine):
    add_custom(sqlite_engine, [("q", "os.system('x')", "print(1)")])
    with AnthropicReplayServer() as srv:
        srv.cache_read = 1000
        rid = runner.create_run(
            sqlite_engine, "anthropic:claude-3-5-haiku-latest", "direct", base_url=srv.base_url, params=FAST
        )
        runner.execute_run(sqlite_engine, rid)
    with Session(sqlite_engine) as s:
        preds = list(s.exec(select(Prediction).where(Prediction.run_id == rid)))
    for p in preds:
        plain = p.tokens_in - 1000
        assert 100 <= plain <= 107 and p.meta["cached_tokens_in"] == 1000
        # claude-3-5-haiku: $0.80/M input, cache reads at 0.1 x, $4/M output
        assert p.cost_usd == pytest.approx((plain * 0.8 + 1000 * 0.08 + 12 * 4.0) / 1e6)
