"""Streamlit-free view logic of the workbench: escaped HTML, plotly figures, small store queries.

Everything here is plain Python (pandas, plotly, SQLAlchemy) so that it is unit-testable without a
running app; the pages in ``pages/`` only lay these pieces out. This package never imports streamlit.
One module per page area:

- :mod:`~automonitor.views.escaping`: :func:`esc` (HTML), :func:`plot_text` (plotly), :func:`md_escape`
  (markdown) and the escaped text block :func:`text_html`;
- :mod:`~automonitor.views.evidence`: evidence spans grounded in a sample and highlighted on it;
- :mod:`~automonitor.views.overview`: the store fingerprint the app caches on, composition, counts;
- :mod:`~automonitor.views.runs`: the run history frame, a run's progress, durations;
- :mod:`~automonitor.views.samples`: the samples browser, export, one sample and its predictions;
- :mod:`~automonitor.views.tradeoff`: report -> MR-FAR points, Pareto front and Pearson r (computed by
  :mod:`automonitor.metrics` / :mod:`automonitor.analysis`, as in the report), a run's slice;
- :mod:`~automonitor.views.figures`: the MR-FAR scatter and the ROC figure;
- :mod:`~automonitor.views.provenance`: label provenance and errata badges of a sample;
- :mod:`~automonitor.views.markdown`: model-written markdown rendered safely (no raw HTML, no links).

The SQL lives in ``store.queries.samples`` and ``store.queries.workbench``.

Security rule: every piece of model- or user-written text that ends up in HTML goes through
:func:`esc` (``html.escape`` with quotes). The HTML built here is meant for ``st.html`` (no markdown
processing), so markdown tricks in a sample stay literal text as well.
"""

from __future__ import annotations

from automonitor.views.escaping import esc, md_escape, plot_text, text_html
from automonitor.views.provenance import errata_for, provenance_html, sample_errata
from automonitor.views.markdown import markdown_html
from automonitor.views.evidence import (
    SPAN_STYLES,
    ground_evidence,
    highlight_html,
    legend_html,
    located_spans,
    spans_for,
)
from automonitor.views.figures import (
    TEMPLATE_COLORS,
    _label_positions,
    marker_sizes,
    pareto_staircase,
    roc_figure,
    localisation_trace,
    tradeoff_figure,
)
from automonitor.views.overview import (
    composition_figure,
    composition_frame,
    composition_pivot,
    counts_by,
    store_version,
)
from automonitor.views.runs import format_duration, run_progress, runs_frame
from automonitor.views.samples import (
    export_samples,
    sample_detail,
    sample_predictions,
    sample_query,
    search_samples,
)
from automonitor.views.tradeoff import (
    CELL_TITLES,
    audit_flags,
    localisation_shares,
    pareto_ids,
    pearson_r,
    reported_for,
    slice_key,
    slice_of,
    tradeoff_points,
)

__all__ = [
    "CELL_TITLES",
    "SPAN_STYLES",
    "TEMPLATE_COLORS",
    "_label_positions",
    "composition_figure",
    "composition_frame",
    "composition_pivot",
    "counts_by",
    "esc",
    "audit_flags",
    "errata_for",
    "sample_errata",
    "provenance_html",
    "export_samples",
    "format_duration",
    "ground_evidence",
    "highlight_html",
    "legend_html",
    "localisation_shares",
    "localisation_trace",
    "markdown_html",
    "located_spans",
    "marker_sizes",
    "md_escape",
    "pareto_ids",
    "pareto_staircase",
    "pearson_r",
    "plot_text",
    "reported_for",
    "roc_figure",
    "run_progress",
    "runs_frame",
    "sample_detail",
    "sample_predictions",
    "sample_query",
    "search_samples",
    "slice_key",
    "slice_of",
    "spans_for",
    "store_version",
    "text_html",
    "tradeoff_figure",
    "tradeoff_points",
]
