"""Judge backends behind a small registry, selected as ``BACKEND[:MODEL]`` (``--monitor``).

Each backend is one module here with a class decorated by :func:`register`; its facts are attributes and
methods of the class (:class:`.backend.Backend`). :mod:`.judgement` holds what a backend takes, returns and
raises, :mod:`.http_api` what the HTTP judges share, :mod:`.pricing` the list prices. The backends:
docs/how-to/backends.md.
"""

from __future__ import annotations

import importlib
import pkgutil
import unicodedata
from dataclasses import dataclass
from typing import Sequence

from automonitor.jsontypes import JSONObject
from automonitor.errors import InputError
from automonitor.runs.monitors.backend import REGISTRY, Backend, BackendParams, register
from automonitor.runs.monitors.http_api import is_loopback
from automonitor.runs.monitors.judgement import Item, Judgement, PermanentError, TransientError
from automonitor.runs.prompts import PromptBuilder


def _discover() -> None:
    """Import every module of this package once, so each ``@register``-decorated backend class is in
    :data:`REGISTRY`; then order the registry by ``menu_order`` (the order of the backend lists).
    Backend SDKs are imported inside the backends, so this loads no SDK."""
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
    ordered = sorted(REGISTRY.items(), key=lambda kv: kv[1].menu_order)
    REGISTRY.clear()
    REGISTRY.update(ordered)


@dataclass(frozen=True)
class MonitorSpec:
    """A parsed ``BACKEND[:MODEL]`` spec. ``name`` is the canonical ``backend:model`` form stored as
    ``Monitor.name`` / ``Run.monitor``."""

    backend: str
    model: str

    @property
    def name(self) -> str:
        return f"{self.backend}:{self.model}"


def parse_monitor_spec(spec: str, *, field: str = "monitor", choices: Sequence[str] | None = None) -> MonitorSpec:
    """Parse ``BACKEND[:MODEL]`` (the model may itself contain ``:`` or ``/``). ``field``: the option it came
    from, named in errors (``monitor``, ``generator``); ``choices``: the backends an unknown name is told to pick
    from (default every backend).

    Raises:
        InputError: empty spec, control or format characters (the name is printed by ``runs`` and
            ``report``: no terminal escape may be stored in it) or unknown backend (field ``field``).
    """
    spec = (spec or "").strip()
    if not spec:
        raise InputError(f"empty {field}; use BACKEND[:MODEL]", field=field)
    if any(unicodedata.category(ch).startswith("C") for ch in spec):
        raise InputError(f"the {field} contains control characters", field=field)
    backend, _, model = spec.partition(":")
    backend = backend.strip().lower()
    if backend not in REGISTRY:
        raise InputError(f"unknown backend {backend!r}; choose one of {', '.join(choices or REGISTRY)}", field=field)
    model = model.strip() or (REGISTRY[backend].default_model or "")
    return MonitorSpec(backend, model)


def generator_backends() -> list[str]:
    """The backends that can generate free text (the generator of ``automonitor generate sycophancy|gaming``):
    those whose class implements :meth:`Backend.generate` (registry order)."""
    return [name for name, cls in REGISTRY.items() if cls.generate is not Backend.generate]


def backend_class(backend: str) -> type[Backend]:
    """The class implementing ``backend`` (its SDK loads only when an instance is used).

    Raises:
        InputError: unknown backend (field ``monitor``).
    """
    if backend not in REGISTRY:
        raise InputError(f"unknown backend {backend!r}", field="monitor")
    return REGISTRY[backend]


def create_backend(
    spec: str | MonitorSpec, *, base_url: str | None, params: JSONObject | None, prompt: PromptBuilder
) -> Backend:
    """Instantiate the backend for ``spec`` with the run's base URL, parameters and prompt builder.

    Raises:
        InputError: unknown backend, missing API key for a remote server, bad parameter.
    """
    ms = spec if isinstance(spec, MonitorSpec) else parse_monitor_spec(spec)
    return backend_class(ms.backend)(ms.model, base_url, dict(params or {}), prompt)


_discover()

__all__ = [
    "REGISTRY",
    "Backend",
    "BackendParams",
    "Item",
    "Judgement",
    "MonitorSpec",
    "PermanentError",
    "TransientError",
    "backend_class",
    "create_backend",
    "generator_backends",
    "is_loopback",
    "parse_monitor_spec",
    "register",
]
