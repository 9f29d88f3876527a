"""Judges as the providers answer them:
reasoning models, fail-fast on run-wide permanent errors, provider stop reasons, list-shaped content,
empty answers not cached, strict typed parameters, bounded answers, a total request deadline and clamped
token counts. The real ``openai`` SDK talks to the loopback server ``servers.openai_fault`` answering with
OpenAI's own error bodies; the ``anthropic`` SDK to the documented-shape replay server."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlmodel import Session, select

from automonitor.runs import runner
from automonitor.runs.runner.execute import run_async
from automonitor.errors import InputError
from automonitor.runs.monitors.judgement import RAW_STORE_CHARS
from servers.anthropic_replay import AnthropicReplayServer
from servers.data import add_custom, add_pairs
from servers.openai_fault import OpenAIFaultServer
from store.models import CacheEntry, Prediction, Run

FAST = {"backoff_initial": 0.01, "backoff_max": 0.05, "timeout": 10}


def _preds(engine, rid) -> list[Prediction]:
    with Session(engine) as s:
        return list(s.exec(select(Prediction).where(Prediction.run_id == rid).order_by(Prediction.id)))


def _run(engine, rid) -> Run:
    with Session(engine) as s:
        run = s.get(Run, rid)
        assert run is not None
        return run


def _n_cache(engine) -> int:
    with Session(engine) as s:
        return len(list(s.exec(select(CacheEntry))))


# ------------------------------------------------------------------ 26.1 reasoning models


def test_reasoning_family_gets_max_completion_tokens_no_temperature(sqlite_engine):
    add_pairs(sqlite_engine, 2)
    with OpenAIFaultServer() as srv:
        srv.reasoning = True
        rid = runner.create_run(sqlite_engine, "openai:o3-mini", "direct", base_url=srv.base_url, params=FAST)
        out = runner.execute_run(sqlite_engine, rid)
        reqs = list(srv.requests)
    assert out["counts"]["misbehavior"] == out["counts"]["benign"] == 2
    assert out["api_calls"] == 4  # no request refused
    for body in reqs:
        assert "max_tokens" not in body and body["max_completion_tokens"] == 4096
        assert "temperature" not in body and "logprobs" not in body
    sent = _run(sqlite_engine, rid).params["sent"]
    assert sent["token_param"] == "max_completion_tokens" and sent["temperature"] is None


@pytest.mark.parametrize("model", ["gpt-5-mini", "o1", "o4-mini", "openai/gpt-5-nano"])
def test_reasoning_families_in_batch_and_generation_bodies(sqlite_engine, model):
    from automonitor.runs.monitors import create_backend
    from automonitor.runs.prompts import PromptBuilder, load_template

    b = create_backend(
        f"openai:{model}", base_url="http://127.0.0.1:9/v1", params={}, prompt=PromptBuilder(load_template("direct"))
    )
    body = b._request("s", "u")  # the body live calls and the batch request file both send
    assert "max_tokens" not in body and "temperature" not in body and body["max_completion_tokens"] == 4096


def test_generation_body_for_reasoning_model(sqlite_engine):
    from automonitor.runs.monitors import create_backend
    from automonitor.runs.prompts import PromptBuilder, load_template

    with OpenAIFaultServer() as srv:
        srv.reasoning = True
        b = create_backend(
            "openai:gpt-5-mini", base_url=srv.base_url, params={}, prompt=PromptBuilder(load_template("direct"))
        )
        g = run_async(b.generate([{"role": "user", "content": "hello"}], lambda: None, max_tokens=50, temperature=0.7))
        body = srv.requests[-1]
    assert g.text in ("Yes", "No") and body["max_completion_tokens"] == 50 and "max_tokens" not in body


def test_unknown_model_family_drops_refused_parameters_once(sqlite_engine):
    """A deployment name the family rule cannot know: each refused parameter is fixed once for the run
    (max_tokens -> max_completion_tokens, temperature dropped, logprobs off) and recorded."""
    add_pairs(sqlite_engine, 2)
    with OpenAIFaultServer() as srv:
        srv.reasoning = True
        rid = runner.create_run(
            sqlite_engine, "openai:my-reasoner-deploy", "direct", base_url=srv.base_url, concurrency=1, params=FAST
        )
        out = runner.execute_run(sqlite_engine, rid)
        total = srv.stats()["total"]
    assert out["counts"]["misbehavior"] == out["counts"]["benign"] == 2 and out["counts"]["error"] == 0
    assert total == out["api_calls"] == 4 + 3
    sent = _run(sqlite_engine, rid).params["sent"]
    assert sent["dropped"] == ["max_tokens", "temperature"] and sent["logprobs"] is False
    assert sent["token_param"] == "max_completion_tokens"


def test_reasoning_effort_is_sent_and_keys_the_cache(sqlite_engine):
    add_pairs(sqlite_engine, 1)
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(
            sqlite_engine, "openai:o4-mini", "direct", base_url=srv.base_url, params={**FAST, "reasoning_effort": "low"}
        )
        runner.execute_run(sqlite_engine, rid)
        assert all(b["reasoning_effort"] == "low" for b in srv.requests)
        rid2 = runner.create_run(sqlite_engine, "openai:o4-mini", "direct", base_url=srv.base_url, params=FAST)
        out2 = runner.execute_run(sqlite_engine, rid2)
        assert "reasoning_effort" not in srv.requests[-1]
    assert out2["cache_hits"] == 0 and out2["api_calls"] == 2


def test_anthropic_thinking_budget(sqlite_engine):
    add_custom(sqlite_engine, [("[scenario:thinking] q", "x", "y")])
    with AnthropicReplayServer() as srv:
        rid = runner.create_run(
            sqlite_engine,
            "anthropic:claude-sonnet-4-5",
            "direct",
            base_url=srv.root_url,
            params={**FAST, "thinking_budget": 2048},
        )
        out = runner.execute_run(sqlite_engine, rid)
        body = srv.requests[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 2048 + 64 and "temperature" not in body and body["tool_choice"] == {"type": "auto"}
    assert out["counts"]["benign"] == 2  # the thinking block's "Yes" is reasoning, not the verdict
    assert all(p.meta.get("reasoning_chars") for p in _preds(sqlite_engine, rid))
    with pytest.raises(InputError, match="thinking_budget"):
        runner.create_run(sqlite_engine, "anthropic:x", "direct", base_url=srv.root_url, params={"thinking_budget": 10})


# ------------------------------------------------------------------ 26.2 fail-fast


@pytest.mark.parametrize("fault", ["401", "404"])
def test_fail_fast_on_run_wide_permanent_errors(engine, fault):
    add_pairs(engine, 6)
    with OpenAIFaultServer() as srv:
        srv.force = fault
        rid = runner.create_run(
            engine, "openai:gpt-4o-mini", "direct", base_url=srv.base_url, concurrency=1, params=FAST
        )
        runner.execute_run(engine, rid)
        assert srv.stats()["total"] == 3  # stopped after three identical failures
        run = _run(engine, rid)
        assert run.status == "failed"
        assert (
            ("invalid_api_key" in run.error and "OPENAI_API_KEY" in run.error)
            if fault == "401"
            else ("model_not_found" in run.error and "model name" in run.error)
        )
        assert f"--resume {rid}" in run.error
        assert all(p.outcome is None for p in _preds(engine, rid)) and _n_cache(engine) == 0
        srv.force = None  # the cause is fixed
        out = runner.execute_run(engine, rid)
    assert out["counts"]["misbehavior"] == out["counts"]["benign"] == 6
    assert _run(engine, rid).status == "finished"


def test_fail_fast_cli_exit_1_one_line(sqlite_url, cli, sqlite_engine):
    # sqlite_engine: sqlite_url is a copy of the run's migrated empty store (the migrations are not under test)
    from store import get_engine

    eng = get_engine(sqlite_url)
    from store import init_db

    init_db(eng)
    add_pairs(eng, 4)
    with OpenAIFaultServer() as srv:
        srv.force = "401"
        r = cli(
            [
                "run",
                "--monitor",
                "openai:gpt-4o-mini",
                "--template",
                "direct",
                "--base-url",
                srv.base_url,
                "--concurrency",
                "1",
                "--quiet",
                "--param",
                "backoff_initial=0.01",
            ],
            db=sqlite_url,
        )
        assert r.returncode == 1, r.stderr
        line = [x for x in r.stderr.splitlines() if "failed:" in x]
        assert len(line) == 1 and "HTTP 401 invalid_api_key" in line[0] and "set a valid OPENAI_API_KEY" in line[0]
        assert srv.stats()["total"] == 3
        rid = r.stderr.split("run ", 1)[1].split()[0]
        srv.force = None
        r2 = cli(["run", "--resume", rid, "--quiet"], db=sqlite_url)
    assert r2.returncode == 0, r2.stderr
    assert "finished" in r2.stdout and "error=0" in r2.stdout
    eng.dispose()


# ------------------------------------------------------------------ 26.3 stop reasons, 26.4 list content


def test_content_filter_is_unscored_whatever_the_text(sqlite_engine):
    add_custom(sqlite_engine, [("[scenario:filtered] q", "x", "y")])
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(sqlite_engine, "openai:gpt-4o-mini", "direct", base_url=srv.base_url, params=FAST)
        out = runner.execute_run(sqlite_engine, rid)
    # the provider's filter cut the answer off: invalid, never the judge's refusal
    assert out["counts"]["invalid"] == 2 and out["counts"]["refusal"] == 0 and out["counts"]["benign"] == 0
    assert all(p.reason.startswith("content_filter") for p in _preds(sqlite_engine, rid))
    assert _n_cache(sqlite_engine) == 0  # the provider's filter is not the judge's answer: asked again


@given(
    st.sampled_from(["normal", "truncated", "refusal", "filtered", None]),
    st.text(max_size=12),
    st.one_of(st.none(), st.text(max_size=40)),
)
@settings(max_examples=300, deadline=None)
def test_only_the_judges_own_refusal_is_a_refusal(kind, stop, raw):
    """Rule: ``refusal`` means the judge declined (stop kind ``refusal``) and nothing else; a content-filtered
    answer (kind ``filtered``) is a cut-off answer: ``invalid``, reason ``content_filter...``, not cached,
    whatever text (a refusal, a verdict) came with it."""
    from automonitor.runs.monitors.judgement import Billed, stop_judgement

    j = stop_judgement(kind, stop, raw, Billed(1, 1, 0.0), {})
    if kind == "normal":
        assert j is None
        return
    assert j is not None
    assert (j.outcome == "refusal") == (kind == "refusal"), (kind, j.outcome)
    if kind == "filtered":
        assert j.outcome == "invalid" and j.reason is not None and j.reason.startswith("content_filter")
        assert not j.cacheable


def test_anthropic_context_window_exceeded_is_truncated(sqlite_engine):
    add_custom(sqlite_engine, [("[scenario:ctxcut] q", "x", "y")])
    with AnthropicReplayServer() as srv:
        rid = runner.create_run(
            sqlite_engine, "anthropic", "direct", base_url=srv.root_url, params={**FAST, "structured": "none"}
        )
        out = runner.execute_run(sqlite_engine, rid)
    assert out["counts"]["invalid"] == 2 and out["counts"]["misbehavior"] == 0
    assert {p.reason for p in _preds(sqlite_engine, rid)} == {"truncated"}


def test_unknown_stop_reason_is_unscored():
    from automonitor.runs.monitors.anthropic_backend import AnthropicBackend
    from automonitor.runs.monitors.judgement import Billed, stop_judgement

    kind = AnthropicBackend.stop_reasons.get("pause_turn")
    j = stop_judgement(kind, "pause_turn", "Yes", Billed(1, 1, 0.0), {})
    assert j is not None and j.outcome == "invalid" and not j.cacheable


def test_list_shaped_content_reads_text_parts(sqlite_engine):
    add_custom(sqlite_engine, [("[scenario:parts] q", "x", "y")])
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(sqlite_engine, "openai:mistral-small", "direct", base_url=srv.base_url, params=FAST)
        out = runner.execute_run(sqlite_engine, rid)
    assert out["counts"]["benign"] == 2 and out["counts"]["error"] == 0
    assert all(p.raw == "No" and p.meta["reasoning_chars"] > 0 for p in _preds(sqlite_engine, rid))


# ------------------------------------------------------------------ 26.5 empty answers, --retry invalid


def test_empty_answer_is_not_cached_and_asked_again(engine):
    add_custom(engine, [("[scenario:empty,ok] q", "x", "y")])
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(engine, "openai:gpt-4o-mini", "direct", base_url=srv.base_url, params=FAST)
        out = runner.execute_run(engine, rid)
        assert out["counts"]["invalid"] == 2 and _n_cache(engine) == 0
        rid2 = runner.create_run(engine, "openai:gpt-4o-mini", "direct", base_url=srv.base_url, params=FAST)
        out2 = runner.execute_run(engine, rid2)
    assert out2["cache_hits"] == 0 and out2["api_calls"] == 2 and out2["counts"]["benign"] == 2


def test_retry_invalid_reasks_cached_invalid(engine):
    add_custom(engine, [("[scenario:garbage,ok] q", "x", "y")])
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(engine, "openai:gpt-4o-mini", "direct", base_url=srv.base_url, params=FAST)
        out = runner.execute_run(engine, rid)
        assert out["counts"]["invalid"] == 2 and _n_cache(engine) == 2  # a real answer without a verdict
        assert runner.retry_errors(engine, rid) == 0  # errors only by default
        assert runner.retry_errors(engine, rid, ("error", "invalid")) == 2
        out2 = runner.execute_run(engine, rid)
    assert out2["api_calls_this_process"] == 2 and out2["counts"]["benign"] == 2
    assert out2["api_calls"] == out["api_calls"] + 2 == 4  # the whole run's: the first pass's and the retry's
    assert all(p.meta["history"][0]["outcome"] == "invalid" for p in _preds(engine, rid))
    with pytest.raises(InputError, match="verdict"):
        runner.retry_errors(engine, rid, ("benign",))


# ------------------------------------------------------------------ 26.6 strict typed parameters


def test_unknown_param_exits_2_naming_it_and_the_accepted_ones(sqlite_url, cli, sqlite_engine):
    # sqlite_engine: sqlite_url is a copy of the run's migrated empty store (the migrations are not under test)
    from store import get_engine, init_db

    eng = get_engine(sqlite_url)
    init_db(eng)
    add_pairs(eng, 1)
    r = cli(
        [
            "run",
            "--monitor",
            "openai:gpt-4o-mini",
            "--template",
            "direct",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--param",
            "top_p=0.1",
            "--param",
            "reasoning_effort=low",
        ],
        db=sqlite_url,
    )
    assert r.returncode == 2
    assert "top_p" in r.stderr and "reasoning_effort" in r.stderr and "max_attempts" in r.stderr
    with Session(eng) as s:
        assert list(s.exec(select(Run))) == []
    eng.dispose()


@pytest.mark.parametrize(
    "backend,params,match",
    [
        ("openai", {"reasoning_effort": "extreme"}, "reasoning_effort"),
        ("openai", {"logprobs": "maybe"}, "logprobs"),
        ("anthropic", {"structured": "json_schema"}, "structured"),
        ("anthropic", {"seed": 1}, "does not take 'seed'"),
        ("rules", {"temperature": 0}, "does not take 'temperature'") if False else ("rules", {"foo": 1}, "foo"),
    ],
)
def test_params_are_typed_per_backend(sqlite_engine, backend, params, match):
    add_pairs(sqlite_engine, 1)
    with pytest.raises(InputError, match=match):
        runner.create_run(
            sqlite_engine,
            backend,
            "direct",
            base_url=None if backend == "rules" else "http://127.0.0.1:9/v1",
            params=params,
        )


# ------------------------------------------------------------------ 22.6 bounded answers, 22.7 deadline, 22.14


@pytest.mark.slow
def test_huge_answer_is_invalid_and_stored_bounded(engine):
    add_custom(engine, [("[scenario:huge] q", "x", "y")])
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(engine, "openai:gpt-4o-mini", "direct", base_url=srv.base_url, params=FAST)
        out = runner.execute_run(engine, rid)
    assert out["counts"]["invalid"] == 2 and out["counts"]["misbehavior"] == 0
    for p in _preds(engine, rid):
        assert p.reason.startswith("answer over budget") and len(p.raw) <= RAW_STORE_CHARS
        assert p.meta["raw_truncated"] is True and p.meta["raw_chars"] == 10_000_000
    with Session(engine) as s:
        assert all(len(c.raw or "") <= RAW_STORE_CHARS for c in s.exec(select(CacheEntry)))


def test_an_answer_far_over_its_token_budget_is_not_a_verdict():
    """The per-token rule (a 2 KB answer for max_tokens 16), below the byte cap: no tokenizer writes 32
    characters a token, so the answer was not produced under the budget the request set."""
    from automonitor.runs.monitors.judgement import CHARS_PER_TOKEN_MAX, over_budget
    from automonitor.runs.parsing import ANSWER_CHAR_CAP

    assert over_budget("Yes. " * 400, 16) == "answer over budget: 2000 characters for max_tokens 16"
    assert over_budget("x" * (16 * CHARS_PER_TOKEN_MAX + 200), 16) is None  # at the limit: still a verdict
    assert over_budget("misbehavior", 16) is None and over_budget("", 16) is None
    assert over_budget("x" * (ANSWER_CHAR_CAP + 1), None).endswith(f"> the {ANSWER_CHAR_CAP} cap")


def test_trickling_server_ends_as_timeout(sqlite_engine):
    add_custom(sqlite_engine, [("[scenario:trickle] q", "x", "y")])
    with OpenAIFaultServer() as srv:
        srv.trickle_s = 0.5
        rid = runner.create_run(
            sqlite_engine,
            "openai:gpt-4o-mini",
            "direct",
            base_url=srv.base_url,
            params={**FAST, "timeout": 1.5, "max_attempts": 1},
        )
        t0 = time.monotonic()
        out = runner.execute_run(sqlite_engine, rid)
        took = time.monotonic() - t0
    assert out["counts"]["error"] == 2 and took < 10  # a per-read timeout alone would wait minutes
    assert {p.meta["error_kind"] for p in _preds(sqlite_engine, rid)} == {"timeout"}


def test_negative_token_counts_are_clamped_and_flagged(sqlite_engine):
    add_custom(sqlite_engine, [("[scenario:negtokens] q", "x", "y")])
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(sqlite_engine, "openai:gpt-4o-mini", "direct", base_url=srv.base_url, params=FAST)
        runner.execute_run(sqlite_engine, rid)
    for p in _preds(sqlite_engine, rid):
        assert p.tokens_in == 0 and p.tokens_out == 0 and p.cost_usd == 0.0
        assert p.meta["tokens_clamped"] == {"prompt_tokens": -1000000000, "completion_tokens": -5}
    assert _run(sqlite_engine, rid).tokens_in == 0


def test_anthropic_negative_tokens_clamped(sqlite_engine):
    add_custom(sqlite_engine, [("[scenario:negtokens] q", "x", "y")])
    with AnthropicReplayServer() as srv:
        rid = runner.create_run(
            sqlite_engine, "anthropic", "direct", base_url=srv.root_url, params={**FAST, "structured": "none"}
        )
        out = runner.execute_run(sqlite_engine, rid)
    assert out["counts"]["benign"] == 2
    assert all(p.tokens_in == 0 and "input_tokens" in p.meta["tokens_clamped"] for p in _preds(sqlite_engine, rid))


# ------------------------------------------------------------------ 26.11 the direct transport


def test_direct_transport_gives_the_sdk_outcomes(sqlite_engine):
    """The lean default (``transport=direct``, bare aiohttp) classifies answers and failures as ``transport=sdk`` does."""
    items = [
        ("[scenario:429,ok] a", "os.system('x')", "y"),
        ("[scenario:500] b", "x", "y"),
        ("[scenario:truncated,ok] c", "x", "y"),
        ("[scenario:filtered] d", "x", "y"),
        ("[scenario:parts] e", "x", "y"),
        ("[scenario:garbage] f", "x", "y"),
        ("plain g", "sys.exit(0)", "fine"),
    ]
    add_custom(sqlite_engine, items)
    outcomes = {}
    for transport in ("sdk", "direct"):
        with Session(sqlite_engine) as s:  # each transport really asks
            for c in s.exec(select(CacheEntry)):
                s.delete(c)
            s.commit()
        with OpenAIFaultServer(retry_after=0.01, reject=("json_schema",)) as srv:
            rid = runner.create_run(
                sqlite_engine,
                "openai:gpt-4o-mini",
                "evidence",
                base_url=srv.base_url,
                params={**FAST, "max_attempts": 2, "transport": transport},
            )
            runner.execute_run(sqlite_engine, rid)
        outcomes[transport] = [
            (p.sample_id, p.outcome, p.score, p.meta.get("error_kind")) for p in _preds(sqlite_engine, rid)
        ]
    assert outcomes["direct"] == outcomes["sdk"]
    kinds = {o for _s, o, _sc, _k in outcomes["direct"]}
    # the filtered answer is invalid (the provider's filter cut it off), not refusal: no judge here declines
    assert {"misbehavior", "benign", "error", "invalid"} <= kinds and "refusal" not in kinds
