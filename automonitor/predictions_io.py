"""Import verdicts from an outside system (a vendor guardrail, another eval framework) as a run.

File format (``../shared/CONTRACT.md``): JSONL (one JSON object a line) or CSV with a header, columns

- ``sample_id`` (str, required): a sample in the store;
- ``outcome`` (required): ``misbehavior`` | ``benign`` | ``invalid`` | ``refusal`` | ``error``;
- ``score`` (optional): P(misbehavior), a number in [0, 1] (CSV: empty cell = none);
- ``evidence`` (optional): list of quoted strings (CSV: a JSON array in the cell, empty = none);
- ``raw`` (optional): the system's raw output, a string;
- also accepted: ``reason`` (str), ``pred_category`` (str), ``severity`` (str). Other columns are kept in
  the prediction's ``meta["extra"]``.

The file is read by :mod:`automonitor.records` (format by extension, ``.jsonl``/``.ndjson``/``.json`` ->
JSONL, ``.csv`` -> CSV, else sniffed: first non-blank character ``{`` or ``[`` -> JSONL; strict JSON, no
NaN or duplicate keys; an empty CSV cell is an absent value). Validation is all or nothing: the first
problem raises :class:`automonitor.errors.InputError` naming file, line (JSONL line; CSV record with the
header as line 1) and field, and nothing is written. Non-finite numbers and nesting beyond the limits of
:mod:`automonitor.records` are refused anywhere in a record; extra columns obey the ``meta`` limits. The run gets ``kind = status = "imported"`` and a ``Monitor`` row
with backend ``external``. Importing the same file again for the same monitor and template returns the
existing run instead of duplicating it.
"""

from __future__ import annotations

import codecs
import hashlib
import math
import uuid
from pathlib import Path
from typing import Any

from automonitor.errors import InputError
from automonitor.records import JSONLimitError, loads, meta_problem, read_file_bytes, read_records
from automonitor.vocab import OUTCOMES, TEMPLATES

REQUIRED = ("sample_id", "outcome")
OPTIONAL_STR = ("raw", "reason", "pred_category", "severity")
KNOWN = REQUIRED + ("score", "evidence") + OPTIONAL_STR


def _records(data: bytes, file: str) -> tuple[str, list[tuple[int, dict[str, Any]]]]:
    """The format and ``(line, record)`` pairs of a predictions file (:mod:`automonitor.records`, JSONL or
    CSV; CSV rows of blank cells are skipped), CSV cells converted: ``score`` to a number, ``evidence``
    from JSON. Raises ``InputError`` for unreadable input."""
    fmt, raw = read_records(data, file, formats=("jsonl", "csv"), required=REQUIRED, skip_blank_rows=True)
    out: list[tuple[int, dict[str, Any]]] = []
    for r in raw:
        rec = r.data
        if r.text_cells and rec.get("score") is not None:
            rec["score"] = _csv_number(rec["score"], file, r.line)
        if r.text_cells and rec.get("evidence") is not None:
            try:
                rec["evidence"] = loads(rec["evidence"])
            except JSONLimitError as exc:
                raise InputError(
                    f"{'evidence' + exc.path if exc.path else 'evidence'} {exc.msg}",
                    file=file,
                    line=r.line,
                    field="evidence",
                ) from None
            except ValueError as exc:
                raise InputError(
                    f"evidence must be a JSON array of strings: {getattr(exc, 'msg', exc)}",
                    file=file,
                    line=r.line,
                    field="evidence",
                ) from None
        out.append((r.line, rec))
    return fmt, out


def _csv_number(s: str, file: str, line: int) -> float:
    try:
        return float(s.strip())
    except ValueError:
        raise InputError(f"score must be a number, got {s!r}", file=file, line=line, field="score") from None


