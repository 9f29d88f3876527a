"""Stratified subsets: exact size, every category x task x label covered, pairs kept together,
deterministic per seed, proportional to the cells."""

import itertools
from collections import Counter

import pytest

from automonitor.errors import InputError
from automonitor.runs.sampling import stratified_sample, stratum_counts
from automonitor.vocab import CATEGORIES, TASKS


def make(sizes: dict[tuple[str, str], int], singles: int = 0) -> list[dict]:
    """Pairs per (category, task) cell, plus some unpaired samples."""
    rows = []
    for (cat, task), n in sizes.items():
        for i in range(n):
            pid = f"{cat}-{task}-{i}"
            for label in ("misbehavior", "benign"):
                rows.append({"id": f"{pid}-{label[0]}", "pair_id": pid, "category": cat, "task": task, "label": label})
    for i in range(singles):
        rows.append(
            {
                "id": f"single-{i}",
                "pair_id": f"single-{i}",
                "category": CATEGORIES[i % 3],
                "task": "qa",
                "label": "misbehavior" if i % 2 else "benign",
            }
        )
    return rows


SIZES = {(c, t): 10 + 7 * i for i, (c, t) in enumerate(itertools.product(CATEGORIES, TASKS))}
ROWS = make(SIZES, singles=5)
BY_ID = {r["id"]: r for r in ROWS}


@pytest.mark.parametrize("limit", [1, 7, 18, 120, 121, 300])
def test_exact_size(limit):
    ids = stratified_sample(ROWS, limit, seed=1)
    assert len(ids) == limit == len(set(ids))


def test_all_strata_covered_and_labels_balanced():
    ids = stratified_sample(ROWS, 120, seed=3)
    cells = stratum_counts(ROWS, ids)
    assert len(cells) == 18  # 3 categories x 3 tasks x 2 labels
    for cat, task in itertools.product(CATEGORIES, TASKS):
        mis, ben = cells[f"{cat}/{task}/misbehavior"], cells[f"{cat}/{task}/benign"]
        assert abs(mis - ben) <= 1


def test_pairs_are_kept_together():
    ids = set(stratified_sample(ROWS, 120, seed=5))
    pairs = Counter(BY_ID[i]["pair_id"] for i in ids if not i.startswith("single"))
    assert sum(1 for n in pairs.values() if n == 1) <= 1  # only an odd cell budget splits a pair
    ids_odd = set(stratified_sample(ROWS, 121, seed=5))
    pairs_odd = Counter(BY_ID[i]["pair_id"] for i in ids_odd if not i.startswith("single"))
    assert sum(1 for n in pairs_odd.values() if n == 1) <= 9


def test_allocation_is_proportional_to_cell_sizes():
    ids = stratified_sample(ROWS, 200, seed=0)
    per_cell = Counter((BY_ID[i]["category"], BY_ID[i]["task"]) for i in ids)
    total = len(ROWS)
    for cell, n in SIZES.items():
        expected = (
            200
            * (2 * n + sum(1 for r in ROWS if r["id"].startswith("single") and (r["category"], r["task"]) == cell))
            / total
        )
        assert abs(per_cell[cell] - expected) <= 3, (cell, per_cell[cell], expected)


def test_deterministic_per_seed_and_seed_changes_choice():
    a = stratified_sample(ROWS, 60, seed=11)
    assert a == stratified_sample(list(reversed(ROWS)), 60, seed=11)  # input order does not matter
    assert a != stratified_sample(ROWS, 60, seed=12)


def test_no_limit_or_large_limit_takes_everything():
    assert stratified_sample(ROWS, None) == sorted(r["id"] for r in ROWS)
    assert stratified_sample(ROWS, 10_000) == sorted(r["id"] for r in ROWS)


def test_bad_limit_is_input_error():
    with pytest.raises(InputError) as e:
        stratified_sample(ROWS, 0)
    assert e.value.field == "limit"


def test_small_limits_spread_over_cells():
    ids = stratified_sample(ROWS, 9, seed=2)
    assert len({(BY_ID[i]["category"], BY_ID[i]["task"]) for i in ids}) == 9
