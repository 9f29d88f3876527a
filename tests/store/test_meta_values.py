"""``store.queries.analysis.meta_values``: the samples of a split whose ``meta`` holds a key (what the report's
errata note reads in one query), on SQLite and PostgreSQL."""

from __future__ import annotations

from store.queries.analysis import meta_values


def test_meta_values_reads_the_samples_that_hold_the_key(engine):
    from store import session_scope
    from store.models import Sample

    def sample(sid: str, split: str, meta: dict) -> Sample:
        return Sample(
            id=sid,
            pair_id=f"p-{sid}",
            category="safety_permission",
            task="qa",
            label="benign",
            request="q",
            response="a",
            source="test",
            split=split,
            request_hash=sid,
            response_hash=sid,
            content_hash=sid,
            meta=meta,
        )

    wrong = {"verdict": "wrong", "reason": "r"}
    with session_scope(engine) as s:
        s.add_all(
            [
                sample("a", "test", {"erratum": wrong, "tier": "surface"}),
                sample("b", "test", {"note": "erratum"}),  # names it as a value, not a key
                sample("c", "test", {"erratum": {}}),  # an empty value
                sample("d", "train", {"erratum": wrong}),  # another split
                sample("e", "test", {}),
            ]
        )
    assert meta_values(engine, "erratum") == {"a": wrong}
    assert meta_values(engine, "erratum", split="train") == {"d": wrong}
    assert meta_values(engine, "absent") == {}
