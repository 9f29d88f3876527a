"""Analysis of monitor runs: store -> frames -> the report of ``automonitor report`` and the app.

Pipeline: :func:`predictions_frame` (one row per prediction, joined with its sample) ->
:func:`analyze` (pure: per-run and per-slice TP/FN/FP/TN, MR/FAR with Wilson intervals, unscored
counts, Pareto front, Pearson r, per-pair outcomes, cluster bootstrap, McNemar, ROC, evidence grounding)
-> a typed :class:`~automonitor.analysis.report_schema.Report` whose ``to_dict()`` is the CLI contract's
``report --json`` document. :func:`report` does both steps on a store.

One module per job (this package re-exports the names the CLI, the views and the pages read):

- :mod:`~automonitor.analysis.encoding`: prediction frame -> index arrays (``encode``) and the
  runs x samples cell matrix (``sample_grid``); cell codes and :data:`CELLS`;
- :mod:`~automonitor.analysis.slices`: one outcome table -> SLICEs (``slice_stats``);
- :mod:`~automonitor.analysis.bootstrap`: pair-clustered intervals per run (``bootstrap_runs``) and
  per-pair outcome classes (``pair_classes``);
- :mod:`~automonitor.analysis.paired`: paired comparisons of two runs (``paired_comparisons``);
- :mod:`~automonitor.analysis.roc_grounding`: :func:`roc_summary` and evidence grounding of runs;
- :mod:`~automonitor.analysis.assemble`: :func:`analyze` (run entries, front,
  Pearson r, the typed report);
- :mod:`~automonitor.analysis.from_store`: :func:`predictions_frame`, :func:`runs_frame`,
  :func:`report` (editions, controls FAR, stability) and :func:`controls_far`;
- :mod:`~automonitor.analysis.plane_points`: :func:`run_points` and the paper's :func:`reported_points`;
- :mod:`~automonitor.analysis.options`: :class:`AnalysisOptions` / :class:`ReportOptions`, the one typed
  options object that :func:`analyze` and :func:`report` take;
- :mod:`~automonitor.analysis.drilldown`: :func:`cell_samples`, :func:`roc_frame`.

Definitions and the unscored policy are in :mod:`automonitor.analysis.metrics`; grounding in
:mod:`automonitor.analysis.grounding`. The paper's reported points are a separate, labelled reference table
(:func:`reported_points`), never mixed into measured runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from automonitor.lazy import lazy_exports

if TYPE_CHECKING:
    from automonitor.analysis.assemble import analyze
    from automonitor.analysis.drilldown import cell_samples, roc_frame
    from automonitor.analysis.options import AnalysisOptions, ReportOptions
    from automonitor.analysis.from_store import predictions_frame, report, runs_frame
    from automonitor.analysis.plane_points import reported_points, run_points

#: Where each public name lives; imported on first use (PEP 562), so that importing one light submodule
#: (``report_format``, ``report_schema``, ``report_cache``) does not import pandas, SciPy and the rest.
_HOME, __getattr__ = lazy_exports(__file__, __name__)


__all__ = list(_HOME)
