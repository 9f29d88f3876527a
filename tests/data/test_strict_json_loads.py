"""``records.loads`` (the importers' strict JSON) parses first and checks the value in one pass, scanning
the text character by character only on a fault. Its results and errors are those of the former order
(scan every text for depth, then parse, then look for non-finite numbers), kept below as the reference:
the same value, or the same error type, message and path, for any text."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from automonitor.data import records
from automonitor.data.records import JSONLimitError, json_depth, loads, meta_problem, nonfinite_path
from automonitor.jsontypes import unique_keys


def _reference_loads(text: str, max_depth: int = records.MAX_JSON_DEPTH):
    """``records.loads`` as it was: the depth scan of the whole text first, then the parse, then the paths."""
    deep, key = records._depth_exceeded(text, max_depth)
    if deep:
        raise JSONLimitError(f"nested more than {max_depth} levels deep (at most {max_depth})", key)
    obj = json.loads(text, parse_constant=float, object_pairs_hook=unique_keys)
    stack = [(obj, None)]
    while stack:  # the former nonfinite_path, walking every value with its path
        v, p = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            raise JSONLimitError(
                "is not a finite number (NaN, Infinity and numbers like 1e999 are not allowed)",
                None if p is None else p,
            )
        if isinstance(v, dict):
            stack.extend((x, records._path(p, k)) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((x, records._path(p, i)) for i, x in reversed(list(enumerate(v))))
    return obj


def _outcome(fn, text: str, max_depth: int):
    try:
        value = fn(text, max_depth=max_depth) if fn is loads else fn(text, max_depth)
    except JSONLimitError as exc:
        return ("limit", exc.msg, exc.path)
    except ValueError as exc:
        return ("malformed", type(exc).__name__, str(exc))
    return ("ok", json.dumps(value, allow_nan=True, sort_keys=False))


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet='ab{}[]":,\\ \u00e9', max_size=6),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(alphabet="ab[{", max_size=2), inner, max_size=3)
    ),
    max_leaves=12,
)


def _texts():
    """JSON texts (NaN/Infinity as JSON's constants, brackets inside strings), some wrapped in nesting up to
    past the limit, some broken (cut short, a duplicate key spliced in, 1e999)."""
    base = _values.map(lambda v: json.dumps(v, allow_nan=True))
    wrapped = st.tuples(base, st.integers(0, 8), st.sampled_from(["[", '{"k": '])).map(
        lambda t: t[2] * t[1] + t[0] + ("]" if t[2] == "[" else "}") * t[1]
    )
    broken = st.tuples(wrapped, st.integers(0, 40), st.sampled_from(["", '"a": 1, "a": 2', "1e999", "NaN", "]"])).map(
        lambda t: t[0][: t[1]] + t[2] + t[0][t[1] :]
    )
    return st.one_of(base, wrapped, broken)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(text=_texts(), max_depth=st.integers(1, 6))
@example(text='{"a": {"b": [1, NaN]}}', max_depth=4)
@example(text='{"a": [[[[1]]]], "a": 2}', max_depth=3)
@example(text='{"a": [[[[1]]]]', max_depth=3)
@example(text="[" * 2000 + "]" * 2000, max_depth=64)
@example(text='{"x": "' + "{[" * 50 + '"}', max_depth=4)
def test_loads_gives_what_the_former_order_gave(text, max_depth):
    assert _outcome(loads, text, max_depth) == _outcome(_reference_loads, text, max_depth)


@given(value=_values)
def test_the_one_pass_check_agrees_with_the_path_walk(value):
    """``json_depth`` and ``nonfinite_path`` (now behind the one-pass check) against a plain walk; so does
    ``meta_problem``'s first fault."""

    def depth(v):
        if isinstance(v, dict):
            return 1 + max(map(depth, v.values()), default=0)
        if isinstance(v, list):
            return 1 + max(map(depth, v), default=0)
        return 0

    assert json_depth(value) == depth(value)
    found = nonfinite_path(value, "meta")
    has = "inf" in json.dumps(value, allow_nan=True).lower() or "nan" in json.dumps(value, allow_nan=True).lower()
    if found is None:
        assert not any(isinstance(x, float) and not math.isfinite(x) for x in _leaves(value)), (
            "a non-finite number was missed"
        )
    else:
        assert has and meta_problem(value).startswith(found)


def _leaves(v):
    if isinstance(v, dict):
        for x in v.values():
            yield from _leaves(x)
    elif isinstance(v, list):
        for x in v:
            yield from _leaves(x)
    else:
        yield v


@pytest.mark.parametrize("text", ['{"a": ' * 1000 + "1" + "}" * 1000, "[" * 100_000])
def test_a_text_deeper_than_the_parsers_stack_is_refused_as_too_deep_never_a_recursion_error(text):
    with pytest.raises(JSONLimitError, match="nested more than 64 levels deep") as ei:
        loads(text)
    assert ei.value.path == ("a" if text.startswith("{") else None)
