"""Old import paths keep working for one release.

Before 0.2 the core was 25 loose modules beside its packages (``automonitor.metrics``,
``automonitor.runner``, ``automonitor.workbench``...). They now live in one package per step of the data
flow: :mod:`automonitor.data` (sources, build, gates, audit, pair files), :mod:`automonitor.runs` (monitors,
prompts, parser, runner, batch, generation, probes), :mod:`automonitor.analysis`,
:mod:`automonitor.annotation` and :mod:`automonitor.views`. Importing an old path (``import
automonitor.metrics``, ``from automonitor.runner import create_run``, ``from automonitor import derive``)
returns the module at its new path -- the same object, not a copy -- and emits a
:class:`DeprecationWarning` naming the new path. The aliases go in 0.3.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

#: old module path -> new module path; a name below an old path moves with it
#: (``automonitor.runner.create`` -> ``automonitor.runs.runner.create``)
MOVED: dict[str, str] = {
    "automonitor.sources": "automonitor.data.sources",
    "automonitor.build": "automonitor.data.build",
    # 0.2.x: the errata and the problem families sit below both the build and the audit (which read them),
    # so that the build (its ``hard`` edition runs the audit's AFLite) and the audit no longer import each other
    "automonitor.data.build.errata": "automonitor.data.errata",
    "automonitor.data.build.families": "automonitor.data.families",
    "automonitor.audit": "automonitor.data.audit",
    "automonitor.gates": "automonitor.data.gates",
    "automonitor.fetch": "automonitor.data.fetch",
    "automonitor.records": "automonitor.data.records",
    "automonitor.rows": "automonitor.data.rows",
    "automonitor.pairs_io": "automonitor.data.pair_files",
    "automonitor.spans": "automonitor.data.spans",
    "automonitor.trajectory": "automonitor.data.trajectory",
    "automonitor.monitors": "automonitor.runs.monitors",
    "automonitor.prompts": "automonitor.runs.prompts",
    "automonitor.parsing": "automonitor.runs.parsing",
    "automonitor.sampling": "automonitor.runs.sampling",
    "automonitor.runner": "automonitor.runs.runner",
    "automonitor.runner.rows": "automonitor.runs.verdicts",
    "automonitor.runner.lease": "automonitor.runs.lease",
    "automonitor.runner.status": "automonitor.runs.status",
    "automonitor.runner.params": "automonitor.runs.params",
    "automonitor.runner.cache": "automonitor.runs.cache",
    "automonitor.audit.attach": "automonitor.analysis.audit_section",
    "automonitor.batch": "automonitor.runs.batch",
    "automonitor.predictions_io": "automonitor.runs.prediction_files",
    "automonitor.generation": "automonitor.runs.generation",
    "automonitor.probes": "automonitor.runs.probe.model",
    "automonitor.corpus": "automonitor.runs.probe.corpus",
    "automonitor.lora": "automonitor.runs.probe.lora",
    "automonitor.metrics": "automonitor.analysis.metrics",
    "automonitor.report_schema": "automonitor.analysis.report_schema",
    "automonitor.report_format": "automonitor.analysis.report_format",
    "automonitor.grounding": "automonitor.analysis.grounding",
    "automonitor.stability": "automonitor.analysis.stability",
    "automonitor.derive": "automonitor.analysis.derive",
    "automonitor.transfer": "automonitor.analysis.transfer",
    "automonitor.accounts": "automonitor.annotation.accounts",
    "automonitor.agreement": "automonitor.annotation.agreement",
    "automonitor.span_agreement": "automonitor.annotation.span_agreement",
    "automonitor.assignments_io": "automonitor.annotation.assignment_files",
    "automonitor.annotation_queries": "automonitor.annotation.queries",
    "automonitor.workbench.browsing": "automonitor.views.browsing",
    "automonitor.workbench.points": "automonitor.views.points",
    "automonitor.workbench.runs": "automonitor.views.sample_sets",
    "automonitor.workbench": "automonitor.views",
    "automonitor.report_html": "automonitor.views.report_html",
    "automonitor.views.escaping": "automonitor.escaping",
}
_ORDER = sorted(MOVED, key=len, reverse=True)


def new_name(name: str) -> str | None:
    """The current path of module ``name`` when ``name`` is an old path (or below one), else ``None``."""
    for old in _ORDER:
        if name == old or name.startswith(old + "."):
            return MOVED[old] + name[len(old) :]
    return None


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"{old} moved to {new}; import it from there (the old path is removed in automonitor-bench 0.3)",
        DeprecationWarning,
        stacklevel=3,
    )


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A meta path finder that answers only old paths: their spec loads the module at the new path and
    hands back that very module object (so ``isinstance`` checks and module state are shared)."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = new_name(spec.name)
        assert new is not None
        _warn(spec.name, new)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module at the new path is already imported."""


def install() -> None:
    """Put the finder first on :data:`sys.meta_path` (once), before the path finder could load a moved
    module a second time under its old name."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())


def package_getattr(name: str) -> ModuleType:
    """``automonitor.<old name>`` as an attribute (``import automonitor; automonitor.metrics``): the module
    at its new path, with the warning. Raises :class:`AttributeError` for any other name."""
    new = new_name(f"automonitor.{name}")
    if new is None:
        raise AttributeError(f"module 'automonitor' has no attribute {name!r}")
    _warn(f"automonitor.{name}", new)
    return importlib.import_module(new)
