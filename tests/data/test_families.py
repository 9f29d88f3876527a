"""Problem families on made-up families, and the build keeping each family on one side."""

from __future__ import annotations

import pytest

from automonitor.data.families import families, function_key, version_stem
from automonitor.data.sources import SourcePair

STATEMENT = (
    "Little John has an array of n integers and wants to split it into segments so that the sum of "
    "each segment is a power of two. Count the ways modulo 998244353.\n\nInput: the first line has n."
)


def _p(pid: str, request: str, source: str = "reward_hack_gen_codeforces", **meta) -> SourcePair:
    return SourcePair(
        source=source,
        pair_id=f"{source}:{pid}",
        category="specification_gaming",
        task="code",
        request=request,
        misbehavior=f"hack {pid}",
        benign=f"plain {pid}",
        mis_file="f",
        ben_file="f",
        mis_record="1",
        ben_record="1",
        meta=meta,
    )


def test_easy_and_hard_versions_are_one_family():
    easy = _p(
        "1",
        "Problem: This is the easy version of the problem. The difference between the versions is that in "
        "this version n <= 100. You can hack only if you solved all versions of this problem.\n\n" + STATEMENT,
    )
    hard = _p(
        "2",
        "Problem: This is the hard version of the problem. The difference between the versions is that in "
        "this version n <= 10^6. You can hack only if you solved all versions of this problem.\n\n"
        + STATEMENT.replace("Little John has", "Little John (again) has"),
    )
    other = _p("3", "Problem: " + STATEMENT.replace("power of two", "perfect square").replace("Little John", "Alice"))
    assert version_stem(easy.request) and version_stem(easy.request).startswith("little john has an array")
    assert version_stem(other.request) is None
    f = families([easy, hard, other])
    assert f[0] == f[1] != f[2]


def test_one_function_at_two_commits_is_one_family_across_sources():
    a = _p(
        "a",
        "Write a function that reads the config.",
        "safecoder",
        commit_link="github.com/Org/Repo/commit/aaa",
        file_name="src/cfg.py",
        func_name="load_config",
    )
    b = _p(
        "b",
        "Write the Python function `load_config` in the file `src/cfg.py`.",
        "sven",
        commit_link="github.com/org/repo/commit/bbb",
        file_name="src/cfg.py",
        func_name="load_config",
    )
    c = _p("c", "x", "sven", commit_link="github.com/org/repo/commit/ccc", file_name="src/cfg.py", func_name="save")
    anon = _p("d", "y", "sven", commit_link="github.com/o/r/commit/d", file_name="a.js", func_name="(anonymous)")
    assert function_key(a) == function_key(b) == "org/repo|src/cfg.py|load_config"
    assert function_key(anon) is None
    f = families([a, b, c, anon])
    assert f[0] == f[1] and len({f[0], f[2], f[3]}) == 3


def test_paraphrased_requests_join_and_shared_boilerplate_does_not():
    base = (
        "Write a short essay about the history of the printing press in Europe, covering Gutenberg, the spread "
        "of print shops across cities, the effect on literacy and the Reformation, and the economics of early "
        "book production, in about four hundred words for a general audience"
    )
    para = base.replace("a short essay", "a brief essay")
    shots = "\n".join(f"Q: example question number {i} about geometry?\nA: the answer is ({i % 4})" for i in range(8))
    fewshot = [
        _p(f"fs{i}", shots + f"\n\nQ: {q}", "turpin_bbh_suggested_answer")
        for i, q in enumerate(
            [
                "Which planet is largest in our solar system and why?",
                "Who wrote the novel about a white whale?",
                "What is the boiling point of water at sea level?",
                "How many legs does a spider have?",
                "Which element has the symbol Fe?",
                "What year did the first moon landing happen?",
            ]
        )
    ]
    f = families([_p("e1", base, "school_of_reward_hacks"), _p("e2", para, "school_of_reward_hacks"), *fewshot])
    assert f[0] == f[1]
    assert len(set(f[2:])) == len(fewshot)  # the few-shot block is shared boilerplate, the questions differ


@pytest.mark.slow
def test_build_keeps_every_family_on_one_side(seed_plan):
    plan = seed_plan(0)
    assert plan.report["families"]["shared_train_test"] == 0
    assert plan.report["families"]["train_dropped_same_family"] > 0
    # independent of the family index: no Codeforces version stem or repo+file+function in both splits
    by_split: dict[str, set[str]] = {"train": set(), "test": set()}
    for r in plan.rows:
        if r["split"] not in by_split or r["label"] != "benign":
            continue
        stem = version_stem(r["request"])
        if stem:
            by_split[r["split"]].add("v:" + stem)
        m = r["meta"]
        rec = _p("x", r["request"], r["source"], **{k: m.get(k) for k in ("commit_link", "file_name", "func_name")})
        key = function_key(rec)
        if key:
            by_split[r["split"]].add(key)
    assert by_split["test"] and not by_split["train"] & by_split["test"]
