"""The Benchmark health page's Slices table: which columns it shows, in which order.

The audit's slice frame (:func:`automonitor.data.audit.slices_table`) has 14 columns; at 1280 px the page's
content is about 820 px wide, so only the first seven fit without scrolling (fresh-user trial: the AUROCs
and the flag were off screen). :func:`slice_column_order` puts what decides a flag first (the cell, the
trivial baselines' AUROCs, which baseline flagged it), then the counts, then the long texts (label source,
notes). ``flagged`` itself is left out: the page highlights a flagged row and names its baselines.
"""

from __future__ import annotations

from typing import Iterable

#: The Slices table's columns in the order shown; a column of the frame not named here follows them.
SLICE_COLUMN_ORDER: tuple[str, ...] = (
    "source",
    "category",
    "task",
    "length",
    "tfidf",
    "answer = suggestion",
    "flagged by",
    "pairs",
    "near-dup pairs",
    "shared conv.",
    "<=3-token pairs",
    "label source",
    "notes",
)
#: Columns of the frame the table does not show (the row highlight says it).
SLICE_HIDDEN: tuple[str, ...] = ("flagged",)


def slice_column_order(columns: Iterable[str]) -> list[str]:
    """The columns of a slice frame (``columns``: its column names) to show, in display order: those of
    :data:`SLICE_COLUMN_ORDER` present, then any other (in frame order), never :data:`SLICE_HIDDEN`."""
    cols = [c for c in columns if c not in SLICE_HIDDEN]
    return [c for c in SLICE_COLUMN_ORDER if c in cols] + [c for c in cols if c not in SLICE_COLUMN_ORDER]
