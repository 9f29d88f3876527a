"""The rules' any-match gate (``rule_patterns._regex``): the alternation of a rule's patterns is scanned first
and the patterns only where it matches. It must never hide a match, whatever the patterns are: hypothesis
draws patterns (some referring to their groups, some sharing group names) and texts, and the gated finder
must give exactly the spans of the patterns scanned one by one."""

from __future__ import annotations

import re

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from automonitor.data.rule_patterns import any_match_gate, regex_finder

_ATOMS = [
    "a",
    "b",
    "ab",
    "[ab]",
    "a+",
    "b?",
    r"\d",
    "(a)",
    "(b)",
    r"(a)\1",
    r"(b)b\1",
    "(?P<x>a)",
    "(?P<x>b)",
    "(?P<y>ab)(?P=y)",
    "(a)?(?(1)b|a)",
    "x*",
    "(?:ab|ba)",
]


def _compiles(p):
    try:
        re.compile(p)
    except re.error:
        return False
    return True


def _ungated(patterns, text):
    return sorted(m.span() for p in patterns for m in re.finditer(p, text, re.I))


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(_ATOMS), min_size=1, max_size=2).map("".join), min_size=1, max_size=3),
    st.text(alphabet="abAB1x", max_size=12),
)
@example(["(a)", r"(b)b\1"], "bbb")  # the second pattern's \1 would be the first's group in a naive alternation
def test_the_gate_never_hides_a_match(patterns, text):
    assume(all(_compiles(p) for p in patterns))  # a rule's patterns each compile (checked at import)
    assert regex_finder(*patterns)("", text) == _ungated(patterns, text)


def test_patterns_that_refer_to_their_groups_get_no_gate():
    assert any_match_gate(("(a)b", "c"), re.I) is not None
    assert any_match_gate(("(a)b", r"(c)\1"), re.I) is None  # \1 would be the first pattern's group
    assert any_match_gate(("(?P<n>a)", "(?P<n>b)"), re.I) is None  # a name repeated: no alternation
    assert any_match_gate(("(a)?(?(1)b|c)", "d"), re.I) is None
    assert any_match_gate(("a",), re.I) is None  # one pattern is its own gate
    # the failure the rule prevents: gated by the naive alternation, "bb" would be missed
    naive = re.compile(r"(?:(a)x)|(?:(b)\1)", re.I)
    assert naive.search("bb") is None and re.search(r"(b)\1", "bb")
