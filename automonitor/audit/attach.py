"""Report attachment: the audit's trivial-baseline AUROCs per category x task cell added to a report
(:func:`attach_to_report`), with a compact copy of each edition's audit.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy.engine import Engine

from automonitor.audit.cache import cached_audit
from automonitor.audit.params import EDITIONS
from automonitor.report_schema import AuditBaselines, Report


ReportT = TypeVar("ReportT", Report, dict[str, Any])


def cell_baselines(doc: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{category: {task: {baseline: AUROC or None, ..., "flagged": bool}}}`` from the cell slices of an
    audit document (the same category x task slices as a report's ``by_category_task``)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for s in doc.get("slices", []):
        if s.get("kind") == "cell":
            out.setdefault(s["category"], {})[s["task"]] = {**s["baselines"], "flagged": s["flagged"]}
    return out


def attach_to_report(rep: ReportT, engine: Engine) -> ReportT:
    """Add the audit's trivial-baseline AUROCs to a report in place and return it.

    ``rep`` is a :class:`~automonitor.report_schema.Report` (``analysis.report_model``) or its dict
    (``analysis.report``). Adds (existing keys untouched): per run ``baselines`` = :func:`cell_baselines`
    of the audit of the run's edition (``run.edition``; ``paper`` when unset) and ``baselines_edition``;
    top level ``audit`` = ``{edition: {"slices": [...compact...], "leakage", "controls"}}`` for the
    editions used (:class:`~automonitor.report_schema.AuditBaselines`).
    """
    if isinstance(rep, Report):
        audits = _report_audits(engine, [r.edition for r in rep.runs])
        for run in rep.runs:
            e = run.edition or "paper"
            if e in audits:
                run.baselines = cell_baselines(audits[e])
                run.baselines_edition = e
        rep.audit = {e: AuditBaselines.model_validate(_compact_audit(d)) for e, d in audits.items()}
        return rep
    audits = _report_audits(engine, [r.get("edition") for r in rep.get("runs", [])])
    for r in rep.get("runs", []):
        e = r.get("edition") or "paper"
        if e in audits:
            r["baselines"] = cell_baselines(audits[e])
            r["baselines_edition"] = e
    rep["audit"] = {e: _compact_audit(d) for e, d in audits.items()}
    return rep


def _report_audits(engine: Engine, run_editions: list[str | None]) -> dict[str, dict[str, Any]]:
    """``{edition: cached audit document}`` for the editions of a report's runs (``None`` = paper;
    ``paper`` when there is no run); editions without an audit are left out."""
    editions = sorted({(e or "paper") for e in run_editions} or {"paper"})
    return {e: cached_audit(engine, e) for e in editions if e in EDITIONS}


def _compact_audit(doc: dict[str, Any]) -> dict[str, Any]:
    """The part of an audit document a report carries: compact slices, leakage counts, controls."""
    return {
        "slices": [
            {k: s[k] for k in ("source", "category", "task", "kind", "pairs", "baselines", "flagged")}
            for s in doc["slices"]
        ],
        "leakage": {k: doc["leakage"][k] for k in ("near_duplicate_pairs", "shared_conversations")},
        "controls": {k: doc["controls"][k] for k in ("samples", "far")},
    }
