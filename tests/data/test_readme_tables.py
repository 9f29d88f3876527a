"""The docs' generated tables (gate counts, audits of both editions) equal what the seed-0 build prints:
``python scripts/readme_tables.py`` regenerates them."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "readme_tables.py"


def _module():
    spec = importlib.util.spec_from_file_location("readme_tables", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: a two-decimal figure (AUROC, pairwise share) in the tables
_RATE = re.compile(r"\b[01]\.\d\d\b")


def same_within_one_step(readme: str, built: str, step: float = 0.01) -> bool:
    """``readme`` and ``built`` are the same table, but for two-decimal figures that may differ by one
    rounding ``step``: a dependency release moves a cross-validated baseline's AUROC in its third decimal
    (on 2026-12-04 a fresh install moved three TF-IDF cells by 0.01, ending on a different side of a
    rounding edge). In a row of a table with a ``pairs`` column, a figure may also move by one pair of that
    row's slice (``1 / pairs``): a release that moves a baseline's scores slightly can put one near-tied
    pair on the other side, which moves the pairwise share of a small slice by more than a step (on
    2026-12-06 a fresh install moved ``aisi_olmo_rh`` (47 pairs) from 0.70 to 0.72). Counts, flags, labels
    and any figure off by more must be equal."""
    if _RATE.sub("#", readme) != _RATE.sub("#", built):
        return False
    a_lines, b_lines = readme.splitlines(), built.splitlines()
    if len(a_lines) != len(b_lines):
        return False
    pairs_col: int | None = None
    for i, (x_line, y_line) in enumerate(zip(a_lines, b_lines)):
        cells = [c.strip() for c in x_line.strip().strip("|").split("|")]
        if i + 1 < len(a_lines) and a_lines[i + 1].startswith("|---"):  # a header row
            pairs_col = cells.index("pairs") if "pairs" in cells else None
        tol = step
        if pairs_col is not None and pairs_col < len(cells) and cells[pairs_col].isdigit() and int(cells[pairs_col]):
            tol = step + 1 / int(cells[pairs_col])
        a, b = _RATE.findall(x_line), _RATE.findall(y_line)
        if len(a) != len(b) or any(abs(float(x) - float(y)) > tol + 1e-9 for x, y in zip(a, b)):
            return False
    return True


def test_one_rounding_step_is_tolerated_and_nothing_else():
    row = "| xstest | 128 | 0.94 / 0.87 | 0.86 / 0.86 | 0 | **FLAG** (length) |"
    assert same_within_one_step(row, row.replace("0.86 / 0.86", "0.85 / 0.86"))
    assert not same_within_one_step(row, row.replace("0.86 / 0.86", "0.84 / 0.86"))  # two steps
    assert not same_within_one_step(row, row.replace("| 128 |", "| 129 |"))  # a count
    assert not same_within_one_step(row, row.replace("**FLAG** (length)", "ok"))  # a flag
    assert not same_within_one_step(row, row.replace("0.94 / 0.87", "0.94"))  # a cell lost


def test_a_small_slice_may_move_by_one_pair_and_no_more():
    head = "| source | pairs | tfidf |\n|---|---:|---:|\n"
    small, large = head + "| aisi | 47 | 0.61 / 0.70 |\n", head + "| all | 620 | 0.56 / 0.54 |\n"
    assert same_within_one_step(small, small.replace("0.70", "0.72"))  # one pair of 47 (0.021) + rounding
    assert same_within_one_step(small, small.replace("0.70", "0.73"))  # 0.031 = 1/47 + one step
    assert not same_within_one_step(small, small.replace("0.70", "0.74"))  # more than one pair
    assert not same_within_one_step(large, large.replace("0.56", "0.54"))  # 620 pairs: one step only
    assert same_within_one_step(large, large.replace("0.56", "0.55"))
    assert not same_within_one_step(small, small.replace("| 47 |", "| 48 |"))  # the count itself


def test_block_helpers_replace_only_between_markers():
    mod = _module()
    text = "a\n<!-- gate-table:start -->\nold\n<!-- gate-table:end -->\nb\n"
    assert mod.readme_blocks(text) == {"gate-table": "old\n"}
    assert mod.replace_blocks(text, {"gate-table": "new|x\n"}) == text.replace("old", "new|x")


@pytest.mark.slow
def test_readme_tables_match_the_seed0_build(built_sqlite):
    """Against the run's seed-0 build (``built_sqlite``: analysers and the filter ran for real in this run's
    own cache directory, tests/conftest.py). The build kept the audits of both editions, as ``automonitor build
    --edition verified`` does: the tables are what ``automonitor audit --edition E --format markdown`` prints
    on it, read, not computed again (the build computed them once)."""
    from store import get_engine

    mod = _module()
    current = mod.current_blocks()
    assert set(current) == set(mod.BLOCKS), "a docs page lost a generated block's markers"
    eng = get_engine(f"sqlite:///{built_sqlite[0]}", fresh=True)
    lines: list[str] = []
    try:
        generated = mod.generated(built=(eng, built_sqlite[1]), progress=lines.append)
    finally:
        eng.dispose()
    # read, not computed: from the store's copy (or, where an earlier test of the run read it on this store, from
    # the memory or disk copy of that read)
    assert [ln.split(":")[0] for ln in lines] == [f"audit of edition {ed}" for ed in mod.AUDITED], lines
    assert all(re.search(r": from (the store|memory|the cache) ", ln) for ln in lines), lines
    for name in mod.BLOCKS:
        assert same_within_one_step(current[name], generated[name]), (
            f"docs block {name} is stale: run python scripts/readme_tables.py"
        )
