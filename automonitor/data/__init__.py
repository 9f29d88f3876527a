"""Step 1, the benchmark's data: raw sources -> build -> store.

- :mod:`~automonitor.data.sources`: one importer per public dataset, registered by decorator
  (:func:`~automonitor.data.sources.base.register_source`), each with its quota;
- :mod:`~automonitor.data.build`: gates, family split, editions (paper, verified, paper-r2, hard), errata,
  provenance, the build report; :mod:`~automonitor.data.gates`: the quality gates and static screens;
  :mod:`~automonitor.data.errata` (the label errata file) and :mod:`~automonitor.data.families` (problem
  families), which the build applies and the audit reports;
- :mod:`~automonitor.data.audit`: trivial baselines and AFLite per slice (is a slice separable without a
  monitor?);
- :mod:`~automonitor.data.records`, :mod:`~automonitor.data.row_models`, :mod:`~automonitor.data.pairfiles`:
  reading and validating pair files (JSONL/CSV) with file, line and field in every error;
- :mod:`~automonitor.data.spans`: gold spans (from patches, screens, annotators);
  :mod:`~automonitor.data.trajectory`: agent trajectories as samples; :mod:`~automonitor.data.fetch`:
  downloading sources.

The CSV and JSON files beside these modules (``paper_reported.csv``, ``paper_figure8.csv``,
``prices.json``) are package data read with :mod:`importlib.resources`. Nothing here imports
:mod:`automonitor.runs` or anything above it; inside, the build is above the audit (the ``hard`` edition
runs its AFLite), and both are above the modules they share (import-linter's "inside data" contract).
"""

__all__: list[str] = []
