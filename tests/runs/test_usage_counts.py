"""One implausible usage field from a judge server must not lose the run (fresh-user trial:
``"usage": {"completion_tokens": 1e30}`` ended in "RuntimeError: result writer failed: Python int too large
to convert to SQLite INTEGER", the run failed with samples pending). Token counts are validated where the
response is read (:class:`OpenAIUsage`, :class:`AnthropicUsage`, both through :func:`token_count`): a count
that is not an integer in ``[0, 2**31)`` is dropped (0, unknown) and flagged in ``meta["tokens_clamped"]``
as negative counts are; the answer itself is still read."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlmodel import Session, select

from automonitor.runs import runner
from automonitor.runs.monitors.judgement import (
    TOKEN_COUNT_LIMIT,
    AnthropicUsage,
    OpenAIUsage,
    token_count,
)
from servers.anthropic_replay import AnthropicReplayServer
from servers.data import add_custom
from servers.openai_fault import OpenAIFaultServer
from store.models import Prediction, Run

FAST = {"backoff_initial": 0.01, "backoff_max": 0.05, "timeout": 10}

# (value as the server sends it, what meta["tokens_clamped"] records; None: not flagged)
BAD = [
    (1e30, 1e30),
    (2**70, str(2**70)),
    (-5, -5),
    ("12", "12"),
    (3.5, 3.5),
    (None, None),  # not reported: unknown, nothing to flag
]

counts = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
)


def _ok(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0 <= value < TOKEN_COUNT_LIMIT
    return isinstance(value, float) and value.is_integer() and 0 <= value < TOKEN_COUNT_LIMIT


@settings(max_examples=300, deadline=None)
@given(counts)
def test_token_count_keeps_only_integers_in_range_and_flags_the_rest(value):
    meta: dict = {}
    n = token_count(value, meta, "completion_tokens")
    assert type(n) is int and 0 <= n < TOKEN_COUNT_LIMIT
    if _ok(value):
        assert n == value and meta == {}
    elif value is None:
        assert n == 0 and meta == {}
    else:
        assert n == 0 and "completion_tokens" in meta["tokens_clamped"]
        json.dumps(meta, allow_nan=False)  # the flag is stored as JSON: a number JSON holds, or a string


@settings(max_examples=200, deadline=None)
@given(counts, counts, counts)
def test_usage_models_read_any_usage_without_raising(prompt, completion, cached):
    meta: dict = {}
    u = OpenAIUsage.read(
        {"prompt_tokens": prompt, "completion_tokens": completion, "prompt_tokens_details": {"cached_tokens": cached}},
        meta,
    )
    for got in (u.prompt_tokens, u.completion_tokens, u.cached_tokens):
        assert 0 <= got < TOKEN_COUNT_LIMIT
    a = AnthropicUsage.read({"input_tokens": prompt, "output_tokens": completion}, meta)
    assert 0 <= a.input_tokens < TOKEN_COUNT_LIMIT and 0 <= a.output_tokens < TOKEN_COUNT_LIMIT
    assert OpenAIUsage.read("not an object", meta).prompt_tokens == 0 and "usage" in meta["tokens_clamped"]


def _preds(engine, rid) -> list[Prediction]:
    with Session(engine) as s:
        return list(s.exec(select(Prediction).where(Prediction.run_id == rid).order_by(Prediction.id)))


@pytest.mark.parametrize("transport", ["direct", "sdk"])
@pytest.mark.parametrize(("value", "flagged"), BAD, ids=[repr(v) for v, _ in BAD])
def test_an_implausible_completion_count_is_dropped_and_the_run_finishes(sqlite_engine, transport, value, flagged):
    add_custom(sqlite_engine, [("q", "x", "y")])
    with OpenAIFaultServer() as srv:
        srv.usage = {"completion_tokens": value}
        rid = runner.create_run(
            sqlite_engine,
            "openai:gpt-4o-mini",
            "direct",
            base_url=srv.base_url,
            params={**FAST, "transport": transport},
        )
        out = runner.execute_run(sqlite_engine, rid)
    assert out["counts"]["benign"] == 2 and out["counts"].get("error", 0) == 0, out
    with Session(sqlite_engine) as s:
        run = s.get(Run, rid)
        assert run is not None and run.status == "finished" and run.tokens_out == 0
    preds = _preds(sqlite_engine, rid)
    assert len(preds) == 2
    for p in preds:
        assert p.outcome == "benign"  # the answer itself is still read
        assert p.tokens_out == 0 and p.tokens_in > 0  # the plausible prompt count is kept
        if flagged is None:
            assert "tokens_clamped" not in p.meta
        else:
            assert p.meta["tokens_clamped"] == {"completion_tokens": flagged}


@pytest.mark.parametrize(("value", "flagged"), BAD[:5], ids=[repr(v) for v, _ in BAD[:5]])
def test_anthropic_implausible_output_count_is_dropped(sqlite_engine, value, flagged):
    add_custom(sqlite_engine, [("q", "x", "y")])
    with AnthropicReplayServer() as srv:
        srv.usage = {"output_tokens": value}
        rid = runner.create_run(
            sqlite_engine, "anthropic", "direct", base_url=srv.root_url, params={**FAST, "structured": "none"}
        )
        out = runner.execute_run(sqlite_engine, rid)
    assert out["counts"]["benign"] == 2, out
    for p in _preds(sqlite_engine, rid):
        assert p.tokens_out == 0 and p.tokens_in > 0
        assert p.meta["tokens_clamped"] == {"output_tokens": flagged}
