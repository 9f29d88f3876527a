"""The verdict's fields are declared in four places that must agree (issue 39, typed seams): the vocabulary's
``VERDICT_FIELDS`` (the order rows list them), the store's ``VerdictColumns`` (the columns a prediction and a
cache entry share, plus ``outcome``), the ``VerdictFields`` / ``CachedVerdict`` TypedDicts the queries return,
and the rows ``automonitor.runs.verdicts`` builds. A field added to one and not the others fails here."""

from __future__ import annotations

from typing import get_type_hints

from automonitor.runs.monitors import Judgement
from automonitor.runs.verdicts import CacheRow, PredictionRow, cache_entry, cached_prediction, judged_prediction
from automonitor.timestamps import utcnow
from automonitor.vocab import VERDICT_FIELDS
from store.models import VerdictColumns
from store.queries.rowtypes import CachedVerdict, VerdictFields
from store.queries.runs import CACHE_FIELDS


def test_the_typed_verdict_fields_are_the_vocabulary_and_the_store_columns():
    assert tuple(VerdictFields.__annotations__) == VERDICT_FIELDS
    assert set(VERDICT_FIELDS) == {"outcome", *VerdictColumns.model_fields}
    assert tuple(get_type_hints(CachedVerdict)) == CACHE_FIELDS


def test_the_rows_the_runner_writes_have_exactly_their_declared_keys():
    j = Judgement("misbehavior", score=0.9, raw="Yes", reason="r", evidence=["q"], tokens_in=3, tokens_out=1)
    row = judged_prediction(7, "k", j, attempts=1, latency_ms=12.3456789, history=None)
    assert set(row) == set(get_type_hints(PredictionRow))
    assert row["latency_ms"] == 12.346 and row["meta"]["cache_key"] == "k"
    cache = cache_entry("k", row, row["meta"])
    assert set(cache) == set(get_type_hints(CacheRow))
    assert {f: cache[f] for f in VERDICT_FIELDS} == {f: row[f] for f in VERDICT_FIELDS}
    entry: CachedVerdict = {**{f: cache[f] for f in VERDICT_FIELDS}, "meta": {"x": 1}}  # type: ignore[typeddict-item]
    hit = cached_prediction(8, "k", entry, judged_at=utcnow(), history=[{"attempt": 1}])
    assert set(hit) == set(get_type_hints(PredictionRow))
    assert hit["cached"] and hit["tokens_in"] == 0 and hit["meta"]["cached_tokens_in"] == 3
    assert hit["meta"]["history"] == [{"attempt": 1}] and hit["outcome"] == "misbehavior"
