"""Exporting stored samples as a pair file (JSONL, CSV or Parquet; the format:
:mod:`automonitor.data.pairfiles`): :func:`export_pairs`, its options checked by
:func:`check_export_options` before a store is touched."""

from __future__ import annotations

import csv
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from automonitor import vocab
from automonitor.data.pairfiles.read import SampleContent, sample_content
from automonitor.data.records import check_csv_mode, csv_cell_out, detect_format
from automonitor.data.row_models import PAIR_FIELDS
from automonitor.errors import InputError, require_folder
from automonitor.jsontypes import JSONObject
from store import session_scope
from store.queries.pair_files import export_samples
from store.queries.rowtypes import SpanRow
from store.queries.spans import spans_by_sample

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine
    from sqlmodel import Session

    from store.models import Sample

#: ``controls``: the benign-only control samples (pair ids ``controls:...``), whose false alarm rate the report
#: shows beside the test set's; a system scored from a blind export needs them exported too (fresh-user trial)
EXPORT_SPLITS: tuple[str, ...] = ("test", "train", "controls", "all")
EXPORT_STATUSES: tuple[str, ...] = ("gold", "candidate", "rejected", "all")


class _GoldSpans(TypedDict, total=False):
    spans: list[JSONObject]  # only on a sample with gold spans


class PairFileRow(SampleContent, _GoldSpans):
    """One sample as a pair-file record (the contract's columns, ``automonitor.data.row_models.PAIR_FIELDS``)."""

    sample_id: str
    pair_id: str
    source: str
    meta: JSONObject
    label_source: str


class ExportSummary(TypedDict):
    """What :func:`export_pairs` wrote (``automonitor export --json`` prints it)."""

    file: str
    format: str
    rows: int
    pairs: int
    split: str
    status: str


def _check_filters(split: str, status: str) -> None:
    """``InputError`` (field ``--split`` / ``--status``) for a split or status an export does not know."""
    if split not in EXPORT_SPLITS:
        raise InputError(f"unknown split '{split}' (use one of: {', '.join(EXPORT_SPLITS)})", field="--split")
    if status not in EXPORT_STATUSES:
        raise InputError(f"unknown status '{status}' (use one of: {', '.join(EXPORT_STATUSES)})", field="--status")


def _record_key(s: Sample) -> tuple[str, str, int, int, str, str]:
    """Export order: insertion time, then file, then line number (``source_record``), then id."""
    rec = s.source_record or ""
    return (
        str(s.created_at),
        s.source_file or "",
        0 if rec.isdigit() else 1,
        int(rec) if rec.isdigit() else 0,
        rec,
        s.id,
    )


def fetch_pair_rows(
    session: Session,
    *,
    split: str = "test",
    status: str = "gold",
    edition: str | None = None,
    label_source: str | None = None,
) -> list[PairFileRow]:
    """Stored samples as pair-file rows, in insertion order (then file line order).

    ``status``: ``gold`` | ``candidate`` | ``rejected`` | ``all``. ``split``: ``test`` | ``train`` |
    ``all``; it filters samples that have a split (gold ones); candidates have none and are selected by
    ``status`` alone. ``edition`` (``paper``|``verified``, split ``test``): only that edition's test
    samples. ``label_source``: only samples with that provenance. Raises ``InputError`` for an unknown
    value.
    """
    _check_filters(split, status)
    if label_source is not None and label_source not in vocab.LABEL_SOURCES:
        raise InputError(
            f"unknown label source '{label_source}' (use one of: {', '.join(vocab.LABEL_SOURCES)})",
            field="--label-source",
        )
    found = export_samples(session, split=split, status=status, edition=edition, label_source=label_source)
    samples = sorted(found, key=_record_key)
    spans = spans_by_sample(session, [s.id for s in samples if s.label == "misbehavior"])
    rows: list[PairFileRow] = []
    for s in samples:
        row: PairFileRow = {
            **sample_content(s),
            "sample_id": s.id,
            "pair_id": s.pair_id,
            "source": s.source,
            "meta": dict(s.meta),
            "label_source": s.label_source,
        }
        if spans.get(s.id):
            row["spans"] = [_span_json(sp) for sp in spans[s.id]]
        rows.append(row)
    return rows


