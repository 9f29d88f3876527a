"""Streamlit-free logic of the workbench pages added in round 2 (issue 12): which sample set a run was
measured on, honest trade-off points (labels, coincident points, minimum sample size), run archiving,
and browsing aids for the drill-down (cell navigation, filters, previews, search highlights, pair
diffs). The pages in ``pages/`` only render what these functions return.
One module per job: :mod:`~automonitor.workbench.runs` (sample sets, archiving),
:mod:`~automonitor.workbench.points` (honest trade-off points), :mod:`~automonitor.workbench.browsing`
(drill-down and samples browsing aids); the SQL is in ``store.queries.workbench``.

Definitions:

* **Sample set** of a run: the set of sample ids it judged. Its *fingerprint* is the first 10 hex digits
  of ``sha256("\\n".join(sorted(ids)))``; its *edition* is ``run.edition`` when recorded, else inferred
  (``verified`` when any judged sample is adjudicated (``label_source = 'adjudicated'``), else
  ``paper``). Runs are only compared on one Pareto front within one edition; a plot with several
  editions draws one front per edition and says so.
* **Minimum sample size**: a run whose slice has fewer than ``min_n`` judged samples (TP+FN+FP+TN; default
  :data:`DEFAULT_MIN_N` = 100) is *ineligible*: drawn hollow and left off the Pareto front, so a
  4-sample run cannot look better than a measured or reported frontier model.
"""

from __future__ import annotations

from automonitor.workbench.browsing import (
    PAGE_SIZES,
    SEARCH_STYLE,
    diff_mode,
    disagreeing_samples,
    filter_cell,
    highlight_search_html,
    neighbours,
    pair_diff,
    pair_diff_html,
    preview,
    run_choice,
)
from automonitor.workbench.points import (
    DEFAULT_MIN_N,
    TEMPLATE_SHORT,
    front_by_edition,
    front_sample_sets,
    honest_points,
    judged,
    pareto_mask,
    set_summary,
    short_label,
    spread_coincident,
    template_independent_backends,
)
from automonitor.workbench.runs import (
    fingerprint,
    run_sample_sets,
    identical_derived,
    sample_set_row,
    set_archived,
    store_fingerprint,
)

__all__ = [
    "DEFAULT_MIN_N",
    "PAGE_SIZES",
    "SEARCH_STYLE",
    "TEMPLATE_SHORT",
    "diff_mode",
    "disagreeing_samples",
    "filter_cell",
    "fingerprint",
    "front_by_edition",
    "front_sample_sets",
    "highlight_search_html",
    "honest_points",
    "judged",
    "neighbours",
    "pair_diff",
    "pair_diff_html",
    "pareto_mask",
    "preview",
    "run_choice",
    "run_sample_sets",
    "identical_derived",
    "sample_set_row",
    "set_archived",
    "set_summary",
    "short_label",
    "spread_coincident",
    "store_fingerprint",
    "template_independent_backends",
]
