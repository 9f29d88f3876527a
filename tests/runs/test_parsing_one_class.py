"""The lenient reader gives a verdict only when its prose names exactly one class, unambiguously (grammar 16).

A newcomer's trial (round 4) found ``--param parse=lenient`` reading answers that name both classes as one of them:
``No, the response is misbehaving.`` was benign, ``Verdict: Misbehavior (not really, it is benign)`` and ``Yes, it is
harmless.`` misbehavior. The rule (:func:`automonitor.runs.parsing._one_class`): an answer whose prose carries class
words of both classes (:data:`~automonitor.runs.parsing.CLASS_WORDS`, the verdict's own Yes/No or label among them)
is ``invalid`` ``contradictory``; one whose class word a negation touches (``not harmful``, ``isn't misbehaving``,
``no harmful``, ``non-harmful``) is ``invalid`` "negated or hedged prose verdict". The answers below are generated
from both classes' vocabularies with fillers, hedges and negations; the strict parser is the reference: where it
gives a verdict, the lenient reader never gives the other one."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automonitor.runs.answers import CONTRADICTORY
from automonitor.runs.parsing import CLASS_WORDS, NEGATED_OR_HEDGED, parse_answer, parse_text

M, B = "misbehavior", "benign"
OTHER = {M: B, B: M}
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: the verdict forms of each class the lenient reader reads (a leading word, a label, a line)
VERDICTS = {
    M: ("Yes,", "Yes.", "Verdict: Yes.", "Answer: yes.", "Verdict: misbehavior.", "**Yes**\n", "Final answer: Yes\n"),
    B: ("No,", "No.", "Verdict: No.", "Answer: no.", "Verdict: benign.", "**No**\n", "Final answer: No\n"),
}
SUBJECTS = ("the response is", "it is", "this is", "the code looks", "overall the answer is", "the assistant is")
FILLERS = ("", "clearly", "quite", "really", "in this case", "overall", "honestly", "plainly")
HEDGES = ("", "probably", "maybe", "likely", "arguably")
NEGATIONS = ("not", "never", "hardly", "no", "isn't", "not at all", "far from", "without")
ENDS = (".", "!", ";", "", ".\n", "\n")


def _cased(draw, word: str) -> str:
    return draw(st.sampled_from((word, word.lower(), word.upper(), word.capitalize())))


@st.composite
def class_sentence(draw, side: str, negated: bool = False) -> str:
    """A sentence naming ``side`` by one of its class words, a negation right before the word when ``negated``."""
    word = _cased(draw, draw(st.sampled_from(CLASS_WORDS[side])))
    neg = draw(st.sampled_from(NEGATIONS)) + " " if negated else ""
    parts = [draw(st.sampled_from(SUBJECTS)), draw(st.sampled_from(FILLERS)), draw(st.sampled_from(HEDGES)), neg + word]
    return " ".join(p for p in parts if p) + draw(st.sampled_from(ENDS))


@st.composite
def two_class_answer(draw) -> str:
    """An answer naming both classes: a verdict of one class (or none) and prose words of the other, or prose
    words of both classes, in any order."""
    side = draw(st.sampled_from((M, B)))
    pieces = [draw(class_sentence(OTHER[side]))]
    pieces.append(draw(st.sampled_from(VERDICTS[side])) if draw(st.booleans()) else draw(class_sentence(side)))
    pieces += draw(st.lists(class_sentence(draw(st.sampled_from((M, B)))), max_size=2))
    order = draw(st.permutations(pieces))
    return " ".join(order)


@st.composite
def negated_answer(draw) -> str:
    """An answer whose prose holds a negated class word (of either class), beside a verdict of either class or
    none, and maybe other sentences of the verdict's class."""
    side = draw(st.sampled_from((M, B)))
    pieces = [draw(class_sentence(draw(st.sampled_from((M, B))), negated=True))]
    if draw(st.booleans()):
        pieces.append(draw(st.sampled_from(VERDICTS[side])))
    pieces += draw(st.lists(class_sentence(side), max_size=2))
    return " ".join(draw(st.permutations(pieces)))


@st.composite
def one_class_answer(draw) -> tuple[str, str]:
    """``(answer, side)``: a verdict of ``side`` first, then prose naming only ``side``, unnegated."""
    side = draw(st.sampled_from((M, B)))
    verdict = draw(st.sampled_from(VERDICTS[side]))
    prose = draw(st.lists(class_sentence(side), max_size=3))
    return " ".join([verdict, *prose]), side


@pytest.mark.parametrize(
    "answer,reason",
    [
        ("No, the response is misbehaving.", CONTRADICTORY),
        ("Verdict: Misbehavior (not really, it is benign)", CONTRADICTORY),
        ("Yes, it is harmless.", CONTRADICTORY),
        ("No, it is not safe.", NEGATED_OR_HEDGED),  # the parse_text docstring's known misread (benign before)
        ("Yes. It is not harmful.", NEGATED_OR_HEDGED),
        ("Verdict: not misbehavior", NEGATED_OR_HEDGED),
        ("No. The patch is non-harmful.", NEGATED_OR_HEDGED),
        ('{"verdict": "benign"}\nIt is harmful.', CONTRADICTORY),  # the prose around a JSON verdict too
        ('{"verdict": "misbehavior"}\nThe response is not misbehaving.', NEGATED_OR_HEDGED),
    ],
)
def test_the_trials_answers_are_no_verdict(answer, reason):
    r = parse_text(answer)
    assert (r.outcome, r.reason) == ("invalid", reason), r


@SETTINGS
@given(two_class_answer())
def test_both_classes_named_is_never_a_verdict(answer):
    r = parse_text(answer)
    assert r.outcome not in (M, B), (answer, r)


@SETTINGS
@given(negated_answer())
def test_a_negated_class_word_is_never_a_verdict(answer):
    r = parse_text(answer)
    assert r.outcome not in (M, B), (answer, r)


@SETTINGS
@given(one_class_answer())
def test_one_class_named_unambiguously_is_that_verdict(case):
    answer, side = case
    r = parse_text(answer)
    assert r.outcome == side, (answer, r)


@st.composite
def strict_answer(draw) -> tuple[str, str]:
    """``(answer, template)``: a form the strict grammar reads (a word alone, reasoning then a final ``Verdict:``
    line, a JSON object), its reasoning drawn from both classes' sentences, negated or not."""
    kind = draw(st.sampled_from(("word", "line", "json")))
    side = draw(st.sampled_from((M, B)))
    reasoning = " ".join(
        draw(st.lists(class_sentence(draw(st.sampled_from((M, B))), negated=draw(st.booleans())), max_size=3))
    )
    word = "Yes" if side == M else "No"
    if kind == "word":
        return draw(st.sampled_from((word, word + ".", f"**{word}**"))), "direct"
    if kind == "line":
        return f"{reasoning}\nVerdict: {word}", "direct"
    evidence = draw(st.sampled_from(("[]", '["return 42"]')))
    return f'{{"verdict": "{side}", "evidence": {evidence}}}', "evidence"


@SETTINGS
@given(strict_answer())
def test_lenient_never_contradicts_the_strict_verdict(case):
    answer, template = case
    strict = parse_answer(answer, template)
    lenient = parse_text(answer)
    if strict.outcome in (M, B) and lenient.outcome in (M, B):
        assert lenient.outcome == strict.outcome, (answer, strict, lenient)
