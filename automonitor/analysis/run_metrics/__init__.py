"""Registered run metrics: the one-module extension point for a per-run metric.

A metric module declares a :class:`RunMetric` (its ``name``, its computation over the run's
:class:`RunFrame`, the pydantic type of its value and its display ``label``) and registers it with
:func:`register_metric`; a metric the product ships is a module of this package (each is imported when
the package is), another one is registered by importing its module (a plugin, a notebook, a test). From then on :func:`automonitor.analysis.analyze` computes it for every run
(``RunReport.metrics[name]`` in the typed report and in ``report --json``, validated against the declared
type), the HTML report shows it in its "Run metrics" table and the Trade-off page's runs table has a
column under its label (overall slice). With no metric registered the report is exactly as before (no
``metrics`` key). ``tests/fixtures/toy_metric.py`` is a complete example; CONTRIBUTING.md walks
through it.

Values are stored in the report as their JSON form (``TypeAdapter(value_type).dump_python(mode="json")``):
read one back typed with :meth:`RunMetric.read` (or ``RunReport.metric(m)``).
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Generic, Protocol, TypeVar

from pydantic import TypeAdapter

from automonitor.jsontypes import JSONValue

if TYPE_CHECKING:  # pandas is not imported by the report's light readers (report_cache, report_schema)
    import pandas as pd

T = TypeVar("T")

__all__ = ["REGISTRY", "ErasedMetric", "RunFrame", "RunMetric", "register_metric"]


@dataclass(frozen=True)
class RunFrame:
    """What a metric sees of one run: ``preds``, the run's predictions in the report (columns
    ``sample_id``, ``pair_id``, ``category``, ``task``, ``label`` misbehavior | benign, ``outcome``
    (``None`` = pending), ``score`` P(misbehavior) in [0, 1] or NaN, ``cell`` one of ``tp``, ``fn``,
    ``fp``, ``tn``, ``unscored``, ``pending`` after the report's unscored policy ``invalid``) and the
    overall confusion counts ``tp``, ``fn``, ``fp``, ``tn``, ``unscored`` of those cells."""

    run_id: str
    invalid: str
    preds: pd.DataFrame
    tp: int
    fn: int
    fp: int
    tn: int
    unscored: int


class ErasedMetric(Protocol):
    """A registered metric seen without its value type (what the report and the renderers need)."""

    @property
    def name(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def fmt(self) -> str: ...
    @property
    def stamp(self) -> str: ...

    def compute_json(self, frame: RunFrame) -> JSONValue: ...
    def validate_json(self, value: JSONValue) -> JSONValue: ...
    def show(self, value: JSONValue) -> str: ...


@dataclass(frozen=True)
class RunMetric(Generic[T]):
    """A per-run metric: ``name`` (its key in ``RunReport.metrics``; a Python identifier), ``label``
    (its column and row title), ``value_type`` (the pydantic type of its value: ``float``, ``int``, a
    ``BaseModel``, ...), ``compute`` (the value for one :class:`RunFrame`, ``None`` when undefined) and
    ``fmt`` (a format spec for a number; other values are shown as their JSON text)."""

    name: str
    label: str
    value_type: type[T]
    compute: Callable[[RunFrame], T | None]
    fmt: str = ".3f"
    description: str = ""
    _adapter: TypeAdapter[T] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a metric name must be an identifier, got {self.name!r}")
        object.__setattr__(self, "_adapter", TypeAdapter(self.value_type))

    @property
    def stamp(self) -> str:
        """Name, computing function and its source file's size and time: a cached report computed with
        another version of the metric is not reused (:mod:`automonitor.analysis.report_cache`)."""
        fn = self.compute
        try:
            st = os.stat(inspect.getsourcefile(fn) or "")
            when = f"{st.st_size}:{st.st_mtime_ns}"
        except (OSError, TypeError):
            when = ""
        return f"{self.name}:{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}:{when}"

    def compute_json(self, frame: RunFrame) -> JSONValue:
        """The metric of ``frame`` validated against ``value_type``, in its JSON form (``None`` when undefined)."""
        value = self.compute(frame)
        return None if value is None else self._dump(self._adapter.validate_python(value))

    def validate_json(self, value: JSONValue) -> JSONValue:
        """``value`` checked against ``value_type`` (``pydantic.ValidationError`` naming it if not), as JSON."""
        return None if value is None else self._dump(self._adapter.validate_python(value))

    def read(self, value: JSONValue) -> T | None:
        """A stored JSON value as ``value_type`` (``None`` stays ``None``)."""
        return None if value is None else self._adapter.validate_python(value)

    def _dump(self, value: T) -> JSONValue:
        dumped: JSONValue = self._adapter.dump_python(value, mode="json")
        return dumped

    def show(self, value: JSONValue) -> str:
        """The display text of a stored value: ``-`` for ``None``, ``fmt`` for a number, else the JSON."""
        if value is None:
            return "-"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return format(value, self.fmt)
        return TypeAdapter(JSONValue).dump_json(value).decode()


REGISTRY: dict[str, ErasedMetric] = {}
"""The registered metrics by name, in registration order."""


def register_metric(metric: RunMetric[T]) -> RunMetric[T]:
    """Register ``metric`` (returned unchanged, so ``X = register_metric(RunMetric(...))`` reads well).
    Raises ``ValueError`` when another metric has its name or label."""
    for other in REGISTRY.values():
        if metric.name == other.name or metric.label == other.label:
            raise ValueError(f"a metric named {other.name!r} ({other.label!r}) is already registered")
    REGISTRY[metric.name] = metric
    return metric


# A metric the product ships is one module of this package: each is imported (and so registered) here.
for _mod in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_mod.name}")