def _span_json(span: SpanRow) -> JSONObject:
    """A gold span as the pairs file writes it: ``start``, ``end``, ``provenance``, and ``note`` / ``step``
    only when set."""
    out: JSONObject = {"start": span["start"], "end": span["end"], "provenance": span["provenance"]}
    if span["note"] is not None:
        out["note"] = span["note"]
    if span["step"] is not None:
        out["step"] = span["step"]
    return out


def _cell(row: PairFileRow, key: str) -> object:
    """A CSV/Parquet cell: ``meta`` and ``spans`` as JSON text (``spans`` empty when absent)."""
    if key == "meta":
        return json.dumps(row["meta"], ensure_ascii=False)
    if key == "spans":
        return json.dumps(row["spans"], ensure_ascii=False) if row.get("spans") else ""
    return row.get(key)


#: the columns of a blind export (``export --blind``): what a system under test may see of a sample
BLIND_FIELDS = ("sample_id", "category", "task", "request", "response")


def _write_rows(rows: list[PairFileRow], path: Path, fmt: str, csv_mode: str, blind: bool = False) -> None:
    """Write pair-file rows to ``path`` in ``fmt`` (options checked), atomically: temp file, then rename;
    ``blind``: only the :data:`BLIND_FIELDS` columns."""
    fields = (
        BLIND_FIELDS
        if blind
        else PAIR_FIELDS
        if any(r.get("spans") for r in rows)
        else tuple(k for k in PAIR_FIELDS if k != "spans")
    )
    fd, tmp = tempfile.mkstemp(prefix=".export-", dir=str(path.parent))
    try:
        if fmt == "jsonl":
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                for r in rows:
                    keys = fields if blind else [k for k in PAIR_FIELDS if k != "spans" or r.get("spans")]
                    fh.write(json.dumps({k: r.get(k) for k in keys}, ensure_ascii=False) + "\n")
        elif fmt == "csv":
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                w = csv.writer(fh, lineterminator="\r\n")  # RFC 4180; a bare CR in a cell is then quoted
                w.writerow(fields)
                for r in rows:
                    w.writerow([csv_cell_out(_cell(r, k), csv_mode) for k in fields])
        else:
            os.close(fd)
            import pyarrow as pa
            import pyarrow.parquet as pq

            cols = {k: [_cell(r, k) for r in rows] for k in fields}
            table = pa.table(cols, schema=pa.schema([(k, pa.string()) for k in fields]))
            pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check_export_options(
    path: str | os.PathLike[str], *, fmt: str | None = None, split: str = "test", status: str = "gold"
) -> str:
    """Validate export options before touching a store; returns the format. Raises ``InputError``."""
    fmt = detect_format(str(path), None, fmt)
    _check_filters(split, status)
    require_folder(path)
    return fmt


def export_pairs(
    engine: Engine,
    path: str | os.PathLike[str],
    *,
    fmt: str | None = None,
    split: str = "test",
    status: str = "gold",
    edition: str | None = None,
    label_source: str | None = None,
    csv_mode: str = "safe",
    blind: bool = False,
) -> ExportSummary:
    """Export stored samples to a pair file (atomically: temp file, then rename); see ``fetch_pair_rows``
    for the filters. Returns an :class:`ExportSummary`.

    JSONL: one object per line, UTF-8, non-ASCII kept. CSV: header ``PAIR_FIELDS``, RFC 4180 quoting,
    ``meta`` as a JSON string; ``csv_mode`` ``safe`` (default: a cell that would start a spreadsheet formula
    gets a leading ``'``, :func:`automonitor.data.records.csv_cell_out`, removed again on import) or
    ``exact``. Parquet (pyarrow): string columns, ``meta`` as a JSON string. ``spans`` is written only
    when a sample has gold spans. ``blind``: the file to give a system under test, only
    :data:`BLIND_FIELDS` (no label, label provenance, pair id, source, spans or meta), rows in sample-id
    order (the built ids are hashes, so neither the order nor an id tells a side's label). Raises
    ``InputError`` for an unknown option or a missing directory.
    """
    fmt = check_export_options(path, fmt=fmt, split=split, status=status)  # fail before touching the store
    with session_scope(engine) as session:
        rows = fetch_pair_rows(session, split=split, status=status, edition=edition, label_source=label_source)
    if blind:
        rows = sorted(rows, key=lambda r: r["sample_id"])
    _write_rows(rows, Path(path), fmt, check_csv_mode(csv_mode), blind)
    return ExportSummary(
        file=str(path),
        format=fmt,
        rows=len(rows),
        pairs=len({r["pair_id"] for r in rows}),
        split=split,
        status=status,
    )
