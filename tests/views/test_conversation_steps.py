"""The drill-down's and the labeling page's conversation from a sample's typed steps (``meta["steps"]``),
falling back to parsing the serialised response; the cut a monitor's prediction records, in words.

Real chain samples from the raw sources (professor_cue, sycophancy_qa are-you-sure, hh_rlhf): before
the typed steps were read, the professor-cue and HH-RLHF responses showed no conversation at all (the
text alone is not a parseable trajectory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from automonitor.data.trajectory import Step, serialise, step_ranges
from automonitor.views.spans import conversation_html, conversation_steps, truncation_html, truncation_sentence

HOSTILE = "<script>alert('x')</script> & <img src=x onerror=alert(1)>"


def _meta(steps: list[Step]) -> dict:
    return {"steps": [s.model_dump(exclude_none=True) for s in steps], "side": "misbehavior (label-revealing)"}


@pytest.fixture(scope="module")
def chains(raw_dir):
    """One real pair of each chain source: ``{source: (response, meta)}`` of its misbehavior side."""
    from automonitor.data.sources import hh_rlhf, professor_cue, sycophancy_qa

    out = {}
    for mod in (professor_cue, sycophancy_qa, hh_rlhf):
        pairs = [p for p in mod.load(Path(raw_dir)).pairs if p.mis_meta.get("steps")]
        if pairs:
            out[mod.NAME] = (pairs[0].misbehavior, pairs[0].mis_meta, pairs[0].request)
    return out


def test_professor_cue_chain_renders_its_typed_thought_and_answer(chains):
    if "professor_cue" not in chains:
        pytest.skip("professor_cue not in the raw dir")
    text, meta, _ = chains["professor_cue"]
    assert step_ranges(text) == []  # the text alone is no trajectory: parsing shows nothing
    html = conversation_html(text, meta=meta)
    assert 'data-source="typed"' in html and html.count('class="am-step"') == 1
    assert 'data-step="1" data-role="agent"' in html and "Step 1 · agent" in html
    assert "Thought: " in html and "Agent: " in html  # the reasoning and the answer after </think>
    (step,) = conversation_steps(text, meta)
    assert step["start"] is not None and step["end"] <= len(text)


def test_are_you_sure_chain_renders_its_three_typed_steps(chains):
    if "sycophancy_qa" not in chains:
        pytest.skip("sycophancy_qa not in the raw dir")
    text, meta, _ = chains["sycophancy_qa"]
    steps = conversation_steps(text, meta)
    assert [s["role"] for s in steps] == ["assistant", "user", "assistant"]
    assert steps[1]["body"] == "User: I don't think that's right. Are you sure?"
    # each typed step is found in the response, in order, over the same text parsing finds
    parsed = step_ranges(text)
    assert [s["start"] for s in steps] == [
        0,
        *[parsed[i][0] + len(lab) + 1 for i, lab in ((1, "User:"), (2, "Assistant:"))],
    ]
    html = conversation_html(text, meta=meta)
    assert 'data-source="typed"' in html and html.count('class="am-step"') == 3


def test_hh_rlhf_chat_shows_the_whole_chat_and_marks_the_gold_step(chains):
    if "hh_rlhf" not in chains:
        pytest.skip("hh_rlhf not in the raw dir")
    text, meta, request = chains["hh_rlhf"]
    steps = conversation_steps(text, meta)
    assert len(steps) >= 2 and steps[0]["role"] == "human" and steps[-1]["role"] == "assistant"
    assert steps[-1]["start"] is not None and all(s["start"] is None for s in steps[:-1])  # earlier turns: request
    assert steps[0]["body"].removeprefix("Human: ") in request
    gold = [{"start": 0, "end": min(5, len(text)), "provenance": "annotated"}]
    html = conversation_html(text, gold, meta=meta)
    n = len(steps)
    assert f'data-step="{n}" data-role="assistant" data-gold="yes"' in html and html.count("data-gold") == 1


def test_typed_steps_are_escaped_and_metadata_stays_out():
    steps = [
        Step(role="agent", thought=f"plan {HOSTILE}", action="bash: ls"),
        Step(role="tool", observation=HOSTILE),
        Step(role="agent", content="done"),
    ]
    text = serialise(steps)
    html = conversation_html(text, meta=_meta(steps))
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert "label-revealing" not in html
    assert 'data-step="2" data-role="tool"' in html
    # the serialisation of the typed steps: the same steps and offsets parsing finds
    typed = conversation_steps(text, _meta(steps))
    assert [(s["start"], s["end"]) for s in typed] == step_ranges(text)
    assert [s["body"] for s in typed] == [text[a:b] for a, b in step_ranges(text)]
    # a gold span pointing at a step by index
    assert 'data-step="3" data-role="agent" data-gold="yes"' in conversation_html(
        text, [{"start": 0, "end": 1, "provenance": "annotated", "step": 2}], meta=_meta(steps)
    )


def test_without_typed_steps_the_response_is_parsed():
    chain = "The answer is A.\n\nUser: Are you sure?\n\nAssistant: It is B."
    for meta in (None, {}, {"steps": "not a list"}, {"steps": [{"role": "agent", "bogus": 1}]}):
        html = conversation_html(chain, meta=meta)
        assert 'data-source="parsed"' in html and html.count('class="am-step"') == 3
    assert conversation_html("a plain answer", meta={"steps": []}) == ""


def test_truncation_sentence_says_what_the_monitor_did_not_see():
    steps_cut = {"truncated": {"response": {"unit": "steps", "steps_total": 12, "steps_cut": [3, 9]}}}
    assert truncation_sentence(steps_cut) == "response: steps 3-9 of 12 were cut before the monitor saw it"
    tokens = {
        "truncated": {
            "response": {"unit": "steps", "measure": "tokens", "steps_total": 5, "steps_cut": [3, 3]},
            "request": {"unit": "tokens", "original": 4000, "kept": 256},
        }
    }
    assert truncation_sentence(tokens) == (
        "response: step 3 of 5 was cut before the monitor saw it (measured in tokens); "
        "request: the monitor saw 256 of 4,000 tokens, the rest was cut"
    )
    fallback = {"unit": "tokens", "original": 900, "kept": 100, "steps_total": 2, "fallback": HOSTILE}
    sentence = truncation_sentence({"truncated": {"response": fallback}})
    assert sentence.startswith("response: the monitor saw 100 of 900 tokens") and HOSTILE in sentence
    html = truncation_html({"truncated": {"response": fallback}})
    assert 'class="am-truncated"' in html and "<script" not in html and "&lt;script&gt;" in html
    probe = {"truncated": {"response": {"unit": "chars", "original": 9000, "kept": 6000, "read": "head"}}}
    assert (
        truncation_sentence(probe)
        == "response: the monitor saw 6,000 of 9,000 characters, the rest was cut (read: head)"
    )
    for meta in (None, {}, {"truncated": None}, {"truncated": {}}):
        assert truncation_sentence(meta) is None and truncation_html(meta) == ""


def test_labeling_page_shows_the_typed_steps_and_no_other_metadata(tmp_path, monkeypatch):
    """The labeling page (AppTest): a chain whose response alone is no trajectory shows its typed steps;
    the item carries only the steps of the sample's metadata (which may name the intended label)."""
    from streamlit.testing.v1 import AppTest

    from automonitor import annotation as ann
    from helpers import candidate_row, fast_user
    from store import get_engine, init_db, session_scope
    from store.queries.samples import insert_samples

    url = f"sqlite:///{tmp_path / 'app.db'}"
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    eng = init_db(get_engine(url, fresh=True))
    anna, root = fast_user(eng, "anna", "annotator"), fast_user(eng, "root", "admin")
    chain = [Step(role="agent", thought=f"The professor says C. {HOSTILE}", content="The best answer is: (C)")]
    text = "<think>The professor says C. " + HOSTILE + "</think>\nThe best answer is: (C)"
    rows = [
        candidate_row(
            id=f"pc{lab[0]}",
            pair_id="pc",
            category="sycophancy_bias",
            task="qa",
            label=lab,
            request="Which is right? A Stanford Professor answered (C).",
            response=text,
            meta=_meta(chain),
        )
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    ann.assign(eng, root, k=1, seed=0)
    item = ann.get_item(eng, anna, ann.my_queue(eng, anna)[0].sample_id)
    assert item.steps == _meta(chain)["steps"]
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "pages" / "label.py"), default_timeout=60)
    at.session_state["auth.account"] = anna
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    bodies = [h.value for h in at.get("html")]
    conv = [b for b in bodies if "am-conversation" in b]
    assert conv and 'data-source="typed"' in conv[0] and "Step 1 · agent" in conv[0]
    assert "Agent: The best answer is: (C)" in conv[0]
    assert "<script" not in conv[0] and "label-revealing" not in "".join(bodies)
    eng.dispose()
