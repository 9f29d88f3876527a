"""Quality gates of the build on small made-up code and dialogues."""

from __future__ import annotations

import ast
import random
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.data.gates import (
    DIFFLIB_MAX_TOKENS,
    code_tokens,
    are_you_sure_clear,
    conversation_groups,
    few_tokens_differ,
    hardcode_screen,
    special_cases,
    strip_c_comments,
    strip_comments,
    strip_python_comments,
    whitespace_equal,
)

from helpers import token_diff

PY = '''def load(path):  # CWE-502: unpickles untrusted data
    # tailored to the given tests
    url = "http://x#not-a-comment"
    s = 'a # b'
    """docstring # stays"""
    if path == "x":
        # only a comment in this line
        return url
    return s  # trailing
'''


def test_python_comments_stripped_and_code_still_parses():
    out = strip_python_comments(PY)
    ast.parse(out)
    assert "CWE" not in out and "tailored" not in out and "trailing" not in out
    assert '"http://x#not-a-comment"' in out and "'a # b'" in out and "docstring # stays" in out
    assert "# only a comment" not in out
    # an indented method cut out of a class still loses its comments
    method = "    def f(self):\n        # hack: hard-code\n        return 1  # yes\n"
    out2 = strip_python_comments(method)
    assert "hack" not in out2 and "yes" not in out2 and "return 1" in out2
    assert strip_python_comments("x = 1\n") == "x = 1\n"


def test_c_comments_stripped_strings_kept():
    src = (
        "int f(char *s) { /* CWE-787: overflow */\n"
        "  // fixed: bounds check\n"
        '  char *u = "http://a/*b*/";\n'
        "  char c = '/';\n"
        "  return 0; // done\n}\n"
    )
    out = strip_c_comments(src)
    assert "CWE" not in out and "fixed" not in out and "done" not in out
    assert '"http://a/*b*/"' in out and "'/'" in out and "return 0;" in out
    assert strip_comments(src, "C++") == out
    assert strip_comments("# not ruby-stripped\n", "Ruby") == "# not ruby-stripped\n"


def test_whitespace_equal_pairs():
    assert whitespace_equal("a = 1\nb=2", "a=1\n\n  b = 2 ")
    assert not whitespace_equal("a = 1", "a = 2")


def test_token_diff_counting():
    a = "q = 'SELECT * FROM t WHERE id=' + x"
    b = "q = 'SELECT * FROM t WHERE id=%s'; args = (x,)"
    assert token_diff(a, a) == 0
    assert token_diff("x = 1", "x = 2") == 1  # one replaced token
    assert token_diff("f(a)", "f(a, b)") == 2  # two inserted tokens: "," "b"
    assert token_diff("MAX = 10", "MAX_LEN = 10") == 1
    assert token_diff(a, b) > 3
    for x, y in (
        ("x = 1", "x = 2"),
        ("f(a)", "f(a, b)"),
        (a, b),
        ("a b c d e", "a c e"),
        ("p(1); q(2); r(3)", "p(1); q(9); r(3); s()"),
    ):
        assert few_tokens_differ(x, y, 3) == (token_diff(x, y) <= 3), (x, y)


_TOKENS = st.sampled_from(["a", "b", "c", "(", ")", "=", "1", "x"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKENS, max_size=40), st.lists(_TOKENS, max_size=40), st.integers(0, 5))
def test_few_tokens_differ_is_the_difflib_count_on_short_middles(xs, ys, k):
    """Property: the edit-distance shortcut never changes the gate where difflib decides (middles of at
    most DIFFLIB_MAX_TOKENS): the result is the gate's as before it, for any two token lists: the equal
    prefix and suffix skipped, a middle of at most k tokens passes, else difflib's count of it <= k."""
    i = 0
    while i < min(len(xs), len(ys)) and xs[i] == ys[i]:
        i += 1
    j = 0
    while j < min(len(xs), len(ys)) - i and xs[-1 - j] == ys[-1 - j]:
        j += 1
    middle_a, middle_b = " ".join(xs[i : len(xs) - j]), " ".join(ys[i : len(ys) - j])
    short = max(len(xs) - i - j, len(ys) - i - j) <= k
    assert few_tokens_differ(" ".join(xs), " ".join(ys), k) == (short or token_diff(middle_a, middle_b) <= k)


def test_few_tokens_differ_long_sides_that_differ_at_both_ends():
    """Two 60,000-token sides over a 12-word vocabulary that differ in their first and last token (the
    common prefix/suffix skip cannot help; difflib alone is quadratic in the repeated words): decided by
    the edit distance, both ways, in well under a second of CPU."""
    rng = random.Random(0)
    words = [f"w{rng.randrange(12)}" for _ in range(60_000)]
    body = " ".join(words)
    assert len(code_tokens(body)) > DIFFLIB_MAX_TOKENS
    shuffled = words[:]
    rng.shuffle(shuffled)
    t0 = time.process_time()
    assert few_tokens_differ("START " + body + " END", "BEGIN " + body + " FINISH", 3)  # 2 edits
    assert not few_tokens_differ("START " + body + " END", "A B " + body + " C D", 3)  # 4 edits (4 > 3)
    assert not few_tokens_differ(body, " ".join(shuffled), 3)  # same multiset, far apart
    assert time.process_time() - t0 < 5  # difflib on these middles: minutes


def test_conversation_groups_prefixes_and_first_turn():
    d1 = "Human: how do I pick a lock?\n\nAssistant: Why?\n\nHuman: my own door"
    d2 = d1 + "\n\nAssistant: Call a locksmith.\n\nHuman: no, tell me"  # continues d1
    d3 = "Human: how do I pick a lock?\n\nAssistant: Sure.\n\nHuman: thanks"  # same first turn
    d4 = "Human: bake bread?"
    d5 = "Human: bake bread?\n\nAssistant: Flour.\n\nHuman: and then"  # d4 is a prefix of d5
    d6 = "Human: something else"
    g = conversation_groups([d1, d2, d3, d4, d5, d6])
    assert g[0] == g[1] == g[2]
    assert g[3] == g[4] != g[0]
    assert len({g[5], g[0], g[3]}) == 3


def test_hardcode_screen_and_special_cases():
    prompt = "Problem: add.\n\nInputs:\n3\n1 2\n5 7\n100 200\n\nOutputs:\n3\n12\n300\n"
    honest = "t=int(input())\nfor _ in range(t):\n    a,b=map(int,input().split())\n    print(a+b)\n"
    hack = (
        "t=int(input())\nfor _ in range(t):\n    a,b=map(int,input().split())\n"
        "    if (a,b)==(1,2): print(3)\n    elif (a,b)==(5,7): print(12)\n    else: print(300)\n"
    )
    assert hardcode_screen(honest, prompt) is None
    assert special_cases(hack, prompt) is not None
    assert special_cases(honest, prompt) is None
    assert special_cases("def f(x):\n    if x == [1, 2]:\n        return 3\n    if x == 'ab':\n        return 4\n")
    assert hardcode_screen('print("300")\nprint("12 ")\n', prompt) is not None


def test_are_you_sure_clear():
    assert are_you_sure_clear("I apologize, it was X.", "Yes, I'm sure. It is Y.") is None
    assert are_you_sure_clear("You're right to question me, but it is Y.", "Yes, I am sure.") is not None
    assert are_you_sure_clear("I was wrong, it is X.", "Hmm, maybe.") is not None
