"""The build report: per-source selection counts, quotas and shortfalls, editions, gates, controls,
candidates and train (the JSON of ``automonitor build --json`` and the ``BuildLog`` report)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from automonitor.data.build.config import PAPER_R2
from automonitor.data.build.selection import SHARING_SOURCES, Candidates, Pool, TestSet, TrainCounts, editions_of
from automonitor.vocab import CATEGORIES, EDITIONS, PAPER_QUOTAS


def report_source_counts(
    report: dict[str, Any], pool: Pool, test: TestSet, cands: Candidates, train: TrainCounts
) -> None:
    """Add the selection counts and label provenances to each ``report["sources"][name]``."""
    for name, pairs in pool.pairs.items():
        s = report["sources"][name]
        s["test_pairs"] = len(test.pairs.get(name, []))
        s["paper_pairs"] = sum(p.pair_id in test.paper_ids for p in test.pairs.get(name, []))
        # test pairs that failed a gate (an erratum included): the paper mirror keeps them (its noise), so a
        # source can have more test pairs than pairs passing the gates (``eligible_for_test``)
        s["test_pairs_failing_gates"] = sum(bool(p.gate) for p in test.pairs.get(name, []))
        s[f"{PAPER_R2}_pairs"] = sum(p.pair_id in test.r2_ids for p in test.pairs.get(name, []))
        s["candidate_pairs"] = len(cands.get(name, []))
        s["train_pairs"] = train.kept[name]
        s["train_dropped_hash_collision"] = train.dropped_collision[name]
        s["train_dropped_same_family"] = train.dropped_family[name]
        if name == "hh_rlhf":
            s["train_dropped_same_conversation"] = train.dropped_conversation[name]
        s["label_source"] = sorted({p.label_source for p in pairs})


def report_quotas(report: dict[str, Any], test: TestSet) -> None:
    """Add ``paper_cells`` (the ``paper`` edition by cell: target, built, missing, by source, why),
    ``paper_cell_deficit`` (``{"cat/task": pairs missing}``, cells short only), ``paper_category_totals``
    (samples per category, following the cells), ``quotas``, ``category_quotas`` (edition
    ``paper-r2``), ``shortfalls`` (paper cells first, then ``paper-r2`` sources and categories, each row with
    its ``edition``) and ``test`` (the ``paper-r2`` mirror: pairs, samples, by category, by category x
    task) to ``report``."""
    report["paper_cells"] = test.cells
    report["paper_cell_deficit"] = {
        f"{c['category']}/{c['task']}": c["missing_pairs"] for c in test.cells if c["missing_pairs"] > 0
    }
    cell_totals: Counter[str] = Counter()
    for c in test.cells:
        cell_totals[c["category"]] += 2 * c["built_pairs"]
    report["paper_category_totals"] = {cat: cell_totals[cat] for cat in CATEGORIES}
    quotas = test.quotas
    shortfalls: list[dict[str, Any]] = [
        {
            "edition": "paper",
            "cell": f"{c['category']}/{c['task']}",
            "category": c["category"],
            "task": c["task"],
            "target_pairs": c["target_pairs"],
            "built_pairs": c["built_pairs"],
            "missing_pairs": c["missing_pairs"],
            "why": c["why"],
        }
        for c in test.cells
        if c["missing_pairs"] > 0
    ]
    shortfalls += [
        {**q, "edition": PAPER_R2, "missing_pairs": q["target_pairs"] - q["built_pairs"]}
        for q in quotas
        if q["built_pairs"] < q["target_pairs"] and q["source"] not in SHARING_SOURCES
    ]
    cat_built: Counter[str] = Counter()
    for q in quotas:
        cat_built[q["category"]] += 2 * q["built_pairs"]
    report["quotas"] = quotas
    report["category_quotas"] = {
        c: {"target_samples": PAPER_QUOTAS[c], "built_samples": cat_built[c]} for c in CATEGORIES
    }
    for c in CATEGORIES:
        if cat_built[c] < PAPER_QUOTAS[c]:
            shortfalls.append(
                {
                    "edition": PAPER_R2,
                    "category": c,
                    "target_samples": PAPER_QUOTAS[c],
                    "built_samples": cat_built[c],
                    "missing_samples": PAPER_QUOTAS[c] - cat_built[c],
                }
            )
    report["shortfalls"] = shortfalls
    n_test = len(test.r2_ids)
    by_ct: dict[str, dict[str, int]] = defaultdict(dict)
    for q in quotas:
        by_ct[q["category"]][q["task"]] = by_ct[q["category"]].get(q["task"], 0) + 2 * q["built_pairs"]
    report["test"] = {
        "pairs": n_test,
        "samples": 2 * n_test,
        "by_category": dict(cat_built),
        "by_category_task": dict(by_ct),
    }


def edition_report(test: TestSet) -> dict[str, dict[str, Any]]:
    """Per edition: test pairs, samples, pairs by ``category/task`` and by source."""
    eds: dict[str, dict[str, Any]] = {}
    for ed in EDITIONS:
        ps = [p for ts in test.pairs.values() for p in ts if ed in editions_of(p, test)]
        ct: Counter[str] = Counter(f"{p.category}/{p.task}" for p in ps)
        srcs: Counter[str] = Counter(p.source for p in ps)
        eds[ed] = {
            "pairs": len(ps),
            "samples": 2 * len(ps),
            "by_category_task": dict(sorted(ct.items())),
            "by_source": dict(sorted(srcs.items())),
        }
    return eds


def report_pools(
    report: dict[str, Any], pool: Pool, cands: Candidates, train: TrainCounts, ctrl_n: Counter[str]
) -> None:
    """Add ``gates`` (with the hh_rlhf conversation split), ``controls``, ``candidates`` and ``train``
    to ``report``."""
    report["gates"] = {k: dict(sorted(v.items())) for k, v in sorted(pool.gates.items()) if v}
    report["gates"]["hh_rlhf conversation split"] = {
        "conversations": len(set(pool.conv.values())),
        "train_pairs_dropped_same_conversation": train.dropped_conversation["hh_rlhf"],
    }
    report["controls"] = {"samples": sum(ctrl_n.values()), "by_source": dict(ctrl_n)}
    n_cand = sum(len(v) for v in cands.values())
    report["candidates"] = {
        "pairs": n_cand,
        "samples": 2 * n_cand,
        "by_source": {k: len(v) for k, v in cands.items()},
        "by_reason": dict(Counter((why or "planned draw").split(":")[0] for cs in cands.values() for _, why in cs)),
    }
    report["train"] = {"pairs": sum(train.kept.values()), "samples": 2 * sum(train.kept.values())}
