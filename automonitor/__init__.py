"""AutoMonitor-Bench core, one package per step of the data flow.

raw sources -> :mod:`automonitor.data` (sources, build, gates, errata, editions, audit, pair files) ->
``store`` -> :mod:`automonitor.runs` (monitors, prompts, parser, runner, batch, imported predictions,
generation, probes) -> :mod:`automonitor.analysis` (metrics, typed report, derived runs, transfer) and
:mod:`automonitor.annotation` (accounts, assignment, labeling, agreement, adjudication) ->
:mod:`automonitor.views` (view models for the pages) -> :mod:`automonitor.cli` and the Streamlit app.
The base modules every layer may use: :mod:`automonitor.vocab` (names and their ``Literal`` types),
:mod:`automonitor.errors`, :mod:`automonitor.hashing`, :mod:`automonitor.escaping`,
:mod:`automonitor.timestamps` and :mod:`automonitor.leases`.

This package never imports Streamlit.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__: str = version("automonitor-bench")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
