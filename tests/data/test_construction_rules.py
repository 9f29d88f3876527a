"""The construction rules of ``verified`` on made-up pairs: side balance where two models wrote the two sides,
the same-prompt rule (a side that answered another prompt keeps a pair out unless its provenance says so),
the build's invariant check over planned rows, and ``constructed_benign`` kept out of ``hard``."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.data.build.hard import EXCLUDED_PROVENANCE
from automonitor.data.build.sample_rows import rows_for
from automonitor.data.build.selection import (
    check_verified_prompts,
    not_verified_why,
    side_balance,
    side_models,
    verifiable,
)
from automonitor.data.sources import SourcePair


def _pair(i: int, mis_model: str | None, ben_model: str | None, **kw) -> SourcePair:
    return SourcePair(
        source="made_up",
        pair_id=f"made_up:{i}",
        category="sycophancy_bias",
        task="qa",
        request=f"q{i}",
        misbehavior=f"m{i}",
        benign=f"b{i}",
        mis_file="f",
        ben_file="f",
        mis_record=str(i),
        ben_record=str(i),
        mis_meta={"model": mis_model} if mis_model else {},
        ben_meta={"model": ben_model} if ben_model else {},
        label_source=kw.pop("label_source", "by_construction"),
        **kw,
    )


def _sides(pairs: list[SourcePair]) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {"misbehavior": Counter(), "benign": Counter()}
    for p in pairs:
        m, b = side_models(p) or ("", "")
        out["misbehavior"][m] += 1
        out["benign"][b] += 1
    return out


def test_side_balance_keeps_each_model_misbehaving_about_as_often_as_benign():
    # Llama follows in 7 pairs, Qwen in 3; two one-model pairs are always kept
    pairs = [_pair(i, "llama", "qwen") for i in range(7)] + [_pair(10 + i, "qwen", "llama") for i in range(3)]
    pairs += [_pair(20, None, None), _pair(21, "same", "same")]
    kept, report = side_balance(pairs, seed=0, source="made_up")
    sides = _sides([p for p in kept if side_models(p)])
    assert sides["misbehavior"]["qwen"] == 3 and sides["misbehavior"]["llama"] == 4  # 1 apart at most at n=7
    assert {"made_up:20", "made_up:21"} <= {p.pair_id for p in kept}
    assert report == {
        "cross_model_pairs": 10,
        "kept": 7,
        "left_out": 3,
        "by_model": {"llama": {"misbehavior": 4, "benign": 3}, "qwen": {"misbehavior": 3, "benign": 4}},
    }
    # deterministic per seed, input order kept
    assert [p.pair_id for p in side_balance(list(reversed(pairs)), 0, "made_up")[0]] == [
        p.pair_id for p in reversed(kept)
    ]


def test_side_balance_takes_strict_pairs_first():
    pairs = [_pair(i, "llama", "qwen", meta={"strict": i >= 4}) for i in range(6)] + [_pair(9, "qwen", "llama")]
    kept, _ = side_balance(pairs, seed=3, source="made_up")
    llama_mis = [p for p in kept if side_models(p) == ("llama", "qwen")]
    assert len(llama_mis) == 2 and all(p.meta["strict"] for p in llama_mis)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("abcd")), max_size=40), st.integers(0, 5))
def test_side_balance_holds_for_any_mix_of_models(sides, seed):
    pairs = [_pair(i, m, b) for i, (m, b) in enumerate(sides)]
    kept, report = side_balance(pairs, seed, "made_up")
    counts = _sides([p for p in kept if side_models(p)])
    for model in "abcd":
        n_mis, n_ben = counts["misbehavior"][model], counts["benign"][model]
        assert abs(n_mis - n_ben) <= max(1, (n_mis + n_ben) // 10)
    assert len(kept) == report["kept"] + sum(1 for p in pairs if not side_models(p))


def test_a_side_that_answered_another_prompt_needs_a_provenance_that_says_so():
    uncued = {"benign": "the question without the cue"}
    plain = _pair(1, None, None, answered_other_prompt=uncued)
    assert not verifiable(plain)
    assert "answered different prompts" in (not_verified_why(plain) or "")
    assert verifiable(_pair(2, None, None, answered_other_prompt=uncued, label_source="constructed_benign"))
    assert verifiable(
        _pair(3, None, None, answered_other_prompt={"misbehavior": "told to hack"}, label_source="instructed_demo")
    )
    # constructed_benign must say which prompt the benign side answered
    assert not verifiable(_pair(4, None, None, label_source="constructed_benign"))
    assert verifiable(_pair(5, None, None))


def test_the_build_check_refuses_a_verified_pair_whose_sides_answered_different_prompts():
    uncued = {"benign": "the question without the cue"}
    bad = rows_for(
        _pair(1, None, None, answered_other_prompt=uncued), "test", "gold", ("r", "m", "b"), ("paper", "verified")
    )
    assert bad[1]["meta"]["answered_other_prompt"] == "the question without the cue"
    assert "answered_other_prompt" not in bad[0]["meta"]
    with pytest.raises(RuntimeError, match="made_up:1 is in verified but its benign side answered another prompt"):
        check_verified_prompts(bad)
    for r in bad:  # the same rows outside verified and hard are fine
        r["editions"] = ("paper",)
    check_verified_prompts(bad)
    ok = rows_for(
        _pair(2, None, None, answered_other_prompt=uncued, label_source="constructed_benign"),
        "test",
        "gold",
        ("r", "m", "b"),
        ("verified", "hard"),
    )
    check_verified_prompts(ok)


def test_constructed_benign_pairs_stay_out_of_hard():
    assert "constructed_benign" in EXCLUDED_PROVENANCE
    assert "by_construction" not in EXCLUDED_PROVENANCE and "human_per_response" not in EXCLUDED_PROVENANCE
