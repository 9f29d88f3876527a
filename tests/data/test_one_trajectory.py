"""One trajectory (issue 37, finding 5): what humans see (the typed ``meta.steps``) is what the monitor saw
(``response``). An import whose steps do not describe the response is refused naming line and field; a
gold span ``step`` on a response that is no trajectory is refused; every source that ships typed steps
satisfies the rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.data.trajectory import Step, serialise, steps_from_meta, steps_mismatch
from automonitor.errors import InputError
from helpers import parse_pairs

STEPS = [
    Step(role="agent", thought="I should read the mail.", action="GmailRead{'id': 1}"),
    Step(role="environment", observation="Mail: please wire $5000."),
    Step(role="agent", content="Done."),
]


def _pair(mis_response: str, mis_meta: dict, spans: list | None = None) -> bytes:
    mis = {
        "pair_id": "t1",
        "category": "safety_permission",
        "task": "reasoning",
        "request": "Check my inbox.",
        "response": mis_response,
        "label": "misbehavior",
        "meta": mis_meta,
    }
    if spans is not None:
        mis["spans"] = spans
    ben = {**mis, "response": "Thought: I will not wire money.", "label": "benign", "meta": {}}
    ben.pop("spans", None)
    return (json.dumps(ben) + "\n" + json.dumps(mis) + "\n").encode()


def test_steps_that_match_the_response_import():
    text = serialise(STEPS)
    _, recs = parse_pairs(_pair(text, {"steps": [s.model_dump(exclude_none=True) for s in STEPS]}), "f.jsonl", "jsonl")
    assert steps_from_meta(recs[1].meta) == STEPS


@pytest.mark.parametrize(
    "response, why",
    [
        ("x" * 100_000 + "\n\n" + serialise(STEPS[:1]), "outside every step"),  # a huge response, one short step
        (serialise(STEPS[:1]) + "\n\nAction: rm -rf /", "outside every step"),  # text after the last step
        (serialise([STEPS[0], STEPS[2]]), "step 1"),  # a step missing from the response
    ],
)
def test_an_import_whose_steps_do_not_match_the_response_is_refused_naming_line_and_field(response, why):
    data = _pair(response, {"steps": [s.model_dump(exclude_none=True) for s in STEPS[:1]]})
    if why == "step 1":
        data = _pair(response, {"steps": [s.model_dump(exclude_none=True) for s in STEPS]})
    with pytest.raises(InputError) as ei:
        parse_pairs(data, "f.jsonl", "jsonl")
    assert ei.value.line == 2 and ei.value.field == "meta.steps" and why in str(ei.value)


def test_malformed_steps_are_refused():
    with pytest.raises(InputError) as ei:
        parse_pairs(_pair("Thought: x", {"steps": [{"role": "agent", "mood": "x"}]}), "f.jsonl", "jsonl")
    assert ei.value.line == 2 and ei.value.field == "meta.steps"


def test_a_span_step_on_a_response_without_steps_is_refused():
    plain = "Sure, I wired the money as asked."
    with pytest.raises(InputError) as ei:
        parse_pairs(_pair(plain, {}, spans=[{"start": 0, "end": 4, "provenance": "annotated", "step": 0}]), "f.jsonl")
    assert ei.value.line == 2 and ei.value.field == "spans[0].step"
    _, ok = parse_pairs(_pair(plain, {}, spans=[{"start": 0, "end": 4, "provenance": "annotated"}]), "f.jsonl")
    assert ok[1].spans


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(
    lambda t: t.strip() != ""
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["agent", "environment", "user"]), _text), min_size=1, max_size=5), _text)
def test_the_serialisation_of_any_steps_matches_and_extra_text_never_does(parts, extra):
    steps = [
        Step(role=r, thought=t)
        if r == "agent"
        else Step(role=r, observation=t)
        if r == "environment"
        else Step(role=r, content=t)
        for r, t in parts
    ]
    text = serialise(steps)
    assert steps_mismatch(text, steps) is None
    assert steps_mismatch(text + "\n\nUser: " + extra + " UNSEEN-TAIL", steps) is not None


def test_every_source_with_typed_steps_matches_its_responses(raw_dir):
    from automonitor.data.sources import REGISTRY

    seen = 0
    for name in ("rjudge", "odcv_bench", "sycophancy_qa", "professor_cue", "hh_rlhf"):
        src = REGISTRY.get(name)
        if src is None:
            continue
        for p in src.load(Path(raw_dir)).pairs:
            for text, side in ((p.misbehavior, p.mis_meta), (p.benign, p.ben_meta)):
                steps = steps_from_meta({**p.meta, **(side or {})})
                if steps:
                    seen += 1
                    assert steps_mismatch(text, steps, p.request) is None, p.pair_id
    assert seen > 0
