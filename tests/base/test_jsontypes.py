"""``automonitor.jsontypes.dumps_indented`` writes what ``json.dumps(obj, indent=..., default=...)`` writes, byte
for byte: non-ASCII and control characters, NaN, infinities, -0.0, big integers, ``int``/``float``/``str``
subclasses, tuples, non-string keys, empty and nested containers, values only ``default`` can write; and it
raises what ``json.dumps`` raises."""

from __future__ import annotations

import enum
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.jsontypes import dumps_indented


class Level(enum.IntEnum):
    LOW = 1


class Name(str, enum.Enum):
    A = "ä"


class Ratio(float):
    pass


class Opaque:
    def __str__(self) -> str:
        return "opaque \u2603"


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.sampled_from([Level.LOW, Name.A, Ratio(0.1), Ratio(math.nan), Opaque(), -0.0, 1e300, 5e-324]),
)
keys = st.one_of(st.text(), st.integers(), st.floats(allow_nan=True), st.booleans(), st.none())
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(keys, inner, max_size=6),
    ),
    max_leaves=40,
)


@settings(max_examples=200, deadline=None)
@given(values, st.sampled_from([0, 1, 2, 4]))
def test_the_same_text_as_json_dumps(obj, indent):
    assert dumps_indented(obj, indent, default=str) == json.dumps(obj, indent=indent, default=str)


def test_a_report_shaped_document():
    doc = {
        "runs": [
            {"run_id": "r\u00e9", "overall": {"n": 3, "mr": 1 / 3, "mr_ci": [0.1, 0.9], "far": None}, "curve": []},
            {"run_id": "r2", "roc": {"far": [0.0, 0.5, 1.0], "threshold": [math.inf, 0.5, -math.inf]}, "x": {}},
        ],
        "pearson_r": math.nan,
        "paired": [],
        "nested": [[], [[1, 2], {"a": [{}]}], ({"t": (1, "\n")},)],
    }
    assert dumps_indented(doc, 2, default=str) == json.dumps(doc, indent=2, default=str)
    sets = {"s": {3, 1}, "in": [frozenset({2}), {"deep": [set()]}]}  # default gives a container: indented as one
    assert dumps_indented(sets, 2, default=sorted) == json.dumps(sets, indent=2, default=sorted)


def test_it_raises_what_json_dumps_raises():
    for bad in ({(1, 2): 1}, {"a": {(1, 2): 1}}, [{"k": {frozenset(): 0}}]):
        with pytest.raises(TypeError, match="keys must be str, int, float, bool or None"):
            json.dumps(bad, indent=2)
        with pytest.raises(TypeError, match="keys must be str, int, float, bool or None"):
            dumps_indented(bad, 2)
    for bad in (Opaque(), [1, Opaque()], {"a": [Opaque()]}):
        with pytest.raises(TypeError, match="Object of type Opaque is not JSON serializable"):
            json.dumps(bad, indent=2)
        with pytest.raises(TypeError, match="Object of type Opaque is not JSON serializable"):
            dumps_indented(bad, 2)
    loop: list[object] = [1]
    loop.append({"back": loop})
    for dump in (lambda o: json.dumps(o, indent=2), lambda o: dumps_indented(o, 2)):
        with pytest.raises(ValueError, match="Circular reference detected"):
            dump(loop)
