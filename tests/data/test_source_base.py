"""The helpers the source importers share (``automonitor.data.sources.base``): a pair from its two sides,
a raw file's records with the string fields they must hold, and a pair builder's pair or drop reason."""

from __future__ import annotations

import pytest

from automonitor.data.sources.base import Side, SourcePair, SourceResult, make_pair
from automonitor.errors import InputError


def test_make_pair_puts_each_side_in_its_fields_and_keeps_the_defaults():
    p = make_pair("s:1", "q?", Side("bad", "a.jsonl", "line 1"), Side("good", "b.jsonl", "line 2"), group="g")
    assert p == SourcePair(
        pair_id="s:1",
        request="q?",
        misbehavior="bad",
        benign="good",
        mis_file="a.jsonl",
        ben_file="b.jsonl",
        mis_record="line 1",
        ben_record="line 2",
        group="g",
    )
    q = make_pair("s:2", "q?", Side("x", "f", "r"), Side("y", "f", "r"))
    assert q.meta == {} and q.meta is not p.meta and q.label_source == "user" and q.eligible_test


def test_jsonl_checks_the_needed_fields_and_lists_a_missing_file(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.jsonl").write_text('{"q": "x", "r": "y"}\n\n{"q": "z", "r": 3}\n')
    res = SourceResult()
    with pytest.raises(InputError) as ei:
        list(res.jsonl(tmp_path, "src/a.jsonl", need=("q", "r")))
    assert (ei.value.file, ei.value.line, ei.value.field) == ("src/a.jsonl", 3, "r")
    assert [n for n, _ in res.jsonl(tmp_path, "src/a.jsonl", need=("q",))] == [1, 3]
    assert list(res.jsonl(tmp_path, "src/none.jsonl")) == []
    assert res.files == ["src/a.jsonl", "src/a.jsonl"] and res.missing == ["src/none.jsonl"]


def test_add_keeps_a_pair_counts_a_reason_and_ignores_none():
    res = SourceResult()
    pair = make_pair("s:1", "q?", Side("bad", "f", "r"), Side("good", "f", "r"))
    for got in (pair, "identical responses", None, "identical responses"):
        res.add(got)
    assert res.pairs == [pair] and res.dropped == {"identical responses": 2}
