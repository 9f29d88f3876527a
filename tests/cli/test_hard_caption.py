"""The build report's ``hard`` table caption names what was removed and which slices are not achievable, each on its
own line, so a narrow terminal never splits "not achievable with >= 15" from "pairs: none" (newcomer61 read
them as two statements in ``make demo``'s log)."""

from __future__ import annotations

from rich.console import Console

from automonitor.cli.data import hard_table


def test_the_not_achievable_line_is_whole_at_a_narrow_width():
    hard = {
        "pairs": 120,
        "controls": 30,
        "by_source": {"hh_rlhf": {"verified": 200, "hard": 120, "controls": 30}},
        "removed_by_feature": {"length_match": 22},
        "not_achievable": [],
        "params": {"min_pairs": 15},
    }
    console = Console(width=64, record=True, color_system=None)
    console.print(hard_table(hard))
    lines = [ln.strip() for ln in console.export_text().splitlines()]
    assert "pairs removed by: length_match 22" in lines
    assert "slices not achievable with >= 15 pairs: none" in lines
