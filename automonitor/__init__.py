"""AutoMonitor-Bench core, one package per step of the data flow.

raw sources -> :mod:`automonitor.data` (sources, build, gates, errata, editions, audit, pair files) ->
``store`` -> :mod:`automonitor.runs` (monitors, prompts, parser, runner, batch, imported predictions,
generation, probes) -> :mod:`automonitor.analysis` (metrics, typed report, derived runs, transfer) and
:mod:`automonitor.annotation` (accounts, assignment, labeling, agreement, adjudication) ->
:mod:`automonitor.views` (view models for the pages) -> :mod:`automonitor.cli` and the Streamlit app.
The base modules every layer may use: :mod:`automonitor.vocab` (names and their ``Literal`` types),
:mod:`automonitor.errors`, :mod:`automonitor.hashing`, :mod:`automonitor.escaping`,
:mod:`automonitor.timestamps` and :mod:`automonitor.leases`.

This package never imports Streamlit. Old import paths (``automonitor.metrics``...) still work for one
release, with a :class:`DeprecationWarning` (:mod:`automonitor._compat`).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

from automonitor import _compat

try:
    __version__: str = version("automonitor-bench")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

_compat.install()

__all__ = ["__version__"]


def __getattr__(name: str) -> ModuleType:
    """An old module path as an attribute (``automonitor.metrics``): the module at its new path, with a
    :class:`DeprecationWarning`. Raises :class:`AttributeError` for any other name."""
    return _compat.package_getattr(name)
