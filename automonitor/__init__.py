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

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """``__version__``: the installed package's version (``0+unknown`` in a source tree that was never
    installed), read from its metadata on first use, not at import: ``importlib.metadata`` costs every
    command tens of milliseconds of start-up."""
    if name != "__version__":
        raise AttributeError(f"module 'automonitor' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("automonitor-bench")
    except PackageNotFoundError:  # a source tree that was never installed
        value = "0+unknown"
    globals()["__version__"] = value
    return value
