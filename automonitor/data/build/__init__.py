"""Build the paired benchmark from the public raw sources into the store (``automonitor build``).

Editions (``paper``, ``paper-r2``, ``verified``, ``hard``; :data:`automonitor.vocab.EDITIONS`), their
composition and the quality gates (:mod:`automonitor.data.gates`): ``docs/explanation/editions.md`` and
``docs/explanation/benchmark.md``; the seeded selection, candidate pool, train split and rebuild policy
(build rows carry ``meta.origin == "build"``; a different seed refuses to drop referenced rows unless
``force=True``): ``docs/explanation/benchmark.md``.

Modules: :mod:`~automonitor.data.build.config` (quotas, plans, raw dir),
:mod:`~automonitor.data.build.sample_rows` (seeded order, sample rows, :class:`Plan`),
:mod:`~automonitor.data.build.gating` (load, quality gates),
:mod:`~automonitor.data.build.selection` (test, candidates, train, controls), :mod:`~automonitor.data.build.report`,
:mod:`~automonitor.data.build.plan` (:func:`plan_build`) and :mod:`~automonitor.data.build.reconcile` (:func:`build`,
the store side). The errata and the problem families it applies are :mod:`automonitor.data.errata` and
:mod:`automonitor.data.families` (below the build and the audit, which both read them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from automonitor.lazy import lazy_exports

if TYPE_CHECKING:
    from automonitor.data.build.config import (
        default_raw,
        resolve_raw,
        verified_extra,
    )
    from automonitor.data.build.gating import load_all
    from automonitor.data.build.plan import plan_build
    from automonitor.data.build.reconcile import build

#: Where each public name lives; imported on first use (PEP 562), so that a reader of one light submodule (the
#: ladder's tier names for the views, say) does not import the whole build (its plan, sources and gates).
_HOME, __getattr__ = lazy_exports(__file__, __name__)

__all__ = list(_HOME)
