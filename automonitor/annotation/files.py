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

from automonitor import records as record_files
from automonitor.accounts import Account, check_actor, require_admin
from automonitor.errors import InputError
from automonitor.records import Problems, RawRecord, detect_format, read_file_bytes
from automonitor.rows import AnnotationRow, validate_one
from automonitor.annotation._common import GUIDELINE_VERSION, _evidence, _transaction
from automonitor.annotation.adjudication import adjudication_records
from automonitor.annotation.overview import annotation_records


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
    from store.models import Annotator, Assignment, Sample, utcnow
    from automonitor.annotation.queries import label_rows, upsert_label

    require_admin(actor)
    file = str(path)
    records = read_records(path, fmt)

    def work(s):
        check_actor(s, actor)
        users = {n: i for i, n in s.execute(sa.select(Annotator.id, Annotator.name).where(Annotator.active.is_(True)))}
        asg = {
            (r.annotator_id, r.sample_id): r
            for r in s.execute(sa.select(Assignment.annotator_id, Assignment.sample_id, Assignment.submitted_at))
        }
        existing = {(r["annotator_id"], r["sample_id"]): r for r in label_rows(s, actor)}
        seen: set[tuple[int, str]] = set()
        planned = []
        problems = Problems(file)
        for record in records:
            row = validate_one(AnnotationRow, RawRecord(*record), problems)
            if row is None:
                continue
            line, name, sid = record[0], row.annotator, row.sample_id

            def bad(msg, fld):
                problems.add(msg, line=line, field=fld)  # noqa: B023 - called in this iteration

            if name.strip() not in users:
                bad(f"unknown annotator {name!r}", "annotator")
                continue
            aid = users[name.strip()]
            if (aid, sid) not in asg:
                bad(f"item {sid!r} is not assigned to {name!r}", "sample_id")
                continue
            if (aid, sid) in seen:
                bad(f"repeated label of {name!r} on {sid!r}", "sample_id")
                continue
            seen.add((aid, sid))
            evidence = (None, None, None)
            if row.evidence_start is not None:
                response = s.execute(sa.select(Sample.response).where(Sample.id == sid)).scalar_one()
                try:
                    evidence = _evidence(response, (row.evidence_start, row.evidence_end))
                except InputError as exc:
                    bad(exc.message, "evidence_start")
                    continue
            values = {
                "annotator_id": aid,
                "sample_id": sid,
                "label": row.label,
                "category": row.category,
                "severity": row.severity,
                "evidence_start": evidence[0],
                "evidence_end": evidence[1],
                "evidence_text": evidence[2],
                "note": row.note,
                "guideline_version": row.guideline_version or GUIDELINE_VERSION,
                "seconds_spent": row.seconds_spent,
            }
            if asg[(aid, sid)].submitted_at is not None:
                old = existing.get((aid, sid))
                same = old is not None and all(
                    old[k] == values[k]
                    for k in ("label", "category", "severity", "evidence_start", "evidence_end", "note")
                )
                if not same:
                    bad(f"the label of {name!r} on {sid!r} is already submitted and locked", "sample_id")
                continue
            planned.append(values)
        problems.raise_if_any()
        now = utcnow()
        for v in planned:
            if submit:
                v["submitted_at"] = now
            upsert_label(s, v)
            if submit:
                s.execute(
                    sa.update(Assignment)
                    .where(Assignment.annotator_id == v["annotator_id"], Assignment.sample_id == v["sample_id"])
                    .values(submitted_at=now)
                )
        return ImportResult(written=len(planned), unchanged=len(records) - len(planned), submitted=submit)

    return _transaction(engine, work)


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
