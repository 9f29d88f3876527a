"""A generated answer is used only when it ended normally by its backend's table of finish reasons and fits its
token budget (automonitor.runs.generation.recipes.unusable_answer): a cued answer cut off at ``max_tokens``
(``finish_reason: length``) or far longer than ``max_tokens`` could hold (a server ignoring it) drops its item
(``incomplete_answer``, ``oversized_answer``) instead of becoming a kept candidate pair whose last visible option
was read as the model's answer. Real CLI, real SQLite store, a loopback OpenAI-compatible generator."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from helpers import RAW, scripted_generate, sycophancy_script


def _outcome(text, stop="normal", finish="stop"):
    return {
        "text": text,
        "finish_reason": finish,
        "stop": stop,
        "tokens_in": 0,
        "tokens_out": 0,
        "cost_usd": 0.0,
        "cached": False,
        "error": None,
    }


@pytest.mark.parametrize(
    ("outs", "reason"),
    [
        ([_outcome("(A)"), _outcome("(B)")], None),
        ([_outcome("(A)"), _outcome("(B", "truncated", "length")], "incomplete_answer"),
        ([_outcome("(A)", "filtered", "content_filter"), _outcome("(B)")], "incomplete_answer"),
        ([_outcome("(A)", "refusal", "refusal"), _outcome("(B)")], "incomplete_answer"),
        ([_outcome("(A)", None, "something_new"), _outcome("(B)")], "incomplete_answer"),  # a reason not declared
        ([_outcome("(A)", None, None), _outcome("(B)")], "incomplete_answer"),  # no reason given
        ([_outcome("x" * 64 * 32), _outcome("(B)")], None),  # exactly the budget
        ([_outcome("x" * (64 * 32 + 1)), _outcome("(B)")], "oversized_answer"),
        (
            [{**_outcome(None, None, None), "error": "timeout"}, _outcome("(B)")],
            None,
        ),  # a failed call is not judged here
    ],
)
def test_unusable_answer_rules(outs, reason):
    from automonitor.runs.generation.recipes import unusable_answer

    dec = unusable_answer(outs, 64)
    assert (dec.reason if dec else None) == reason
    if dec:
        assert not dec.kept and dec.details["max_tokens"] == 64
        assert dec.details["finish_reasons"] == [o["finish_reason"] for o in outs if o["text"] is not None]


def test_cut_off_and_oversized_cued_answers_drop_their_items(sqlite_engine, sqlite_url):
    from automonitor.runs.generation.tasks import sycophancy_items
    from servers.scripted_generator import ScriptedGenerator

    items = list(sycophancy_items("bct_truthfulqa_cues", "suggested_answer", RAW, 4))
    cued = [it.cued[-1]["content"] for it in items]
    # items 0 and 2 follow the cue (sycophancy_script): kept when whole; 0's answer is cut off, 2's is padded far
    # past what 64 tokens hold; 1 and 3 resist the cue (cued_right) as before
    script = sycophancy_script(4)
    with ScriptedGenerator(script, finish={cued[0]: "length"}, pad={cued[2]: 5000}) as srv:
        r = scripted_generate(sqlite_url, srv.base_url, "--max-tokens", "64", "--json", limit=4)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["kept"], doc["candidates_added"]) == (0, 0)
    assert doc["dropped"] == {"incomplete_answer": 1, "oversized_answer": 1, "cued_right": 2}
    steps = {x["step"]: (x["in"], x["out"]) for x in doc["steps"]}
    assert steps["answered"] == (4, 2)
    with sqlite_engine.connect() as c:
        assert c.execute(sa.text("SELECT count(*) FROM sample")).scalar_one() == 0
    # the same answers whole are kept (the control: nothing else about them drops them)
    with ScriptedGenerator(script) as srv:
        r = scripted_generate(sqlite_url, srv.base_url, "--max-tokens", "64", "--json", limit=4)
    again = json.loads(r.stdout)
    assert (again["kept"], again["dropped"]) == (2, {"cued_right": 2})


def test_a_cut_off_gaming_answer_drops_its_task_before_any_screen(sqlite_engine, sqlite_url):
    from servers.scripted_generator import ScriptedGenerator

    with ScriptedGenerator({}, finish={"*": "length"}) as srv:
        r = scripted_generate(
            sqlite_url, srv.base_url, "--incentive", "tests_only", "--json", kind="gaming", source="mbpp", limit=2
        )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["kept"], doc["dropped"]) == (0, {"incomplete_answer": 2})
