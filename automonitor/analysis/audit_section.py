"""Report attachment: the audit's trivial-baseline AUROCs per category x task cell added to a report
(:func:`attach_to_report`), with a compact copy of each edition's audit.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from automonitor.data.audit.params import EDITIONS, FLAG_AUROC
from automonitor.data.audit.report_md import fmt2, rounded_figures
from automonitor.escaping import md_cell
from automonitor.jsontypes import JSONObject
from automonitor.analysis.report_schema import AuditBaselines, Report, as_report


def cell_baselines(doc: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{category: {task: {baseline: AUROC or None, ..., "flagged": bool}}}`` from the cell slices of an
    audit document (the same category x task slices as a report's ``by_category_task``)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for s in doc.get("slices", []):
        if s.get("kind") == "cell":
            out.setdefault(s["category"], {})[s["task"]] = {**s["baselines"], "flagged": s["flagged"]}
    return out


def attach_to_report(rep: Report, engine: Engine) -> Report:
    """Add the audit's trivial-baseline AUROCs to a report (:class:`~automonitor.analysis.report_schema.Report`,
    from ``analysis.report``) in place and return it.

    Adds (existing keys untouched): per run ``baselines`` = :func:`cell_baselines` of the audit of the run's
    edition (``run.edition``; ``paper`` when unset) and ``baselines_edition``; top level ``audit`` =
    ``{edition: {"slices": [...compact...], "leakage", "controls"}}`` for the editions used
    (:class:`~automonitor.analysis.report_schema.AuditBaselines`).
    """
    audits = _report_audits(engine, [r.edition for r in rep.runs])
    for run in rep.runs:
        e = run.edition or "paper"
        if e in audits:
            run.baselines = cell_baselines(audits[e])
            run.baselines_edition = e
    rep.audit = {e: AuditBaselines.model_validate(_compact_audit(d)) for e, d in audits.items()}
    return rep


def _report_audits(engine: Engine, run_editions: list[str | None]) -> dict[str, dict[str, Any]]:
    """``{edition: compact audit document}`` (:func:`_compact_audit` of the cached audit) for the editions of
    a report's runs (``None`` = paper; ``paper`` when there is no run); editions without an audit are
    left out. Kept per store version (:func:`automonitor.analysis.report_cache.cached_json`: the store
    file's and the code's fingerprint), so a report read back from its cache does not fingerprint the
    samples again (that query and ``store.models`` were a third of a cached report's start)."""
    from automonitor.analysis.report_cache import cached_json
    from automonitor.data import audit  # its names load on first use: a cached read imports none of them

    editions = [e for e in sorted({(e or "paper") for e in run_editions} or {"paper"}) if e in EDITIONS]
    return cached_json(
        engine,
        ["report audits", editions],
        lambda: {e: _compact_audit(audit.cached_audit(engine, e)) for e in editions},
    )


def _compact_audit(doc: dict[str, Any]) -> dict[str, Any]:
    """The part of an audit document a report carries: compact slices, leakage counts, controls, its figures
    rounded as ``automonitor audit --json`` prints them (:func:`~automonitor.data.audit.report_md.rounded_figures`:
    the report and the audit show the same numbers; the flags were decided on the unrounded ones)."""
    compact: JSONObject = {
        "slices": [
            {k: s[k] for k in ("source", "category", "task", "kind", "pairs", "baselines", "flagged")}
            for s in doc["slices"]
        ],
        "leakage": {k: doc["leakage"][k] for k in ("near_duplicate_pairs", "shared_conversations")},
        "controls": {k: doc["controls"][k] for k in ("samples", "far")},
    }
    rounded = rounded_figures(compact)
    if not isinstance(rounded, dict):  # pragma: no cover - rounding keeps a JSON object an object
        raise TypeError("an audit document rounds to a JSON object")
    return rounded


def report_markdown(rep: Report | dict[str, Any]) -> str:
    """Markdown section for ``report --format markdown``: per run and category x task slice, the trivial
    baselines' AUROC on the same slice (from each run's ``baselines``); empty string when the report
    carries no baselines. ``rep``: a :class:`~automonitor.analysis.report_schema.Report` or its dict."""
    rows = []
    for r in as_report(rep).runs:
        for cat, tasks in (r.baselines or {}).items():
            for task, b in tasks.items():
                ct = r.by_category_task.get(cat, {}).get(task)
                mr, far = (None, None) if ct is None else (ct.mr, ct.far)
                rows.append(
                    f"| {md_cell(r.run_id)} | {md_cell(cat)} | {md_cell(task)} | {fmt2(mr)} | "
                    f"{fmt2(far)} | {fmt2(b.get('length'))} | {fmt2(b.get('tfidf'))} | "
                    f"{fmt2(b.get('answer_equals_suggestion')) if 'answer_equals_suggestion' in b else ''} | "
                    f"{'FLAG' if b.get('flagged') else ''} |"
                )
    if not rows:
        return ""
    head = [
        "",
        "Trivial baselines on the same slices (AUROC, trained on train, scored on test; "
        f"`automonitor audit`; flag at >= {FLAG_AUROC}):",
        "",
        "| run | category | task | MR | FAR | length | tfidf | answer = suggestion | flag |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    return "\n".join(head + rows) + "\n"
