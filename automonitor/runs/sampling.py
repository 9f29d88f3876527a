"""Stratified subsets of the test set (``automonitor run --limit N --sample-seed S``).

Strata are category x task x label. Samples are drawn in units that keep pairs together: a complete
pair (same ``pair_id``, one misbehavior and one benign side) is one unit of two samples and belongs to
the strata of both its sides; a lone sample is a unit of one. Because every pair contributes one
sample to each label, drawing whole pairs keeps the two labels balanced inside each category x task
cell.

Allocation: the ``limit`` is split over the category x task cells in proportion to their sizes by
largest remainder (Hamilton's method), with at least one unit per non-empty cell while the budget
allows; inside a cell units are taken in a seeded random order. An odd budget (or a cell budget that
does not fit whole pairs) is completed with single sides, alternating labels, so the total is exactly
``min(limit, available)``. The result depends only on the set of samples and the seed.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections import defaultdict
from typing import Iterable, TypedDict

from automonitor.errors import InputError


def _key(seed: int, s: str) -> str:
    return hashlib.sha256(f"{seed}:{s}".encode()).hexdigest()


class Row(TypedDict):
    """A sample's id, pair, cell and label (a row with more columns, such as
    ``store.queries.rowtypes.SampleKey``, is one too)."""

    id: str
    pair_id: str
    category: str
    task: str
    label: str


Unit = list[Row]  # one drawing unit: a complete pair (misbehavior first) or a lone sample
Cell = tuple[str, str]  # (category, task)


def _units_by_cell(rows: list[Row]) -> dict[Cell, list[Unit]]:
    """Group samples into drawing units per category x task cell: a complete pair (two sides with
    both labels in the same cell, misbehavior first) is one unit, any other sample a unit of one."""
    by_pair: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_pair[r["pair_id"]].append(r)
    cells: dict[Cell, list[Unit]] = defaultdict(list)
    for members in by_pair.values():
        labels = sorted(m["label"] for m in members)
        if (
            len(members) == 2
            and labels == ["benign", "misbehavior"]
            and members[0]["category"] == members[1]["category"]
            and members[0]["task"] == members[1]["task"]
        ):
            cells[(members[0]["category"], members[0]["task"])].append(
                sorted(members, key=lambda m: m["label"], reverse=True)
            )
        else:
            for m in members:
                cells[(m["category"], m["task"])].append([m])
    return cells


def _hamilton_quota(sizes: dict[Cell, int], order: list[Cell], limit: int, floor_each: int) -> dict[Cell, int]:
    """Samples per cell: a floor of ``min(floor_each, size)`` each, the rest of ``limit`` in
    proportion to the cell sizes by largest remainder (ties in ``order``); with fewer samples than
    cells, one each for the first ``limit`` cells of ``order``."""
    total = sum(sizes.values())
    quota = {c: min(floor_each, sizes[c]) for c in order}
    remaining = limit - sum(quota.values())
    if remaining < 0:  # fewer samples than cells: one each for the first cells in seeded order
        return {c: (1 if i < limit else 0) for i, c in enumerate(order)}
    if remaining == 0:
        return quota
    exact = {c: remaining * sizes[c] / total for c in order}
    for c in order:
        quota[c] += min(int(math.floor(exact[c])), sizes[c] - quota[c])
    left = limit - sum(quota.values())
    by_rem = sorted(order, key=lambda c: (-(exact[c] - math.floor(exact[c])), order.index(c)))
    while left > 0:
        progressed = False
        for c in by_rem:
            if left > 0 and quota[c] < sizes[c]:
                quota[c] += 1
                left -= 1
                progressed = True
        if not progressed:
            break
    return quota


def _even_out(quota: dict[Cell, int], sizes: dict[Cell, int], order: list[Cell]) -> None:
    """Make cell quotas even where possible (whole pairs), in place: move one sample between two odd
    cells, within their sizes."""
    odd = [c for c in order if quota[c] % 2 == 1]
    while len(odd) >= 2:
        a = odd.pop(0)
        for b in list(odd):
            if quota[a] + 1 <= sizes[a] and quota[b] - 1 >= 0:
                quota[a] += 1
                quota[b] -= 1
                odd.remove(b)
                break
            if quota[b] + 1 <= sizes[b] and quota[a] - 1 >= 0:
                quota[b] += 1
                quota[a] -= 1
                odd.remove(b)
                break


def _pick(units: list[Unit], quota: int, seed: int, flip: int) -> tuple[list[str], int]:
    """Take whole units of one cell in their seeded order while they fit ``quota``, then complete with
    single sides of pairs that did not fit, alternating labels (``flip`` counts single sides taken so
    far over all cells). Returns ``(sample ids, new flip)``."""
    picked: list[str] = []
    leftovers: list[Row] = []
    for unit in units:
        if len(picked) + len(unit) <= quota:
            picked.extend(m["id"] for m in unit)
        elif len(unit) > 1:
            leftovers.extend(unit)
    if len(picked) < quota:
        leftovers.sort(
            key=lambda m: (m["label"] != ("misbehavior" if flip % 2 == 0 else "benign"), _key(seed, m["id"]))
        )
        for m in leftovers:
            if len(picked) >= quota:
                break
            picked.append(m["id"])
            flip += 1
    return picked, flip


def stratified_sample(samples: Iterable[Row], limit: int | None, seed: int = 0) -> list[str]:
    """Choose at most ``limit`` sample ids, stratified by category x task x label, pairs kept together.

    Args:
        samples: mappings with ``id``, ``pair_id``, ``category``, ``task``, ``label``.
        limit: number of samples wanted (``None`` = all of them).
        seed: the sampling seed (``--sample-seed``).

    Returns:
        Sample ids, sorted.

    Raises:
        InputError: ``limit`` < 1 (field ``limit``).
    """
    rows = list(samples)
    if limit is None or limit >= len(rows):
        return sorted(r["id"] for r in rows)
    if limit < 1:
        raise InputError("--limit must be at least 1", field="limit")

    rng_order = {
        c: sorted(units, key=lambda u: _key(seed, "|".join(sorted(m["id"] for m in u))))
        for c, units in _units_by_cell(rows).items()
    }
    sizes = {c: sum(len(u) for u in units) for c, units in rng_order.items()}
    order = sorted(sizes, key=lambda c: _key(seed, "cell:" + "/".join(c)))
    # Hamilton allocation of the sample budget over cells, with a floor of min(2, size) per cell when possible
    floor_each = 2 if limit >= 2 * len(order) else (1 if limit >= len(order) else 0)
    quota = _hamilton_quota(sizes, order, limit, floor_each)
    if floor_each == 2:
        _even_out(quota, sizes, order)
    chosen: list[str] = []
    flip = 0
    for c in order:
        picked, flip = _pick(rng_order[c], quota[c], seed, flip)
        chosen.extend(picked)
    return sorted(chosen)


def stratum_counts(samples: Iterable[Row], ids: Iterable[str]) -> dict[str, int]:
    """Counts of the chosen ``ids`` per ``category/task/label`` (for reports and tests)."""
    want = set(ids)
    out: dict[str, int] = defaultdict(int)
    for r in samples:
        if r["id"] in want:
            out[f"{r['category']}/{r['task']}/{r['label']}"] += 1
    return dict(sorted(out.items()))


def seeded_shuffle(ids: list[str], seed: int) -> list[str]:
    """A deterministic shuffle of ``ids`` (used to order work; not part of the selection)."""
    out = list(ids)
    random.Random(seed).shuffle(out)
    return out
