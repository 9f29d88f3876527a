"""Streamlit-free view logic of the workbench: escaped HTML, plotly figures, small store queries.

Everything here is plain Python (pandas, plotly, SQLAlchemy) so that it is unit-testable without a
running app; the pages in ``pages/`` only lay these pieces out. This package never imports streamlit.
One module per page area:

- :mod:`~automonitor.escaping`: :func:`esc` (HTML), :func:`plot_text` (plotly), :func:`md_escape`
  (markdown), the escaped text block :func:`text_html` and :func:`reveal_invisible` (plain text: ``st.text``);
- :mod:`~automonitor.views.evidence`: evidence spans grounded in a sample and highlighted on it;
- :mod:`~automonitor.views.overview`: the store fingerprint the app caches on, composition, counts;
- :mod:`~automonitor.views.runs`: the run history frame, a run's progress, durations;
- :mod:`~automonitor.views.samples`: the samples browser, export, one sample and its predictions;
- :mod:`~automonitor.views.tradeoff`: report -> MR-FAR points and Pareto front (computed by
  :mod:`automonitor.analysis.metrics` / :mod:`automonitor.analysis`, as in the report), a run's slice;
- :mod:`~automonitor.views.figures`: the MR-FAR scatter and the ROC figure;
- :mod:`~automonitor.views.provenance`: label provenance and errata badges of a sample;
- :mod:`~automonitor.views.markdown`: model-written markdown rendered safely (no raw HTML, no links);
- :mod:`~automonitor.views.run_labels`: a run's short label for dropdowns and legends
  (:func:`run_option_label`, at most :data:`RUN_LABEL_MAX` characters) and its full label for hovers;
- :mod:`~automonitor.views.hard_statement`: what edition ``hard`` is certified against, cell by cell, and the
  ladder's tiers per cell (:func:`hard_statement`, :func:`tier_table`);
- :mod:`~automonitor.views.health`: the Benchmark health page's Slices table, what decides a flag first
  (:func:`slice_column_order`);
- :mod:`~automonitor.views.cells`: missing values in the pages' tables, one rule (:data:`MISSING`, "—",
  never ``None`` or ``nan``): :func:`display_frame` and :func:`cell`.

The SQL lives in ``store.queries.samples`` and ``store.queries.workbench``.

Security rule: every piece of model- or user-written text that ends up in HTML goes through
:func:`esc` (``html.escape`` with quotes). The HTML built here is meant for ``st.html`` (no markdown
processing), so markdown tricks in a sample stay literal text as well.

The workbench modules: :mod:`~automonitor.views.sample_sets` (sample sets, archiving),
:mod:`~automonitor.views.honest_points` (honest trade-off points), :mod:`~automonitor.views.browsing`
(drill-down and samples browsing aids). Their definitions (a run's sample set, edition and fingerprint; the
minimum sample size :data:`DEFAULT_MIN_N`) are in docs/explanation/app.md, "Workbench sessions and honest plots".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from automonitor.escaping import esc, md_escape, plot_text, reveal_invisible, text_html

# eager: ``hard_statement`` and ``honest_points`` name both a submodule and a function; an import of the
# submodule after the package's (``from automonitor.views.honest_points import ...``) would bind the package
# attribute to the module, which a lazy name then never replaces
from automonitor.views.hard_statement import TIERS, hard_statement, tier_table
from automonitor.views.honest_points import (
    DEFAULT_MIN_N,
    SHOW_DUPLICATES_LABEL,
    hidden_duplicates_caption,
    front_sample_sets,
    hollow_runs_note,
    honest_points,
    set_summary,
    small_runs_note,
    small_subset_note,
)
from automonitor.lazy import lazy_exports

if TYPE_CHECKING:
    from automonitor.views.provenance import provenance_html, sample_errata
    from automonitor.views.markdown import looks_like_code, markdown_html, opens_raw
    from automonitor.views.cells import cell, display_frame, is_numeric
    from automonitor.views.health import slice_column_order
    from automonitor.views.evidence import (
        ground_evidence,
        highlight_html,
        legend_html,
    )
    from automonitor.views.figures import (
        VIEW_LINES_LABEL,
        hover_only_labels,
        hover_only_note,
        label_plot_px,
        roc_figure,
        tradeoff_figure,
        view_line_count,
    )
    from automonitor.views.overview import (
        composition_figure,
        composition_frame,
        composition_pivot,
        counts_by,
        gold_tile_label,
        store_version,
    )
    from automonitor.views.runs import (
        DEMO_LOG,
        background_demo,
        generation_list_line,
        generation_list_rows,
        generation_stats_frame,
        generation_steps_frame,
        history_table,
        runs_frame,
        status_text,
        no_live_process,
        resume_advice,
    )
    from automonitor.views.samples import (
        export_samples,
        matching_line,
        sample_detail,
        sample_predictions,
        shown_responses,
        search_samples,
    )
    from automonitor.views.run_labels import (
        active_runs_line,
        run_full_label,
        run_option_label,
        run_select_label,
        run_select_note,
    )
    from automonitor.views.tradeoff import (
        CELL_TITLES,
        COST_COLUMNS,
        audit_badges_html,
        audit_editions,
        audit_flags_note,
        edition_audit_flags,
        difficulty_rows,
        operating_point_row,
        slice_runs_table,
        localisation_shares,
        tradeoff_points,
        TradeoffOptions,
        TradeoffSelection,
        tradeoff_selection,
        unplotted_runs,
        unplotted_runs_caption,
    )

    from automonitor.views.browsing import (
        PAGE_SIZES,
        cell_table,
        diff_mode,
        disagreeing_samples,
        filter_cell,
        link_value_warning,
        neighbours,
        pair_diff_html,
        run_choice,
        score_disagreeing_samples,
    )
    from automonitor.views.sample_sets import (
        sample_set_caption,
        run_sample_sets,
        identical_derived,
        set_archived,
    )

#: Where each public name lives (the imports above); imported on first use (PEP 562): a page imports the modules
#: it reads, not every page's (the Trade-off page's first load no longer imports the samples browser, provenance
#: and errata, markdown, evidence and the run views' helpers it does not draw). Submodules too (``views.figures``):
#: the eager imports this replaced made each one an attribute of the package.
_HOME, __getattr__ = lazy_exports(__file__, __name__, submodules=True)


#: the eager names above, then every lazy one
__all__ = [
    "esc",
    "md_escape",
    "plot_text",
    "reveal_invisible",
    "text_html",
    "TIERS",
    "hard_statement",
    "tier_table",
    "DEFAULT_MIN_N",
    "SHOW_DUPLICATES_LABEL",
    "hidden_duplicates_caption",
    "front_sample_sets",
    "hollow_runs_note",
    "honest_points",
    "set_summary",
    "small_runs_note",
    "small_subset_note",
    *_HOME,
]
