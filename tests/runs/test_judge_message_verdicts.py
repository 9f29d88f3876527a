"""Every verdict a judge's message carries must agree (fresh-user trial, issue 41): its text and each tool
call. Before, a tool call overrode the text and only the first of several tool calls was read or stored
(text ``No`` + a tool call ``{"verdict": "misbehavior"}`` -> misbehavior; two tool calls misbehavior then
benign -> misbehavior, the raw answer holding the first call only)."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automonitor.runs.answers import CONTRADICTORY
from automonitor.runs.monitors import create_backend
from automonitor.runs.monitors.judgement import Item, TransientError
from automonitor.runs.monitors.openai_backend import read_message
from automonitor.runs.prompts import PromptBuilder, load_template
from servers.openai_fault import OpenAIFaultServer

M, B = "misbehavior", "benign"


def _judge(srv: OpenAIFaultServer, template: str, params: dict[str, object]):
    b = create_backend(
        "openai:gpt-4o-mini",
        base_url=srv.base_url,
        params={"timeout": 5, **params},
        prompt=PromptBuilder(load_template(template)),
    )
    item = Item(sample_id="s", request="Fix it", response="os.system('x')", content_hash="h", repeat=0)

    async def go():
        try:
            return await b.judge(item, lambda: None)
        finally:
            await b.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("action,calls", [("toolmix", 1), ("tooltwo", 2)])
def test_a_message_whose_text_and_tool_calls_disagree_is_contradictory_on_a_real_server(action, calls):
    with OpenAIFaultServer() as srv:
        srv.force = action
        j = _judge(srv, "direct", {"structured": "tools"})
    assert (j.outcome, j.reason) == ("invalid", CONTRADICTORY), (j.outcome, j.reason, j.raw)
    raw = json.loads(j.raw)
    said = [json.loads(c["arguments"])["verdict"] for c in raw.get("tool_calls", [raw])]
    assert said == [M, B][:calls]  # the drill-down shows every call the judge made, in order
    if action == "toolmix":
        assert raw["text"] == "No"


def _msg(text: str | None, verdicts: list[object]) -> SimpleNamespace:
    calls = [
        SimpleNamespace(function=SimpleNamespace(name="record_verdict", arguments=json.dumps({"verdict": v})))
        for v in verdicts
    ]
    return SimpleNamespace(content=text, tool_calls=calls)


TEXTS = st.sampled_from(["", "Yes", "No", "Yes.", "No, the code is fine.", "Calling the tool.", "Verdict: No"])


@given(
    st.lists(st.sampled_from([M, B, "maybe", 1]), min_size=1, max_size=4), TEXTS, st.sampled_from(["strict", "lenient"])
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_message_is_scored_only_when_every_verdict_it_carries_agrees(verdicts, text, mode):
    """Any number of tool calls (valid or not) beside any text: a verdict only when every tool call is a
    valid verdict and every verdict (calls and text) is the same side; the raw answer keeps every call."""
    raw, r = read_message(_msg(text, verdicts), text, "tool_calls", "direct", mode)
    text_side = {"Yes": M, "Yes.": M, "No": B, "No, the code is fine.": B, "Verdict: No": B}.get(text)
    reads = {M: M, B: B, **({1: M} if mode == "lenient" else {})}  # the lenient reader takes 1 as yes
    call_sides = [reads.get(v) for v in verdicts]
    sides = set(call_sides) | ({text_side} if text_side else set())
    if None not in call_sides and len(sides) == 1:
        assert r.outcome == call_sides[0], (verdicts, text, r)
    else:
        assert r.outcome not in (M, B), (verdicts, text, r)
        if None not in call_sides:
            assert r.reason == CONTRADICTORY, (verdicts, text, r)
    stored = json.loads(raw)
    calls = stored.get("tool_calls", [stored])
    assert [json.loads(c["arguments"])["verdict"] for c in calls] == verdicts
    assert stored.get("text", "") == text


@pytest.mark.parametrize("transport", ["direct", "sdk", "httpx"])
def test_an_error_body_with_status_200_names_the_servers_message(transport):
    """``{"error": {"message": "upstream quota exceeded"}}`` with status 200 failed the run as it should, but
    the message read "'types.SimpleNamespace' object has no attribute 'choices'"."""
    with OpenAIFaultServer() as srv:
        srv.force = "errbody"
        with pytest.raises(TransientError) as err:
            _judge(srv, "direct", {"transport": transport})
    assert "upstream quota exceeded" in str(err.value) and "SimpleNamespace" not in str(err.value)
