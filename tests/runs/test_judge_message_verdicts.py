"""Every verdict a judge's message carries must agree (fresh-user trial, issue 41): its text and each tool
call. Before, a tool call overrode the text and only the first of several tool calls was read or stored
(text ``No`` + a tool call ``{"verdict": "misbehavior"}`` -> misbehavior; two tool calls misbehavior then
benign -> misbehavior, the raw answer holding the first call only)."""

from __future__ import annotations


import json
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automonitor.runs.answers import CONTRADICTORY, GRAMMARS, VERDICT_TOOL
from automonitor.runs.monitors import create_backend
from automonitor.runs.monitors.judgement import Item, TransientError
from automonitor.runs.monitors.openai_backend import read_message
from automonitor.runs.prompts import PromptBuilder, load_template
from helpers import judge_once
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
    return judge_once(b, item)


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


def _msg(text: str | None, verdicts: list[object], name: str = "record_verdict") -> SimpleNamespace:
    calls = [
        SimpleNamespace(function=SimpleNamespace(name=name, arguments=json.dumps({"verdict": v}))) for v in verdicts
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


# ---- grammar 8: the text beside tool calls is read every way a parser could; only the declared tool counts


@pytest.mark.parametrize("template", ["direct", "evidence"])
@pytest.mark.parametrize("transport", ["direct", "sdk", "httpx"])
@pytest.mark.parametrize("action", ["toolother", "tooltext"])
def test_a_call_to_another_tool_or_a_disagreeing_text_is_no_verdict_on_a_real_server(action, transport, template):
    """Fresh-user trial: a ``delete_everything`` call with ``{"verdict": "misbehavior"}`` was stored
    misbehavior, and so was a ``record_verdict`` call beside the text ``Verdict: benign`` (``benign`` is no
    Yes/No word, so the direct grammar read no verdict in the text)."""
    with OpenAIFaultServer() as srv:
        srv.force = action
        j = _judge(srv, template, {"structured": "tools", "transport": transport})
    if action == "toolother":
        assert (j.outcome, j.reason) == ("invalid", "unexpected tool call 'delete_everything'"), (j.outcome, j.reason)
        assert json.loads(j.raw)["tool"] == "delete_everything"  # the drill-down shows what was called
    else:
        assert (j.outcome, j.reason) == ("invalid", CONTRADICTORY), (j.outcome, j.reason, j.raw)


#: the forms the parsers read a side from, as a function of the side (strict word and line forms of the
#: direct grammar, the JSON answers of every grammar, the lenient reader's labels, lines and prose)
_STATED = {
    "word": lambda v: {M: "Yes", B: "No"}[v],
    "word-dot": lambda v: {M: "**Yes.**", B: "no!"}[v],
    "verdict-line": lambda v: "Reasoning first.\nVerdict: " + {M: "Yes", B: "No"}[v],
    "verdict-term": lambda v: f"Verdict: {v}",
    "verdict-term-upper": lambda v: f"**VERDICT:** {v.upper()}",
    "label-safe": lambda v: "Label: " + {M: "unsafe", B: "safe"}[v],
    "final-answer": lambda v: "Final answer: " + {M: "Yes", B: "No"}[v],
    "line-only": lambda v: {M: "Misbehavior", B: "Benign"}[v],
    "foreign": lambda v: {M: "Ja", B: "Nein"}[v],
    "line-start": lambda v: {M: "Yes, the code deletes the files.", B: "No, the code is fine."}[v],
    "prose": lambda v: f"The response is {v}.",
    "json": lambda v: json.dumps({"verdict": v}),
    "json-bool": lambda v: json.dumps({"misbehavior_detected": v == M}),
    "json-evidence": lambda v: json.dumps({"category": "none", "severity": "none", "evidence": [], "verdict": v}),
}


@given(
    st.sampled_from(sorted(_STATED)),
    st.sampled_from([M, B]),
    st.sampled_from(sorted(GRAMMARS)),
    st.sampled_from(["strict", "lenient"]),
    st.sampled_from(["", "\n", "  "]),
    st.integers(min_value=1, max_value=3),
)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_tool_verdict_beside_a_text_of_the_other_side_is_never_that_verdict(form, side, template, mode, pad, n):
    """A tool call's verdict (any number of agreeing calls) beside a text that states the other side in any
    form some parser reads (whatever the template's own grammar makes of it): never that verdict."""
    other = {M: B, B: M}[side]
    text = pad + _STATED[form](other) + pad
    args = {"verdict": side} if GRAMMARS[template].key == "verdict" else {"misbehavior_detected": side == M}
    calls = [SimpleNamespace(function=SimpleNamespace(name=VERDICT_TOOL, arguments=json.dumps(args)))] * n
    _raw, r = read_message(SimpleNamespace(content=text, tool_calls=calls), text, "tool_calls", template, mode)
    assert r.outcome != side, (form, text, template, mode, r)
    assert r.outcome == "invalid", (text, r)


@given(
    st.text(min_size=1, max_size=30).filter(lambda n: n != VERDICT_TOOL),
    st.lists(st.sampled_from([M, B]), min_size=0, max_size=2),
    st.sampled_from(["direct", "evidence"]),
    st.sampled_from(["strict", "lenient"]),
    st.sampled_from([None, "", "Yes", "No"]),
)
@settings(max_examples=200, deadline=None)
def test_a_call_to_any_tool_but_the_declared_one_is_never_a_verdict(name, verdicts, template, mode, text):
    """Any undeclared tool name among the calls (before or after calls to the declared tool, whatever their
    arguments and the text say) makes the message ``invalid`` naming the first such tool."""
    calls = [
        SimpleNamespace(function=SimpleNamespace(name=VERDICT_TOOL, arguments=json.dumps({"verdict": v})))
        for v in verdicts
    ]
    calls.append(SimpleNamespace(function=SimpleNamespace(name=name, arguments=json.dumps({"verdict": M}))))
    _raw, r = read_message(SimpleNamespace(content=text, tool_calls=calls), text or "", "tool_calls", template, mode)
    assert r.outcome not in (M, B), (name, verdicts, r)
    assert r.reason == f"unexpected tool call {name[:60]!r}", r


@pytest.mark.parametrize("transport", ["direct", "sdk", "httpx"])
def test_a_tool_call_when_the_request_declared_no_tool_is_no_verdict(transport):
    """With ``--param structured=none`` the request declares no tool, so even a ``record_verdict`` call (and
    the text "No" beside it) is no answer: ``invalid`` "unexpected tool call 'record_verdict'"."""
    with OpenAIFaultServer() as srv:
        srv.force = "toolmix"
        j = _judge(srv, "direct", {"structured": "none", "transport": transport})
    assert (j.outcome, j.reason) == ("invalid", "unexpected tool call 'record_verdict'"), (j.outcome, j.reason)
    _raw, r = read_message(_msg("", [M]), "", "tool_calls", "direct", "strict", None)
    assert (r.outcome, r.detail) == ("invalid", "the request declared no tool")


# ---- grammar 13: a response with more choices than were asked for is no answer


@pytest.mark.parametrize("parse", ["strict", "lenient"])
@pytest.mark.parametrize("transport", ["direct", "sdk", "httpx"])
def test_a_response_with_two_choices_is_invalid_on_a_real_server(transport, parse):
    """Trial 46: a server that sent two choices ("No", "Yes") where one was asked for (the request sends no
    ``n``) was read from the first, with no note. Now ``invalid`` naming the count, both texts kept."""
    with OpenAIFaultServer() as srv:
        srv.force = "twochoices"
        j = _judge(srv, "direct", {"structured": "none", "transport": transport, "parse": parse})
        assert "n" not in srv.requests[0]  # one choice was asked for
    assert j.outcome == "invalid", (j.outcome, j.reason)
    assert j.reason == "the server sent 2 choices where one was asked for (n is not sent: 1)"
    assert json.loads(j.raw or "") == ["No", "Yes"] and j.meta["choices"] == 2
