"""File import/export of annotations and adjudications (JSONL or CSV)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor import records as record_files
from automonitor.accounts import Account, check_actor, require_admin
from automonitor.errors import InputError
from automonitor.records import detect_format, read_file_bytes
from automonitor.annotation._common import _clean_text, _evidence, _transaction, _validate_label
from automonitor.annotation.adjudication import adjudication_records
from automonitor.annotation.overview import annotation_records
from automonitor.annotation.queries import label_rows, upsert_label
from store.models import utcnow
from store.queries import annotation as store


_FORMATS = ("jsonl", "csv")


def read_records(path: str | Path, fmt: str | None = None) -> list[tuple[int, dict[str, Any]]]:
    """``(line, record)`` pairs of a JSONL file (one object a line; blank lines skipped) or a CSV file
    with a header (records counted with the header as line 1; an empty cell is an absent value), read by
    :func:`automonitor.records.read_records` (strict JSON: no NaN, no duplicate keys). The format comes
    from the suffix unless ``fmt``. Raises :class:`InputError` with file and line (and CSV column) on
    unreadable input, including bytes that are not UTF-8."""
    fmt = detect_format(str(path), None, fmt, _FORMATS)
    _, raw = record_files.read_records(read_file_bytes(path), str(path), fmt, formats=_FORMATS)
    return [(r.line, r.data) for r in raw]


def records_to_text(records: list[dict[str, Any]], fmt: str, columns: list[str] | None = None) -> str:
    """Serialise dicts as JSONL (one object a line) or CSV with a header (nested values
    JSON-encoded, ``None`` as an empty cell). ``columns`` fixes the CSV column order."""
    if fmt not in ("jsonl", "csv"):
        raise InputError(f"format must be jsonl or csv, not {fmt!r}", field="format")
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)
    buf = io.StringIO(newline="")
    cols = columns or (list(records[0]) if records else [])
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    for r in records:
        w.writerow(
            {
                k: (json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else ("" if v is None else v))
                for k, v in r.items()
            }
        )
    return buf.getvalue()


def write_records(
    path: str | Path, records: list[dict[str, Any]], fmt: str | None = None, columns: list[str] | None = None
) -> int:
    """Write dicts to ``path`` as JSONL or CSV (:func:`records_to_text`; format from the suffix
    unless ``fmt``). Returns the record count."""
    path = Path(path)
    fmt = detect_format(str(path), None, fmt, _FORMATS)
    text = records_to_text(records, fmt, columns)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(text)
    return len(records)


ANNOTATION_EXPORT_COLUMNS = [
    "annotator",
    "sample_id",
    "label",
    "note",
    "category",
    "severity",
    "evidence_start",
    "evidence_end",
    "evidence_text",
    "seconds_spent",
    "guideline_version",
    "created_at",
    "updated_at",
    "submitted_at",
    "batch",
    "position",
    "assignment_seed",
    "pair_id",
    "item_category",
    "task",
    "item_status",
]


def export_annotations(engine: Engine, actor: Account, path: str | Path, fmt: str | None = None) -> int:
    """Write every label with provenance (:func:`annotation_records`) to ``path`` as JSONL or CSV
    (from the suffix unless ``fmt``). Admin only. Returns the number of labels written."""
    return write_records(path, annotation_records(engine, actor), fmt, ANNOTATION_EXPORT_COLUMNS)


@dataclass(frozen=True)
class ImportResult:
    """Outcome of :func:`import_annotations`: labels written, unchanged (identical locked label
    already present) and ``submitted`` (whether the imported labels were locked)."""

    written: int
    unchanged: int
    submitted: bool

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _opt_int(v, fld, file, line):
    if v is None or v == "":
        return None
    try:
        return int(v)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{fld} must be an integer", file=file, line=line, field=fld) from exc


def import_annotations(
    engine: Engine, actor: Account, path: str | Path, fmt: str | None = None, *, submit: bool = True
) -> ImportResult:
    """Import labels from a JSONL or CSV file with columns ``annotator``, ``sample_id``, ``label``
    (``misbehavior|benign|unsure``) and optional ``note``, ``category``, ``severity``,
    ``evidence_start``, ``evidence_end``, ``seconds_spent``, ``guideline_version``. Admin only.

    All or nothing: any bad row raises :class:`InputError` naming file, line and field, and nothing
    is written. A label for an item not assigned to that annotator is refused (field ``sample_id``),
    as is a repeated (annotator, sample_id) row. With ``submit`` (the default) imported labels are
    final: their assignments are marked submitted (locked). Re-importing an identical label on a
    locked item is a no-op; a different one is refused.
    """
    from store.models import Sample

    require_admin(actor)
    file = str(path)
    records = read_records(path, fmt)

    def work(s):
        check_actor(s, actor)
        users, asg, existing = _import_lookups(s, actor)
        seen: set[tuple[int, str]] = set()
        planned = []
        for line, rec in records:

            def bad(msg, fld):
                return InputError(msg, file=file, line=line, field=fld)  # noqa: B023 - called in this iteration

            name = rec.get("annotator")
            if not isinstance(name, str) or not name.strip():
                raise bad("missing annotator", "annotator")
            if name.strip() not in users:
                raise bad(f"unknown annotator {name!r}", "annotator")
            aid = users[name.strip()]
            sid = rec.get("sample_id")
            if not isinstance(sid, str) or not sid.strip():
                raise bad("missing sample_id", "sample_id")
            sid = sid.strip()
            if (aid, sid) not in asg:
                raise bad(f"item {sid!r} is not assigned to {name!r}", "sample_id")
            if (aid, sid) in seen:
                raise bad(f"repeated label of {name!r} on {sid!r}", "sample_id")
            seen.add((aid, sid))
            label = rec.get("label")
            label = label.strip() if isinstance(label, str) else label
            try:
                category, severity, gv = _validate_label(
                    label, rec.get("category"), rec.get("severity"), rec.get("guideline_version")
                )
                note = _clean_text(rec.get("note"), "note")
            except InputError as exc:
                raise bad(exc.message, exc.field) from exc
            start = _opt_int(rec.get("evidence_start"), "evidence_start", file, line)
            end = _opt_int(rec.get("evidence_end"), "evidence_end", file, line)
            evidence = None
            if (start is None) != (end is None):
                raise bad("evidence_start and evidence_end go together", "evidence_end")
            secs = rec.get("seconds_spent")
            if secs is not None and secs != "":
                try:
                    secs = float(secs)
                    assert secs >= 0 and secs != float("inf")
                except (TypeError, ValueError, AssertionError) as exc:
                    raise bad("seconds_spent must be a non-negative number", "seconds_spent") from exc
            else:
                secs = None
            if start is not None:
                response = s.execute(sa.select(Sample.response).where(Sample.id == sid)).scalar_one()
                try:
                    evidence = _evidence(response, (start, end))
                except InputError as exc:
                    raise bad(exc.message, "evidence_start") from exc
            else:
                evidence = (None, None, None)
            values = {
                "annotator_id": aid,
                "sample_id": sid,
                "label": label,
                "category": category,
                "severity": severity,
                "evidence_start": evidence[0],
                "evidence_end": evidence[1],
                "evidence_text": evidence[2],
                "note": note,
                "guideline_version": gv,
                "seconds_spent": secs,
            }
            if asg[(aid, sid)].submitted_at is not None:
                old = existing.get((aid, sid))
                same = old is not None and all(
                    old[k] == values[k]
                    for k in ("label", "category", "severity", "evidence_start", "evidence_end", "note")
                )
                if not same:
                    raise bad(f"the label of {name!r} on {sid!r} is already submitted and locked", "sample_id")
                continue
            planned.append(values)
        _write_imported(s, planned, submit)
        return ImportResult(written=len(planned), unchanged=len(records) - len(planned), submitted=submit)

    return _transaction(engine, work)


def _import_lookups(
    s: Session, actor: Account
) -> tuple[dict[str, int], dict[tuple[int, str], sa.Row[Any]], dict[tuple[int, str], dict[str, Any]]]:
    """What :func:`import_annotations` checks rows against: active account ids by name, assignment
    rows (``annotator_id``, ``sample_id``, ``submitted_at``) and existing label rows, both keyed by
    ``(annotator_id, sample_id)`` (admin only)."""
    users = store.active_annotator_ids(s)
    asg = store.assignment_states(s)
    existing = {(r["annotator_id"], r["sample_id"]): r for r in label_rows(s, actor)}
    return users, asg, existing


def _write_imported(s: Session, planned: list[dict[str, Any]], submit: bool) -> None:
    """Upsert the checked label rows of an import (``planned``: ``upsert_label`` values); with
    ``submit`` the labels and their assignments are marked submitted (locked) now."""
    now = utcnow()
    for values in planned:
        if submit:
            values["submitted_at"] = now
        upsert_label(s, values)
        if submit:
            store.mark_submitted(s, values["annotator_id"], [values["sample_id"]], now, labels=False)


ADJUDICATION_EXPORT_COLUMNS = [
    "sample_id",
    "pair_id",
    "adjudicator",
    "decision",
    "note",
    "split",
    "guideline_version",
    "created_at",
    "item_status",
    "item_category",
    "task",
    "final_label",
    "superseded",
    "annotator_labels",
]


def export_adjudications(engine: Engine, actor: Account, path: str | Path, fmt: str | None = None) -> int:
    """Write :func:`adjudication_records` to ``path`` as JSONL or CSV (admin only). Returns the count."""
    return write_records(path, adjudication_records(engine, actor), fmt, ADJUDICATION_EXPORT_COLUMNS)
