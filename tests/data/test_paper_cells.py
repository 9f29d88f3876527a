"""The ``paper`` edition's cell draw (:func:`automonitor.data.build.selection.select_cells`) and the build
table's honest quota cell, on made-up pools (no raw data)."""

from __future__ import annotations

from automonitor.data.build.config import Cell
from automonitor.data.build.sample_rows import pair_hashes
from automonitor.data.build.selection import Pool, select_cells, editions_of
from automonitor.data.build.selection import TestSet as SelectedTests  # not "Test*": pytest would collect it
from automonitor.cli.data import quota_cell, shortfall_text
from automonitor.data.sources import SourcePair


def _pair(source: str, i: int, gate: str | None = None) -> SourcePair:
    return SourcePair(
        source=source,
        pair_id=f"{source}:{i}",
        category="sycophancy_bias",
        task="qa",
        request=f"q {source} {i}",
        misbehavior=f"bad {source} {i}",
        benign=f"good {source} {i}",
        mis_file="f",
        ben_file="f",
        mis_record=str(i),
        ben_record=str(i),
        gate=gate,
    )


def _pool(**sizes: int) -> Pool:
    pool = Pool()
    for src, n in sizes.items():
        pool.pairs[src] = [_pair(src, i, gate="noisy" if i == 0 else None) for i in range(n)]
        for p in pool.pairs[src]:
            pool.hashes[p.pair_id] = pair_hashes(p)
    return pool


CELL = Cell("sycophancy_bias", "qa", 10, ("first", "second"), "not enough public pairs")


def test_a_cell_takes_its_sources_in_order_and_states_its_deficit():
    pool = _pool(first=4, second=3, other=50)
    test = SelectedTests()
    select_cells(pool, 0, test, (CELL,))
    (row,) = test.cells
    assert row["by_source"] == {"first": 4, "second": 3}  # all of the first, then the second
    assert (row["built_pairs"], row["missing_pairs"], row["why"]) == (7, 3, "not enough public pairs")
    assert "other" not in test.pairs  # never padded with another cell's source
    ed = {p.pair_id: editions_of(p, test) for ps in test.pairs.values() for p in ps}
    assert len(ed) == 7 and all("paper" in e for e in ed.values())
    # the gate-failing pair counts for paper (its noise) but is not verified
    assert ed["first:0"] == ("paper",) and ed["first:1"] == ("paper", "verified")


def test_a_full_cell_reuses_its_paper_r2_pairs_first_and_stops_at_its_count():
    pool = _pool(first=30, second=30)
    test = SelectedTests()
    drawn = pool.pairs["first"][5:8]
    test.pairs["first"] = list(drawn)
    test.r2_ids = {p.pair_id for p in drawn}
    select_cells(pool, 0, test, (CELL,))
    (row,) = test.cells
    assert row["by_source"] == {"first": 10} and row["missing_pairs"] == 0 and row["why"] is None
    assert test.pairs["first"][:3] == drawn and "second" not in test.pairs
    assert all(editions_of(p, test)[:2] == ("paper", "paper-r2") for p in drawn)
    # another seed draws other pairs, the same seed the same
    again, other = SelectedTests(), SelectedTests()
    select_cells(pool, 0, again, (CELL,))
    select_cells(pool, 1, other, (CELL,))
    assert again.paper_ids == _fresh(pool, 0) and again.paper_ids != other.paper_ids


def _fresh(pool: Pool, seed: int) -> set[str]:
    t = SelectedTests()
    select_cells(pool, seed, t, (CELL,))
    return t.paper_ids


def test_build_table_shows_a_quota_a_source_cannot_fill_honestly():
    assert quota_cell(None, 0) == "-"
    assert quota_cell(481, 481) == "481"
    assert quota_cell(481, 38) == "481 (only 38)"
    cell = {"edition": "paper", "cell": "sycophancy_bias/qa", "category": "sycophancy_bias", "task": "qa"}
    cell |= {"target_pairs": 204, "built_pairs": 96, "missing_pairs": 108, "why": "no public responses"}
    assert shortfall_text(cell) == "paper cell sycophancy_bias/qa: 96 of 204 pairs (108 short): no public responses"
    src = {"edition": "paper-r2", "source": "sven", "category": "safety_permission", "task": "code"}
    assert shortfall_text(src | {"target_pairs": 93, "built_pairs": 0, "missing_pairs": 93}) == (
        "paper-r2 sven (safety_permission/code): 0 of 93 pairs (93 short)"
    )
