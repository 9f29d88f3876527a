"""The Benchmark health page's Slices table order (:func:`automonitor.views.slice_column_order`) on the real
audit frame: at 1280 px the page shows about seven columns, so the cell, the three AUROCs and the
baselines that flag it come first, the long texts last, and ``flagged`` (the row highlight) not at all."""

from __future__ import annotations

import pandas as pd

from automonitor.data.audit import slices_table
from automonitor.views.health import SLICE_COLUMN_ORDER, slice_column_order


def test_the_flag_deciding_columns_come_first_and_none_is_lost():
    table = slices_table({"slices": []})
    order = slice_column_order(table.columns)
    assert order[:7] == ["source", "category", "task", "length", "tfidf", "answer = suggestion", "flagged by"]
    assert order[-2:] == ["label source", "notes"]
    assert set(order) == set(table.columns) - {"flagged"} and len(order) == len(set(order))
    assert set(SLICE_COLUMN_ORDER) <= set(table.columns)  # the order names real columns
    extra = slice_column_order([*table.columns, "new metric"])  # a column added later is shown, last
    assert extra[-1] == "new metric" and extra[:-1] == order
    assert slice_column_order(pd.DataFrame(columns=["flagged", "source"]).columns) == ["source"]
