"""Loading predictions decodes the evidence texts in one ``json.loads`` call
(``store.queries.analysis.decode_lists``): the same lists as decoding each text alone (``decode_list``),
on generated JSON texts, empty values and texts that are not one JSON value."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.queries.analysis import decode_list, decode_lists

scalars = st.one_of(st.text(max_size=12), st.integers(-5, 5), st.none(), st.booleans())
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=4), scalars, max_size=2))
texts = st.one_of(st.sampled_from([None, "", "[]"]), values.map(json.dumps))


@settings(max_examples=300, deadline=None)
@given(st.lists(texts, max_size=20))
def test_batch_decode_equals_one_by_one(vs):
    assert decode_lists(vs) == [decode_list(v) for v in vs]


def test_a_text_of_two_values_is_not_split_across_rows():
    """'"a", "b"' is not one JSON value: decoding it alone fails, and so does the batch (it does not read
    it as two rows' evidence)."""
    with pytest.raises(ValueError):
        decode_list('"a", "b"')
    with pytest.raises(ValueError):
        decode_lists(['"a", "b"', "[1]"])


def test_invalid_json_raises_as_before():
    with pytest.raises(ValueError):
        decode_lists(['["a"', "[1]"])
    with pytest.raises(ValueError):
        decode_list('["a"')
