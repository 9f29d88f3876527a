"""One pair per sample (:func:`automonitor.data.build.selection.gated_pool`): two sources can pair the same
run differently (a model's cued answer is the misbehavior side of its own cued/uncued pair AND of a
cross-model pair); the seed-0 build had 45 such misbehavior samples counted twice in ``verified``. The
rule, on generated pools: no sample is in two pool pairs, a same-prompt pair beats a constructed-benign
one, a passing pair beats a gated one, and a pair is dropped only for a sample some kept pair has."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.data.build.selection import SHARED_SAMPLE, gated_pool
from automonitor.data.sources import SourcePair, SourceResult

SOURCES = ("turpin_bbh_suggested_answer", "turpin_bbh_cross_model")  # registry order: suggested loads first


def _pair(source: str, i: int, req: int, mis: int, ben: int, constructed: bool) -> SourcePair:
    return SourcePair(
        source=source,
        pair_id=f"{source}:{i}",
        category="sycophancy_bias",
        task="reasoning",
        request=f"Question {req}. I think the answer is (B).",
        misbehavior=f"Following the hint, the answer is (B). run {mis}",
        benign=f"Working it out, the answer is (A). run {ben}",
        mis_file="f",
        ben_file="f",
        mis_record=str(i),
        ben_record=str(i),
        label_source="constructed_benign" if constructed else "by_construction",
        answered_other_prompt={"benign": "the uncued prompt"} if constructed else {},
    )


def _pool(specs: dict[str, list[tuple[int, int, int]]]):
    results = {
        src: SourceResult(
            pairs=[_pair(src, i, r, m, b, src == SOURCES[0]) for i, (r, m, b) in enumerate(specs.get(src, []))]
        )
        for src in SOURCES
    }
    report: dict = {"sources": {}}
    return gated_pool(results, report), report


def _samples(p: SourcePair) -> set[tuple[str, str]]:
    return {(p.request, p.misbehavior), (p.request, p.benign)}


def test_the_cross_model_pair_keeps_the_shared_cued_answer():
    # the same cued run (question 1, run 7) is the misbehavior of both pairs
    pool, report = _pool({SOURCES[0]: [(1, 7, 8)], SOURCES[1]: [(1, 7, 9)]})
    assert [p.pair_id for p in pool.pairs[SOURCES[1]]] == [f"{SOURCES[1]}:0"]
    assert pool.pairs[SOURCES[0]] == [] and f"{SOURCES[0]}:0" not in pool.hashes
    assert report["sources"][SOURCES[0]]["dropped"] == {SHARED_SAMPLE: 1}
    assert report["sources"][SOURCES[0]]["pairs_available"] == 0
    assert SHARED_SAMPLE not in report["sources"][SOURCES[1]]["dropped"]


def test_the_same_response_to_another_request_is_another_sample():
    pool, _ = _pool({SOURCES[0]: [(1, 7, 8)], SOURCES[1]: [(2, 7, 9)]})
    assert len(pool.pairs[SOURCES[0]]) == len(pool.pairs[SOURCES[1]]) == 1


triples = st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(6, 9))


@settings(max_examples=200, deadline=None)
@given(st.lists(triples, max_size=8), st.lists(triples, max_size=8))
def test_no_sample_is_in_two_pairs_and_each_drop_names_a_kept_owner(suggested, cross):
    pool, report = _pool({SOURCES[0]: suggested, SOURCES[1]: cross})
    kept = [p for src in SOURCES for p in pool.pairs[src]]
    seen: Counter = Counter(s for p in kept for s in _samples(p))
    assert all(n == 1 for n in seen.values())  # one pair per sample
    assert set(pool.hashes) == {p.pair_id for p in kept}
    # a cross-model pair (both sides saw the request) is dropped only for a sample another cross pair has
    kept_cross = {s for p in pool.pairs[SOURCES[1]] for s in _samples(p)}
    order = [(src, i) for src, spec in ((SOURCES[0], suggested), (SOURCES[1], cross)) for i in range(len(spec))]
    earlier = [
        (_pair(src, i, *spec[i], False).misbehavior, _pair(src, i, *spec[i], False).benign)
        for src, spec in ((SOURCES[0], suggested), (SOURCES[1], cross))
        for i in range(len(spec))
    ]  # every input pair's responses, in load order
    for src, spec in ((SOURCES[0], suggested), (SOURCES[1], cross)):
        ids = {p.pair_id for p in pool.pairs[src]}
        lost = 0
        for i, (r, m, b) in enumerate(spec):
            p = _pair(src, i, r, m, b, src == SOURCES[0])
            if p.pair_id in ids:
                continue
            same_responses = (p.misbehavior, p.benign) in earlier[: order.index((src, i))]  # the pair-level rule
            assert same_responses or _samples(p) & set(seen), p.pair_id
            if src == SOURCES[1] and not same_responses:
                assert _samples(p) & kept_cross, p.pair_id
            lost += not same_responses
        assert report["sources"][src]["dropped"].get(SHARED_SAMPLE, 0) <= lost
