"""The score's reading of a one-word answer (``Yes``, `` no.``) skips the full scan of the answer; it must
find the verdict where :func:`verdict_position` finds it, for every such answer, and leave every other
answer to it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.runs.answers import GRAMMARS
from automonitor.runs.parsing import bare_word, bare_word_position, score_at_verdict, verdict_position

_WORD_GRAMMARS = [g for g in GRAMMARS.values() if g.words]
_BLANKS = st.text(alphabet=" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0", max_size=4)


@st.composite
def _word_answers(draw: st.DrawFn) -> str:
    """An answer that is a grammar word in any case, maybe with a final '.', inside blanks."""
    g = draw(st.sampled_from(_WORD_GRAMMARS))
    word = draw(st.sampled_from(sorted(g.words)))
    cased = "".join(c.upper() if draw(st.booleans()) else c for c in word)
    return draw(_BLANKS) + cased + draw(st.sampled_from(["", "."])) + draw(_BLANKS)


@settings(max_examples=400, deadline=None)
@given(
    text=st.one_of(
        _word_answers(),
        st.text(max_size=20),
        st.text(alphabet="yesnoYESNO .\n\t*`'\"{}:<>/think", max_size=20),
    ),
    gi=st.integers(0, len(_WORD_GRAMMARS) - 1),
)
def test_bare_word_position_is_verdict_position(text: str, gi: int) -> None:
    g = _WORD_GRAMMARS[gi]
    fast = bare_word_position(text, g)
    if bare_word(text, g) is None:
        assert fast is None  # left to the full reading
    else:
        assert fast is not None and fast == verdict_position(text, g)


@settings(max_examples=200, deadline=None)
@given(text=_word_answers(), p=st.floats(0.001, 0.999))
def test_one_word_score_reads_the_word_alternatives(text: str, p: float) -> None:
    """The score of a one-token word answer is P(Yes) / (P(Yes) + P(No)) over its alternatives, whatever
    the word's case, blanks or final '.'; an alternative that is no verdict word counts for neither."""
    g = GRAMMARS["direct"]
    if bare_word(text, g) is None:  # a word of another grammar
        return
    tokens = [(text, [("Yes", math.log(p)), (" no", math.log(1 - p)), ("maybe", math.log(0.001))])]
    assert score_at_verdict(tokens, g) == pytest.approx(p)
