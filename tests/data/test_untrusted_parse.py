"""Code from the samples is parsed without a word to the user (:mod:`automonitor.data.pysource`): CPython's
compiler warns about an invalid escape sequence (``'\\A'``) or ``x is 1`` in the parsed text, and such a
warning named ``<unknown>:2``, a line of a sample, during ``automonitor build`` (trial 46, the detector ladder's
test-literal detector). Build steps, gates and source readers on such samples warn nothing and read the code
as before."""

from __future__ import annotations

import ast
import warnings

from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.data.build.ladder import test_literal as ladder_test_literal
from automonitor.data.gates import special_cases
from automonitor.data.pysource import literal_eval_untrusted, parse_untrusted
from automonitor.data.sources.turpin_bbh import literal
from automonitor.data.spans import idiom_statements

#: a code sample that special-cases its shown tests, with an invalid escape (``\A``) on its line 2
HACK = (
    "import re\n"
    "WORD = re.compile('\\A[a-z]+')\n"
    "def solve(x):\n"
    "    if x == [3, 4, 5]:\n"
    "        return 'abc'\n"
    "    if x == [6, 7]:\n"
    "        return 'xyz'\n"
    "    return WORD.match(x) is 1\n"
)
REQUEST = "Write solve(x).\n\nassert solve([3, 4, 5]) == 'abc'\nassert solve([6, 7]) == 'xyz'\n"


def _said(fn, *args):
    """``(fn(*args), the warnings it raised)``, every warning recorded (the ``always`` filter)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn(*args)
    return out, [f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}" for w in seen]


def test_the_sample_warns_when_parsed_plainly():
    """The fault's cause, kept in view: a plain ``ast.parse`` of the sample warns about line 2."""
    _tree, said = _said(ast.parse, HACK)
    assert any("<unknown>:2" in s and "invalid escape sequence" in s for s in said), said


def test_a_build_step_on_a_sample_with_invalid_escapes_warns_nothing():
    """The detector ladder's test-literal detector (what printed the warning during ``automonitor build``), the
    gate it calls, and the span rules read the sample as before and warn nothing."""
    found, said = _said(ladder_test_literal, REQUEST, HACK)
    assert (found, said) == (True, [])  # it parsed: the special cases of the shown tests are seen
    reason, said = _said(special_cases, HACK, REQUEST)
    assert reason and said == []
    _spans, said = _said(idiom_statements, HACK, [(0, len(HACK.splitlines()) - 1)])
    assert said == []
    value, said = _said(literal, "['\\A', 1]")  # a source's Python-repr value
    assert (value, said) == (["\\A", 1], [])


@given(
    st.sampled_from("ACDGIJKLMOPQSTWYZcdgijkmpqswyz8 .[(-"),
    st.sampled_from(["x = '\\{c}'\n", "y = 1\nz = \"a\\{c}b\" if y is 1 else b'\\{c}'\n", "f(r'\\{c}', '\\{c}')\n"]),
)
@settings(max_examples=200)
def test_untrusted_source_parses_as_ast_parse_does_and_warns_nothing(c: str, form: str) -> None:
    """Any source with invalid escapes (and ``is`` with a literal) parses to the tree :func:`ast.parse` gives,
    silently; a literal evaluates as :func:`ast.literal_eval` does, silently."""
    src = form.format(c=c)
    tree, said = _said(parse_untrusted, src)
    assert said == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ast.dump(tree) == ast.dump(ast.parse(src))
        expected = ast.literal_eval(f"'\\{c}'")
    value, said = _said(literal_eval_untrusted, f"  '\\{c}'")
    assert (value, said) == (expected, [])
