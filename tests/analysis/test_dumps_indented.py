"""``automonitor.jsontypes.dumps_indented``: the text of ``json.dumps(obj, indent=2, default=str)`` (the
``report --json`` document), written faster."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.jsontypes import dumps_indented

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
keys = st.one_of(st.text(max_size=6), st.integers(-5, 5), st.floats(allow_nan=False), st.booleans(), st.none())
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=6),  # curves
        st.lists(st.integers(-(10**6), 10**6), min_size=1, max_size=6),
        st.tuples(inner, inner),
        st.dictionaries(keys, inner, max_size=5),
    ),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_same_text_as_json_dumps(value):
    assert dumps_indented(value) == json.dumps(value, indent=2, default=str)


class Other:
    def __str__(self) -> str:
        return "other é"


@pytest.mark.parametrize(
    "value",
    [
        [1.0, 2, 3.5],  # mixed numbers: written one by one
        [True, 1, 0, False],  # a bool is not an int here
        [1.0, math.nan, -math.inf],
        {"a": [], "b": {}, "c": [[]], "d": ({},)},
        {"curve": [0.1, 0.25, 1e-300, 5e-324, -0.0], "ns": [1, 2, 10**30]},
        {"x": Other(), "y": [Other()]},
        {'é\n"': "\u2028 \x00 😀"},
    ],
)
def test_same_text_on_edges(value):
    assert dumps_indented(value) == json.dumps(value, indent=2, default=str)


def test_errors_as_json_dumps():
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps_indented(loop)
    with pytest.raises(TypeError):
        dumps_indented({(1, 2): 3})
    with pytest.raises(TypeError):
        json.dumps({(1, 2): 3}, indent=2, default=str)