def validate_rows(
    records: list[tuple[int, dict[str, Any]]], known_samples: set[str], file: str
) -> list[dict[str, Any]]:
    """Check every record and return Prediction-ready dicts (sample_id, outcome, score, evidence, raw,
    reason, pred_category, severity, meta). Raises ``InputError`` (file, line, field) on the first problem:
    missing or non-string sample_id, unknown sample_id, duplicate sample_id, outcome outside the
    vocabulary, score not a finite number in [0, 1], evidence not a list of strings, non-string text
    fields, or no record at all."""
    if not records:
        raise InputError("empty file: no predictions", file=file)
    seen: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    for line, rec in records:

        def bad(msg: str, field: str) -> InputError:
            return InputError(msg, file=file, line=line, field=field)  # noqa: B023 - called in this iteration

        sid = rec.get("sample_id")
        if sid is None or (isinstance(sid, str) and not sid.strip()):
            raise bad("sample_id is missing", "sample_id")
        if not isinstance(sid, str):
            raise bad(f"sample_id must be a string, got {type(sid).__name__}", "sample_id")
        sid = sid.strip()
        if sid in seen:
            raise bad(f"duplicate sample_id '{sid}' (first on line {seen[sid]})", "sample_id")
        seen[sid] = line
        if sid not in known_samples:
            raise bad(f"unknown sample_id '{sid}' (not in the store)", "sample_id")
        outcome = rec.get("outcome")
        if not isinstance(outcome, str) or outcome.strip() not in OUTCOMES:
            raise bad(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}", "outcome")
        score = rec.get("score")
        if score is not None:
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise bad(f"score must be a number, got {score!r}", "score")
            if not math.isfinite(score) or not 0.0 <= score <= 1.0:
                raise bad(f"score must be in [0, 1], got {score!r}", "score")
            score = float(score)
        evidence = rec.get("evidence")
        if evidence is None:
            evidence = []
        if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
            raise bad("evidence must be a list of strings", "evidence")
        row: dict[str, Any] = {"sample_id": sid, "outcome": outcome.strip(), "score": score, "evidence": evidence}
        for k in OPTIONAL_STR:
            v = rec.get(k)
            if v is not None and not isinstance(v, str):
                raise bad(f"{k} must be a string", k)
            row[k] = v
        if row["pred_category"] is not None and len(row["pred_category"]) > 32:
            raise bad("pred_category longer than 32 characters", "pred_category")
        if row["severity"] is not None and len(row["severity"]) > 16:
            raise bad("severity longer than 16 characters", "severity")
        extra = {k: v for k, v in rec.items() if k not in KNOWN}
        for k, v in extra.items():
            problem = meta_problem(v, k)  # kept in meta["extra"]: the meta limits apply
            if problem:
                raise bad(problem, k)
        if extra and meta_problem(extra, "extra"):
            raise bad(meta_problem(extra, "extra"), next(iter(extra)))
        row["meta"] = {"extra": extra} if extra else {}
        rows.append(row)
    return rows


def import_predictions(engine, path: str | Path, monitor: str, template: str | None = None) -> dict[str, Any]:
    """Validate ``path`` completely, then write one imported run with its predictions in one transaction.

    Args:
        engine: store engine (schema at head).
        path: JSONL or CSV file (module docstring).
        monitor: name of the outside system (a ``Monitor`` with backend ``external``).
        template: a prompt template name of the vocabulary; default ``direct`` (a plain verdict).
    Returns:
        ``{"run_id", "monitor", "template", "kind": "imported", "status": "imported", "n", "counts":
        {outcome: int}, "scores": int, "evidence": int, "created": bool}`` (``created`` is False when the
        same file was already imported for this monitor and template).
    Raises:
        InputError (exit 2) for any bad input; the store is unchanged.
    """
    from store import session_scope
    from store.queries import analysis as q

    file = str(path)
    template = template or "direct"
    if not monitor or not monitor.strip():
        raise InputError("--monitor must name the outside system", field="monitor")
    monitor = monitor.strip()
    if len(monitor) > 256:
        raise InputError("--monitor is longer than 256 characters", field="monitor")
    if template not in TEMPLATES:
        raise InputError(f"--template must be one of {', '.join(TEMPLATES)}, got {template!r}", field="template")
    p = Path(path)
    data = read_file_bytes(p)
    if not data.removeprefix(codecs.BOM_UTF8).strip():
        raise InputError("empty file: no predictions", file=file)
    fmt, records = _records(data, file)
    sha = hashlib.sha256(data).hexdigest()
    with session_scope(engine) as s:
        ids = [r.get("sample_id").strip() for _, r in records if isinstance(r.get("sample_id"), str)]
        known = set(q.pair_ids_for(s, ids))
        rows = validate_rows(records, known, file)
        counts = {o: 0 for o in OUTCOMES}
        for r in rows:
            counts[r["outcome"]] += 1
        existing = q.find_imported_run(s, monitor, template, sha)
        if existing is not None:
            run_id, created = existing.id, False
        else:
            m = q.external_monitor(s, monitor)
            run_id = "imp-" + uuid.uuid4().hex[:16]
            params = {"source_file": p.name, "sha256": sha, "format": fmt, "rows": len(rows)}
            q.insert_imported_run(s, run_id=run_id, monitor=m, template=template, params=params, rows=rows)
            created = True
    return {
        "run_id": run_id,
        "monitor": monitor,
        "template": template,
        "kind": "imported",
        "status": "imported",
        "n": len(rows),
        "counts": counts,
        "scores": sum(1 for r in rows if r["score"] is not None),
        "evidence": sum(1 for r in rows if r["evidence"]),
        "created": created,
    }
