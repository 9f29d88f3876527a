"""File import/export of annotations and adjudications (JSONL or CSV)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Mapping, Sequence, TypedDict

from typing_extensions import NotRequired

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.data import records as record_files
from automonitor.annotation.accounts import Account, require_admin
from automonitor.errors import InputError
from automonitor.data.records import Problems, RawRecord, check_csv_mode, csv_cell_out, detect_format, read_file_bytes
from automonitor.data.row_models import AnnotationRow, validate_one
from automonitor.annotation._common import GUIDELINE_VERSION, StaleRead, transaction, evidence_values
from automonitor.annotation.adjudication import AdjudicationRecord, adjudication_records
from automonitor.annotation.overview import AnnotationRecord, annotation_records
from automonitor.annotation.queries import label_rows, upsert_label
from store.models import utcnow
from store.queries import annotation as store
from store.queries.rowtypes import LabelRow


_FORMATS = ("jsonl", "csv")


def read_records(
    path: str | Path, fmt: str | None = None, *, csv_mode: str = "safe"
) -> list[tuple[int, dict[str, object]]]:
    """``(line, record)`` pairs of a JSONL file (one object a line; blank lines skipped) or a CSV file
    with a header (records counted with the header as line 1; an empty cell is an absent value), read by
    :func:`automonitor.data.records.read_records` (strict JSON: no NaN, no duplicate keys). The format comes
    from the suffix unless ``fmt``. Raises :class:`InputError` with file and line (and CSV column) on
    unreadable input, including bytes that are not UTF-8."""
    fmt = detect_format(str(path), None, fmt, _FORMATS)
    _, raw = record_files.read_records(read_file_bytes(path), str(path), fmt, formats=_FORMATS, csv_mode=csv_mode)
    return [(r.line, r.data) for r in raw]


def records_to_text(
    records: Sequence[Mapping[str, object]], fmt: str, columns: list[str] | None = None, *, csv_mode: str = "safe"
) -> str:
    """Serialise dicts as JSONL (one object a line) or CSV with a header (nested values
    JSON-encoded, ``None`` as an empty cell). ``columns`` fixes the CSV column order. ``csv_mode``:
    ``safe`` (default: cells that would start a spreadsheet formula get a leading ``'``,
    :func:`automonitor.data.records.csv_cell_out`) or ``exact`` (verbatim)."""
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
                k: csv_cell_out(
                    json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else ("" if v is None else v),
                    csv_mode,
                )
                for k, v in r.items()
            }
        )
    return buf.getvalue()


def write_records(
    path: str | Path,
    records: Sequence[Mapping[str, object]],
    fmt: str | None = None,
    columns: list[str] | None = None,
    *,
    csv_mode: str = "safe",
) -> int:
    """Write dicts to ``path`` as JSONL or CSV (:func:`records_to_text`; format from the suffix
    unless ``fmt``; ``csv_mode`` ``safe`` or ``exact``). Returns the record count."""
    path = Path(path)
    fmt = detect_format(str(path), None, fmt, _FORMATS)
    text = records_to_text(records, fmt, columns, csv_mode=check_csv_mode(csv_mode))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")
    return len(records)


#: The columns of an annotation export, in order: the keys of :class:`AnnotationRecord`.
ANNOTATION_EXPORT_COLUMNS = list(AnnotationRecord.__annotations__)


def export_annotations(
    engine: Engine, actor: Account, path: str | Path, fmt: str | None = None, *, csv_mode: str = "safe"
) -> int:
    """Write every label with provenance (:func:`annotation_records`) to ``path`` as JSONL or CSV
    (from the suffix unless ``fmt``). Admin only. Returns the number of labels written."""
    return write_records(path, annotation_records(engine, actor), fmt, ANNOTATION_EXPORT_COLUMNS, csv_mode=csv_mode)


@dataclass(frozen=True)
class ImportResult:
    """Outcome of :func:`import_annotations`: labels written, unchanged (identical locked label
    already present) and ``submitted`` (whether the imported labels were locked)."""

    written: int
    unchanged: int
    submitted: bool

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def import_annotations(
    engine: Engine,
    actor: Account,
    path: str | Path,
    fmt: str | None = None,
    *,
    submit: bool = True,
    csv_mode: str = "safe",
) -> ImportResult:
    """Import labels from a JSONL or CSV file with columns ``annotator``, ``sample_id``, ``label``
    (``misbehavior|benign|unsure``) and optional ``note``, ``category``, ``severity``,
    ``evidence_start``, ``evidence_end`` (one span), ``evidence_spans`` (several: ``[[start, end], ...]``,
    a JSON cell in CSV; it wins over the pair), ``seconds_spent``, ``guideline_version``. Admin only.

    All or nothing: any bad row raises :class:`InputError` naming file, line and field, and nothing
    is written. A label for an item not assigned to that annotator is refused (field ``sample_id``),
    as is a repeated (annotator, sample_id) row. With ``submit`` (the default) imported labels are
    final: their assignments are marked submitted (locked). Re-importing an identical label on a
    locked item is a no-op; a different one is refused.
    """
    require_admin(actor)
    file = str(path)
    records = read_records(path, fmt, csv_mode=csv_mode)
    text_cells = detect_format(file, None, fmt, _FORMATS) == "csv"  # JSON-valued cells arrive as text

    def work(s: Session) -> ImportResult:
        lookups = _import_lookups(s, actor)
        problems = Problems(file)
        planned = [
            values
            for record in records
            if (values := _check_imported_row(s, RawRecord(*record, text_cells=text_cells), lookups, problems))
            is not None
        ]
        problems.raise_if_any()
        _write_imported(s, planned, submit)
        return ImportResult(written=len(planned), unchanged=len(records) - len(planned), submitted=submit)

    return transaction(engine, work, actor=actor)


@dataclass
class _ImportLookups:
    """What the rows of one annotation import are checked against (see :func:`_import_lookups`), plus the
    ``(annotator_id, sample_id)`` keys already seen in the file."""

    users: dict[str, int]
    assignments: dict[tuple[int, str], sa.Row[tuple[int, str, datetime | None]]]
    existing: dict[tuple[int, str], LabelRow]
    seen: set[tuple[int, str]] = field(default_factory=set)


class ImportedLabel(TypedDict):
    """The ``upsert_label`` values of one checked import row (:func:`_check_imported_row`); ``submitted_at``
    is set when the import locks its labels."""

    annotator_id: int
    sample_id: str
    label: str
    category: str | None
    severity: str | None
    evidence_spans: list[list[int]] | None
    evidence_start: int | None
    evidence_end: int | None
    evidence_text: str | None
    note: str | None
    guideline_version: str
    seconds_spent: float | None
    submitted_at: NotRequired[datetime]


def _check_imported_row(
    s: Session, record: RawRecord, lookups: _ImportLookups, problems: Problems
) -> ImportedLabel | None:
    """One row of an annotation import: its fields validated by :class:`automonitor.data.row_models.AnnotationRow`,
    an ``unsure`` label with its note (as in the app), then checked against the store (known annotator, assigned item, not repeated in the file, evidence
    offsets inside the response, not a different label on a locked item).

    Returns the ``upsert_label`` values to write, or ``None`` when the row is refused (its problem is
    added to ``problems`` at the row's line and field) or is an identical re-import of a locked label."""
    row = validate_one(AnnotationRow, record, problems)
    if row is None:
        return None
    name, sid = row.annotator, row.sample_id

    def bad(msg: str, fld: str) -> None:
        problems.add(msg, line=record.line, field=fld)

    if row.label == "unsure" and not row.note:
        bad("an unsure label needs a note saying why (guidelines)", "note")  # as in the app (save_label)
        return None
    aid = lookups.users.get(name.strip())
    if aid is None:
        bad(f"unknown annotator {name!r}", "annotator")
        return None
    if (aid, sid) not in lookups.assignments:
        bad(f"item {sid!r} is not assigned to {name!r}", "sample_id")
        return None
    if (aid, sid) in lookups.seen:
        bad(f"repeated label of {name!r} on {sid!r}", "sample_id")
        return None
    lookups.seen.add((aid, sid))
    given: object = row.evidence_spans
    if given is None and row.evidence_start is not None:
        given = (row.evidence_start, row.evidence_end)
    try:
        evidence = evidence_values(store.sample_texts(s, sid)[1] if given is not None else "", given)
    except InputError as exc:
        fld = exc.field or "evidence"
        bad(
            exc.message,
            "evidence_start" if row.evidence_spans is None else fld.replace("evidence", "evidence_spans", 1),
        )
        return None
    values = ImportedLabel(
        annotator_id=aid,
        sample_id=sid,
        label=row.label,
        category=row.category,
        severity=row.severity,
        **evidence,
        note=row.note,
        guideline_version=row.guideline_version or GUIDELINE_VERSION,
        seconds_spent=row.seconds_spent,
    )
    old = lookups.existing.get((aid, sid))
    if lookups.assignments[(aid, sid)].submitted_at is None and (old is None or old["submitted_at"] is None):
        return values  # open: neither the assignment nor the stored label is submitted
    differ = _locked_differences(old, values)
    if differ:
        where = ", ".join(differ)
        what = "; ".join(differ.values())
        bad(f"the label of {name!r} on {sid!r} is already submitted and locked; this row differs in {what}", where)
    return None


#: the fields of a label that a re-import of a locked label must repeat exactly
_LOCKED_FIELDS = ("label", "category", "severity", "evidence_start", "evidence_end", "evidence_spans", "note")
_SHOWN_CHARS = 40  # a differing value is shown up to this many characters


def _shown_value(v: object) -> str:
    """A stored or imported field value for an error message: its ``repr``, cut to :data:`_SHOWN_CHARS`."""
    text = repr(v)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _locked_differences(old: Mapping[str, object] | None, values: Mapping[str, object]) -> dict[str, str]:
    """The fields (:data:`_LOCKED_FIELDS`) in which an imported label ``values`` differs from the locked
    stored label ``old``, each with ``"FIELD (stored X, file Y)"`` (values cut to 40 characters), in
    field order; empty when they are the same (the re-import is a no-op). With no stored label (an
    assignment submitted without one) the differing field is ``label``."""
    if old is None:
        return {"label": f"label (none stored, file {_shown_value(values['label'])})"}
    return {
        k: f"{k} (stored {_shown_value(old[k])}, file {_shown_value(values[k])})"
        for k in _LOCKED_FIELDS
        if old[k] != values[k]
    }


def _import_lookups(s: Session, actor: Account) -> _ImportLookups:
    """What :func:`import_annotations` checks rows against: active account ids by name, assignment
    rows (``annotator_id``, ``sample_id``, ``submitted_at``) and existing label rows, both keyed by
    ``(annotator_id, sample_id)`` (admin only)."""
    existing = {(r["annotator_id"], r["sample_id"]): r for r in label_rows(s, actor)}
    return _ImportLookups(store.active_annotator_ids(s), store.assignment_states(s), existing)


def _write_imported(s: Session, planned: list[ImportedLabel], submit: bool) -> None:
    """Upsert the checked label rows of an import (``planned``: ``upsert_label`` values); with
    ``submit`` the labels and their assignments are marked submitted (locked) now.

    Raises:
        StaleRead: a label was submitted by another writer after the rows were checked (the upsert,
            guarded by ``submitted_at IS NULL``, wrote nothing): the import's transaction is retried
            and its checks then refuse a different locked label or count an identical one unchanged.
    """
    now = utcnow()
    for values in planned:
        if submit:
            values["submitted_at"] = now
        if upsert_label(s, values) == 0:
            raise StaleRead(f"label of annotator {values['annotator_id']} on {values['sample_id']!r} locked meanwhile")
        if submit:
            store.mark_submitted(s, values["annotator_id"], [values["sample_id"]], now, labels=False)


#: The columns of an adjudication export, in order: the keys of :class:`AdjudicationRecord`.
ADJUDICATION_EXPORT_COLUMNS = list(AdjudicationRecord.__annotations__)


def export_adjudications(
    engine: Engine, actor: Account, path: str | Path, fmt: str | None = None, *, csv_mode: str = "safe"
) -> int:
    """Write :func:`adjudication_records` to ``path`` as JSONL or CSV (admin only). Returns the count."""
    return write_records(path, adjudication_records(engine, actor), fmt, ADJUDICATION_EXPORT_COLUMNS, csv_mode=csv_mode)
