"""Prompt templates as versioned files: content hash, sections, one-pass placeholders, truncation,
deterministic balanced few-shot choice."""

import hashlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.errors import InputError
from automonitor.runs.prompts import (
    PromptBuilder,
    choose_fewshot,
    fill,
    load_template,
    truncate_chars,
)
from automonitor.runs.prompts.prompts import TEMPLATE_DIR, parse_template
from automonitor.vocab import TEMPLATES


def test_every_contract_template_exists_with_version_and_file_hash():
    listed = [{"name": t.name, "version": t.version, "sha256": t.sha256} for t in (load_template(n) for n in TEMPLATES)]
    assert [t["name"] for t in listed] == list(TEMPLATES)
    for t in listed:
        raw = (TEMPLATE_DIR / f"{t['name']}.txt").read_bytes()
        assert t["sha256"] == hashlib.sha256(raw).hexdigest()
        assert t["version"] == "1"
    assert len({t["sha256"] for t in listed}) == len(TEMPLATES) == 6


def test_evidence_templates_ask_for_category_severity_evidence_then_verdict():
    for name in ("evidence", "evidence-fewshot"):
        system = load_template(name).sections["system"]
        order = [system.index(w) for w in ("1. category", "2. severity", "3. evidence", "4. verdict")]
        assert order == sorted(order)
        assert load_template(name).evidence
    assert not load_template("direct").evidence and not load_template("direct").fewshot
    assert load_template("direct-fewshot").fewshot


def test_placeholders_are_filled_once_and_sample_text_is_not_expanded():
    b = PromptBuilder(load_template("direct"))
    _, user, _ = b.chat_messages("ask {response} {examples}", "answer {request}")
    assert "ask {response} {examples}" in user and "answer {request}" in user
    assert fill('{"verdict": "x"} {request}', {"request": "R"}) == '{"verdict": "x"} R'


_NAMES = ["request", "response", "examples", "answer", "verdict", "category", "other"]
#: the placeholders fill documents: these six names in braces
_PLACEHOLDER = re.compile(r"\{(request|response|examples|answer|verdict|category)\}")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.text(alphabet="{}ab \n", max_size=6), st.sampled_from(_NAMES).map("{{{}}}".format)), max_size=8
    ),
    st.dictionaries(st.sampled_from(_NAMES[:-1]), st.text(alphabet="{}xy", max_size=4)),
)
def test_fill_from_its_split_template_equals_one_pattern_pass(pieces, values):
    """``fill`` (the text split at its placeholders once, then joined) gives what one substitution pass of
    the placeholder pattern gives: every placeholder of ``values`` replaced, others and other braces kept,
    values not re-scanned; the same text filled twice (its split then reused) gives the same."""
    text = "".join(pieces)
    once = _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text)
    assert fill(text, values) == once
    assert fill(text, values) == once


def test_character_truncation_keeps_head_and_tail_and_reports_it():
    text = "A" * 700 + "B" * 300
    cut, info = truncate_chars(text, 300)
    assert cut.startswith("A" * 200) and cut.endswith("B" * 100) and "truncated" in cut
    assert info == {"unit": "chars", "original": 1000, "kept": 300}
    assert truncate_chars("short", 300) == ("short", None)
    b = PromptBuilder(load_template("direct"), request_budget=50, response_budget=50)
    _, meta = b.user_text("q" * 100, "r" * 10)
    assert meta == {"truncated": {"request": {"unit": "chars", "original": 100, "kept": 50}}}


def _train(n_per_label=6):
    cats = ["safety_permission", "sycophancy_bias", "specification_gaming"]
    return [
        {"id": f"t{i}-{lab}", "label": lab, "category": cats[i % 3], "request": f"q{i}", "response": f"{lab} {i}"}
        for i in range(n_per_label)
        for lab in ("misbehavior", "benign")
    ]


def test_fewshot_choice_is_balanced_deterministic_and_seeded():
    rows = _train()
    a = choose_fewshot(rows, k=4, seed=0)
    assert [e.label for e in a] == ["misbehavior", "benign", "misbehavior", "benign"]
    assert len({e.category for e in a if e.label == "misbehavior"}) == 2
    assert [e.sample_id for e in a] == [e.sample_id for e in choose_fewshot(list(reversed(rows)), k=4, seed=0)]
    assert [e.sample_id for e in a] != [e.sample_id for e in choose_fewshot(rows, k=4, seed=1)]
    assert [e.label for e in choose_fewshot(rows, k=3)].count("misbehavior") == 2
    with pytest.raises(InputError, match="train split"):
        choose_fewshot([r for r in rows if r["label"] == "benign"], k=2)


def test_fewshot_examples_render_into_the_shared_prefix():
    ex = choose_fewshot(_train(), k=2)
    b = PromptBuilder(load_template("direct-fewshot"), examples=ex)
    system = b.system_text()
    assert "{examples}" not in system and ex[0].response in system and ex[1].response in system
    assert "Misbehavior?\nYes" in system and "Misbehavior?\nNo" in system
    assert b.fingerprint()["examples"] == [e.sample_id for e in ex]


def test_unknown_template_and_broken_files():
    with pytest.raises(InputError) as e:
        load_template("chain-of-thought")
    assert e.value.field == "template"
    with pytest.raises(InputError, match="user"):
        parse_template("x", "<<<system>>>\nhi\n")
    with pytest.raises(InputError, match="unknown section"):
        parse_template("x", "<<<system>>>\nhi\n<<<footer>>>\n")
    with pytest.raises(InputError, match="request"):
        parse_template("x", "<<<system>>>\nhi\n<<<user>>>\n{response}\n")
