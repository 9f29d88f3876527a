"""Reading record files (JSONL, CSV, Parquet) into located raw records: the one reader behind the pair-file,
prediction and annotation importers (:mod:`automonitor.data.pairfiles`, :mod:`automonitor.runs.prediction_files`,
:mod:`automonitor.annotation.files`), whose rows are then validated by the row models of
:mod:`automonitor.data.row_models`.

- JSONL: one JSON object a physical line (``\\n`` or ``\\r\\n``); blank lines are skipped. JSON is strict:
  duplicate keys are malformed; non-finite numbers (``NaN``, ``Infinity``, ``1e999``) anywhere in a record
  and nesting deeper than :data:`MAX_JSON_DEPTH` are refused naming the field (never a RecursionError).
  A lone ``[``/``{`` line is reported as a pretty-printed JSON document.
- CSV: a header row, then one record a row (cells may span lines). ``line`` is the record number counting
  the header as line 1 (the row number a spreadsheet shows; blank rows count). An empty cell of a column
  that is not required is an absent value (left out of the record).
- Parquet (pyarrow): ``line`` is the 1-based row number; ``None`` and empty optional cells are absent.

A UTF-8 byte-order mark is ignored. Bytes that are not UTF-8 are either reported at once (``undecodable=
"raise"``: JSONL by line, CSV by line and column) or, with ``undecodable="keep"``, passed on inside the
values as lone surrogates (U+DC80-U+DCFF) for the caller to locate by field (:func:`bad_byte_note`); a byte
that breaks the JSON syntax is always reported by line.

Problems are collected in a :class:`Problems` and raised as one :class:`automonitor.errors.InputError`
located at the first (``file``, ``line``, ``field``), its message listing up to ``max_errors`` of them.
"""

from __future__ import annotations

import codecs
import csv
import datetime as dt
import io
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Annotated, Collection, Iterable, Iterator, TypeVar

from pydantic import AfterValidator, BaseModel, Field, ValidationError

from automonitor.errors import AutomonitorError, InputError
from automonitor.jsontypes import JSONObject, JSONValue, unique_keys

FORMATS: tuple[str, ...] = ("jsonl", "csv", "parquet")
EXTENSIONS: dict[str, str] = {
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_ALIASES = {"json": "jsonl", "ndjson": "jsonl", "pq": "parquet"}

# Spreadsheet formula injection (OWASP "CSV injection"): a cell starting with one of these is run as a
# formula by Excel / LibreOffice / Google Sheets. Spreadsheet-bound CSV ("safe", the default of every CSV
# export) prefixes such a cell, and a cell starting with ``'`` followed by one of them or by ``'``, with
# one ``'``; :func:`csv_cell_in` (applied by the CSV reader to every cell) removes exactly that prefix,
# so a safe file reads back losslessly. "exact" CSV writes cells verbatim (for other tools); it reads
# back losslessly too, except a text that itself starts with ``'`` followed by one of these characters.
FORMULA_START: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")
CSV_MODES: tuple[str, ...] = ("safe", "exact")


def csv_cell_out(value: object, mode: str = "safe") -> object:
    """A CSV cell as written in ``mode`` (``safe``: neutralised with a leading ``'`` when it would start
    a formula; ``exact``: as is). Non-text values are returned unchanged."""
    if mode == "safe" and isinstance(value, str) and value:
        if value[0] in FORMULA_START or (value[0] == "'" and len(value) > 1 and value[1] in (*FORMULA_START, "'")):
            return "'" + value
    return value


def csv_cell_in(value: str) -> str:
    """The text of a CSV cell written by :func:`csv_cell_out` (either mode): one leading ``'`` removed
    when it is followed by a formula character or another ``'``."""
    if len(value) > 1 and value[0] == "'" and value[1] in (*FORMULA_START, "'"):
        return value[1:]
    return value


def check_csv_mode(mode: str) -> str:
    """``mode`` when it is one of :data:`CSV_MODES`; else ``InputError`` (field ``--csv-mode``)."""
    if mode not in CSV_MODES:
        raise InputError(f"must be one of {', '.join(CSV_MODES)}, got {mode!r}", field="--csv-mode")
    return mode


@dataclass
class RawRecord:
    """One record as read from a file, before validation. ``line`` is where errors point;
    ``text_cells`` is True for CSV/Parquet, whose JSON-valued fields arrive as JSON strings."""

    line: int
    data: dict[str, object]
    text_cells: bool = False


KEPT_PROBLEMS = 100  # problems kept with their text; the rest of a bad file's problems are only counted


class Problems:
    """Collects located problems of one file; ``raise_if_any`` raises the first as an ``InputError``
    whose message also lists up to ``limit`` of them and whose ``problems`` attribute holds the first
    :data:`KEPT_PROBLEMS` (``total`` counts them all: a file with a million bad rows costs a counter,
    not a million error objects)."""

    def __init__(self, file: str, limit: int = 10):
        self.file, self.limit = file, max(1, int(limit))
        self.items: list[InputError] = []
        self.total = 0

    def add(self, message: str, *, line: int | None = None, field: str | None = None) -> None:
        """Record a problem at ``line``/``field`` (undecodable bytes in the text are shown as escapes)."""
        self.total += 1
        if len(self.items) >= max(self.limit, KEPT_PROBLEMS):
            return
        clean = lambda t: t.encode("utf-8", "backslashreplace").decode("utf-8")  # noqa: E731
        self.items.append(
            InputError(clean(message), file=self.file, line=line, field=None if field is None else clean(field))
        )

    def __bool__(self) -> bool:
        return bool(self.items)

    def absorb(self, other: Problems) -> None:
        """Take in the problems of ``other`` (another stage's, of the same file): every problem kept in
        line order (a problem without a line first; the same line keeps this collector's first), the
        totals added, at most :data:`KEPT_PROBLEMS` kept with their text."""
        merged = sorted(self.items + other.items, key=lambda p: p.line or 0)
        self.items = merged[: max(self.limit, KEPT_PROBLEMS)]
        self.total += other.total

    def raise_if_any(self) -> None:
        """Raise ``InputError`` at the first problem, if there is any: "first N problems, M more", in
        (file, line) order whatever stage found each (a problem without a line first; ties keep the order
        they were found in)."""
        if not self.items:
            return
        self.items.sort(key=lambda p: (p.file or "", p.line or 0))
        first = self.items[0]
        msg = first.message
        if self.total > 1:
            shown = self.items[1 : self.limit]
            more = self.total - 1 - len(shown)
            msg += f"\n  ({self.total - 1} more problem{'s' if self.total > 2 else ''})"
            msg += "".join(f"\n  also: {p}" for p in shown)
            if more > 0:
                msg += f"\n  ... and {more} more"
        err = InputError(msg, file=first.file, line=first.line, field=first.field)
        err.problems = list(self.items)  # type: ignore[attr-defined]
        raise err


def detect_format(
    name: str, data: bytes | None = None, fmt: str | None = None, formats: Collection[str] = FORMATS
) -> str:
    """The record-file format, one of ``formats`` (``jsonl`` | ``csv`` | ``parquet``): ``fmt`` if given,
    else from the file extension (``.jsonl``/``.json``/``.ndjson``, ``.csv``, ``.parquet``/``.pq``), else
    sniffed from ``data`` (Parquet magic ``PAR1``; first non-blank character ``{`` or ``[`` means JSONL;
    else CSV).

    Raises ``InputError`` (field ``--format``) for an unknown ``fmt``, a format not in ``formats``, or
    when nothing decides it (``data`` is None and the extension is unknown).
    """
    allowed = ", ".join(formats)
    if fmt:
        f = fmt.lower().lstrip(".")
        f = _ALIASES.get(f, f)
        if f not in formats:
            raise InputError(f"unknown format '{fmt}' (use one of: {allowed})", file=name, field="--format")
        return f
    ext = Path(name).suffix.lower()
    if ext in EXTENSIONS:
        f = EXTENSIONS[ext]
    elif data is None:
        raise InputError(
            f"cannot tell the format from the extension '{ext}' (use --format {'|'.join(formats)})",
            file=name,
            field="--format",
        )
    elif data[:4] == b"PAR1":
        f = "parquet"
    else:
        head = (data[3:] if data.startswith(codecs.BOM_UTF8) else data).lstrip()[:1]
        f = "jsonl" if head in (b"{", b"[") else "csv"
    if f not in formats:
        raise InputError(f"{f} files are not accepted here (use one of: {allowed})", file=name, field="--format")
    return f


MAX_JSON_DEPTH = 64
"""Deepest nesting of objects/arrays a record may have (the whole JSON line, or a JSON cell)."""
MAX_META_DEPTH = 16
"""Deepest nesting inside a ``meta`` object (``meta`` itself is level 1)."""
MAX_META_BYTES = 1_048_576
"""Largest ``meta`` object, as compact UTF-8 JSON (1 MiB). One limit for both paths: the importers refuse a
larger ``meta`` and the build (:func:`automonitor.data.build.gating.load_all`) drops a source pair whose
``meta`` is larger, so every exported store imports back (the largest the raw sources hold is an
odcv_bench trajectory of ~134 KiB)."""


class JSONLimitError(AutomonitorError, ValueError):
    """A JSON text that is well-formed but outside the importers' limits: nested deeper than
    :data:`MAX_JSON_DEPTH`, or holding a non-finite number (``1e999``, ``NaN``, ``Infinity``).
    ``path`` names where (``meta.a.b``, ``score``, ``evidence[2]``), or is None at the top level."""

    def __init__(self, message: str, path: str | None):
        super().__init__(message)
        self.msg, self.path = message, path


def _depth_exceeded(text: str, limit: int) -> tuple[bool, str | None]:
    """``(True, top-level key)`` when ``text`` nests objects/arrays deeper than ``limit`` (scanned without
    recursion, strings skipped), else ``(False, None)``."""
    if text.count("{") + text.count("[") <= limit:
        return False, None
    depth, in_str, esc, start, last, key = 0, False, False, 0, None, None
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str, last = False, text[start : i + 1]
            continue
        if ch == '"':
            in_str, start = True, i
        elif ch == ":" and depth == 1 and last is not None:
            try:
                key = json.loads(last)
            except ValueError:
                key = last.strip('"')
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True, key if depth > 1 else None
        elif ch in "]}":
            depth -= 1
            if depth == 1:
                last = None
    return False, None


def _path(parent: str | None, key: object) -> str:
    if isinstance(key, int):
        return f"{parent or ''}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def _shape(value: object) -> tuple[int, bool]:
    """``(json_depth(value), whether a non-finite float is anywhere inside value)`` in one pass over the
    tree, a level at a time, building no paths (no recursion): the cheap check behind :func:`loads`,
    :func:`nonfinite_path` and :func:`meta_problem`, which work out where a fault is only when there is one."""
    depth, bad, level = 0, False, [value]
    while level:
        below: list[object] = []
        nested = False
        for v in level:
            if isinstance(v, dict):
                below.extend(v.values())
                nested = True
            elif isinstance(v, list):
                below.extend(v)
                nested = True
            elif isinstance(v, float) and not math.isfinite(v):
                bad = True
        if nested:
            depth += 1
        level = below
    return depth, bad


def nonfinite_path(value: object, root: str | None = None) -> str | None:
    """Where the first non-finite float (inf, -inf, NaN) inside ``value`` is (``meta.x``,
    ``evidence[1]``; ``root`` when ``value`` itself is one), else None. Iterative (no recursion)."""
    if not _shape(value)[1]:
        return None
    stack: list[tuple[object, str | None]] = [(value, root)]
    while stack:
        v, p = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return p if p is not None else "(value)"
        if isinstance(v, dict):
            stack.extend((x, _path(p, k)) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((x, _path(p, i)) for i, x in reversed(list(enumerate(v))))
    return None


def json_depth(value: object) -> int:
    """Nesting depth of a JSON value: a scalar 0, ``{}``/``[]`` 1, ``{"a": {}}`` 2. Iterative."""
    return _shape(value)[0]


def meta_problem(meta: object, field: str = "meta") -> str:
    """'' when ``meta`` (a decoded JSON object) is within the limits, else what is wrong: nested deeper
    than :data:`MAX_META_DEPTH`, larger than :data:`MAX_META_BYTES` as compact JSON, or holding a
    non-finite number. The message names the path (e.g. ``meta.x``)."""
    depth, nonfinite = _shape(meta)
    bad = nonfinite_path(meta, field) if nonfinite else None
    if bad:
        return f"{bad} is not a finite number (NaN, Infinity and numbers like 1e999 are not allowed)"
    if depth > MAX_META_DEPTH:
        return f"{field} is nested {depth} levels deep (at most {MAX_META_DEPTH})"
    size = len(json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    if size > MAX_META_BYTES:
        return f"{field} is {size} bytes as JSON (at most {MAX_META_BYTES})"
    return ""


def loads(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> JSONValue:
    """Strict ``json.loads``: duplicate object keys raise ``ValueError``; nesting deeper than ``max_depth``
    and non-finite numbers (``NaN``, ``Infinity``, ``1e999``) raise :class:`JSONLimitError` (a
    ``ValueError``) naming the path; never a ``RecursionError``. A text too deep is refused as such whatever
    else is wrong with it.

    Parsed first, then checked on the value in one pass (:func:`_shape`); the text is scanned character
    by character (:func:`_depth_exceeded`, to name the top-level key) only when the parse failed or the value
    is too deep: the scan of every text cost 10x the parse for texts holding code (many brackets)."""
    try:
        obj: JSONValue = json.loads(text, parse_constant=float, object_pairs_hook=unique_keys)  # "NaN", "Infinity"
    except (ValueError, RecursionError):  # a text nested deep enough to exhaust the parser's stack included
        deep, key = _depth_exceeded(text, max_depth)
        if deep:
            raise JSONLimitError(f"nested more than {max_depth} levels deep (at most {max_depth})", key) from None
        raise
    depth, nonfinite = _shape(obj)
    if depth > max_depth:  # a parsed text nests exactly as deep as its value
        raise JSONLimitError(
            f"nested more than {max_depth} levels deep (at most {max_depth})", _depth_exceeded(text, max_depth)[1]
        )
    bad = nonfinite_path(obj) if nonfinite else None
    if bad is not None:
        raise JSONLimitError(
            "is not a finite number (NaN, Infinity and numbers like 1e999 are not allowed)",
            None if bad == "(value)" else bad,
        )
    return obj


def bad_byte_note(text: str) -> str:
    """'' when ``text`` is clean Unicode, else where its first undecodable byte (a lone surrogate left
    by ``surrogateescape``) or lone surrogate is, e.g. ``"byte 0xff at character 3 is not valid UTF-8"``."""
    if text.isascii():  # the common case, checked in C: no surrogate (nor any non-ASCII character) at all
        return ""
    try:
        text.encode("utf-8")  # strict UTF-8 encodes every code point but the surrogates U+D800-U+DFFF
        return ""
    except UnicodeEncodeError:
        pass
    for i, ch in enumerate(text):
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:
            return f"byte 0x{o - 0xDC00:02x} at character {i + 1} is not valid UTF-8"
        if 0xD800 <= o <= 0xDFFF:
            return f"a lone surrogate (U+{o:04X}) at character {i + 1} is not valid Unicode text"
    return ""


def iter_jsonl(lines: Iterable[bytes], problems: Problems, *, undecodable: str = "raise") -> Iterator[RawRecord]:
    """Records of JSONL (problems go to ``problems``), one per non-blank physical line, one at a time from
    ``lines`` (an open binary file, or ``data.split(b"\\n")``; a trailing ``\\n``/``\\r\\n``
    and a UTF-8 BOM on the first line are removed), so a large file is never held whole: memory stays flat in
    file size."""
    for lineno, raw in enumerate(lines, 1):
        if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[3:]
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
            bad = ""
        except UnicodeDecodeError as exc:
            text = raw.decode("utf-8", "surrogateescape")
            bad = f"byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} is not valid UTF-8"
        if bad and undecodable == "raise":
            problems.add(f"not UTF-8 text: {bad}", line=lineno)
            continue
        try:
            obj: object = loads(text)
        except JSONLimitError as exc:
            problems.add(exc.msg if exc.path else f"the record is {exc.msg}", line=lineno, field=exc.path)
            continue
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            if bad:
                problems.add(f"not UTF-8 text: {bad}", line=lineno)
            elif text.strip() in ("[", "{"):
                problems.add(
                    "malformed JSON: a lone bracket; this looks like a pretty-printed JSON "
                    "document, expected JSONL (one JSON object per line)",
                    line=lineno,
                )
            else:
                problems.add(
                    f"malformed JSON: {getattr(exc, 'msg', None) or exc}"
                    + (f" (column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""),
                    line=lineno,
                )
            continue
        if not isinstance(obj, dict):
            kind = {
                list: "an array",
                str: "a string",
                bool: "a boolean",
                type(None): "null",
                int: "a number",
                float: "a number",
            }.get(type(obj), type(obj).__name__)
            problems.add(f"expected a JSON object (one record per line), got {kind}", line=lineno)
            continue
        yield RawRecord(lineno, obj)


def _check_header(
    header: list[str], problems: Problems, columns: Collection[str] | None, required: Collection[str]
) -> None:
    for i, h in enumerate(header):
        if bad_byte_note(h):
            problems.add(f"column name is not UTF-8 text: {bad_byte_note(h)}", line=1)
            return
        if h in header[:i]:
            problems.add(f"duplicate column '{h}'", line=1, field=h)
        elif columns is not None and h not in columns:
            problems.add(f"unknown column '{h}' (columns: {', '.join(columns)})", line=1, field=h)
    for f in required:
        if f not in header:
            problems.add(f"missing required column '{f}'", line=1, field=f)


def iter_csv(
    stream: Iterable[str],
    problems: Problems,
    *,
    columns: Collection[str] | None = None,
    required: Collection[str] = (),
    undecodable: str = "raise",
    skip_blank_rows: bool = False,
    csv_mode: str = "safe",
) -> Iterator[RawRecord]:
    """Records of a CSV with a header row (``columns``: the allowed column names, None = any;
    ``required``: columns the header must have, their empty cells kept as ``""``; ``skip_blank_rows``:
    also skip rows whose cells are all blank; ``csv_mode``: ``safe``, cells as :func:`csv_cell_out` wrote
    them, the neutralising ``'`` removed, or ``exact``), one at a time from a text stream opened with ``newline=""`` (for a
    file: ``open(path, encoding="utf-8-sig", errors="surrogateescape", newline="")``), so a large file
    is never held whole: memory stays flat in file size. After a header problem or a malformed row it
    stops (the problem is in ``problems``)."""
    csv.field_size_limit(2**31 - 1)
    reader = csv.reader(stream, strict=True)
    try:
        header_raw = next(reader, None)
    except csv.Error as exc:
        problems.add(f"malformed CSV header: {exc}", line=1)
        return
    if not header_raw:
        problems.add("the CSV file has no header row", line=1)
        return
    header = [h.strip() for h in header_raw]
    _check_header(header, problems, columns, required)
    if problems:
        return
    record = 1
    prev_phys = reader.line_num
    while True:
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.add(f"malformed CSV: {exc}", line=record + 1)
            break
        start_phys = prev_phys + 1
        prev_phys = reader.line_num
        record += 1  # spreadsheet row number: blank rows count too
        if not values or (skip_blank_rows and all(not v.strip() for v in values)):
            continue  # blank line
        if len(values) != len(header):
            where = f" (starts at physical line {start_phys})" if start_phys != record else ""
            problems.add(f"has {len(values)} fields but the header has {len(header)}{where}", line=record)
            continue
        cells = _csv_cells(
            header, values, record, problems, required=required, undecodable=undecodable, csv_mode=csv_mode
        )
        if cells is not None:
            yield RawRecord(record, cells, text_cells=True)


def _csv_cells(
    header: list[str],
    values: list[str],
    line: int,
    problems: Problems,
    *,
    required: Collection[str],
    undecodable: str,
    csv_mode: str = "safe",
) -> dict[str, object] | None:
    """``{column: cell}`` of one CSV row (an empty cell of a column not in ``required`` left out), or None
    after adding a problem when a cell is not UTF-8 text and ``undecodable`` is ``"raise"``."""
    cells: dict[str, object] = {}
    for column, value in zip(header, values):
        if undecodable == "raise" and bad_byte_note(value):
            problems.add(f"not UTF-8 text: {bad_byte_note(value)}", line=line, field=column)
            return None
        if value == "" and column not in required:
            continue  # an empty optional cell is an absent value
        cells[column] = csv_cell_in(value) if csv_mode == "safe" else value
    return cells


PARQUET_BATCH_ROWS = 512  # rows decoded at a time by :func:`iter_parquet`


def iter_parquet(
    source: str | os.PathLike[str] | IO[bytes],
    problems: Problems,
    *,
    columns: Collection[str] | None = None,
    required: Collection[str] = (),
) -> Iterator[RawRecord]:
    """Records of a Parquet file (pyarrow; problems go to ``problems``), from a path or a binary file object,
    :data:`PARQUET_BATCH_ROWS` rows at a time (pyarrow's ``ParquetFile.iter_batches``), so only one batch is decoded at once. A file pyarrow
    cannot read, or a header with unknown, duplicate or missing columns, adds one problem and yields
    nothing."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(source)
        names = list(pf.schema_arrow.names)
    except Exception as exc:  # noqa: BLE001 - any pyarrow failure is bad input
        problems.add(f"not a readable Parquet file: {exc}", line=None)
        return
    _check_header(names, problems, columns, required)
    if problems:
        return
    i = 0
    try:
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            for row in batch.to_pylist():
                i += 1
                d = {k: v for k, v in row.items() if v is not None and not (v == "" and k not in required)}
                yield RawRecord(i, d, text_cells=True)
    except Exception as exc:  # noqa: BLE001 - a corrupt row group is bad input
        problems.add(f"not a readable Parquet file: {exc}", line=i + 1)


def read_records(
    data: bytes,
    file: str,
    fmt: str | None = None,
    *,
    formats: Collection[str] = FORMATS,
    csv_mode: str = "safe",
) -> tuple[str, list[RawRecord]]:
    """Parse a record file's bytes (format: :func:`detect_format`) into raw records, no field validation.

    Returns ``(format, records)``; ``records`` may be empty (the caller decides whether that is an error).
    Raises ``InputError`` for malformed JSON or CSV (see the module doc), a JSONL line that is not an
    object, a CSV header with duplicate columns, a CSV row with the wrong field count, or undecodable bytes.
    ``csv_mode``: how CSV cells were written (:data:`CSV_MODES`; see :func:`csv_cell_in`).
    """
    check_csv_mode(csv_mode)
    fmt = detect_format(file, data, fmt, formats)
    body = data[3:] if data.startswith(codecs.BOM_UTF8) else data
    problems = Problems(file)
    if fmt == "jsonl":
        records = list(iter_jsonl(body.split(b"\n"), problems))
    elif fmt == "csv":
        stream = io.StringIO(body.decode("utf-8", "surrogateescape"), newline="")
        records = list(iter_csv(stream, problems, csv_mode=csv_mode))
    else:
        records = list(iter_parquet(io.BytesIO(data), problems))
    problems.raise_if_any()
    return fmt, records


MAX_IMPORT_MB_DEFAULT = 256  # an import file larger than this is refused (``AUTOMONITOR_MAX_IMPORT_MB``)


def max_import_bytes() -> int:
    """The largest import file accepted, in bytes: ``$AUTOMONITOR_MAX_IMPORT_MB`` (a positive number of
    MiB) or :data:`MAX_IMPORT_MB_DEFAULT`. The importers stream (pair files, predictions); the limit
    bounds the size of one import's transaction; split larger files."""
    raw = os.environ.get("AUTOMONITOR_MAX_IMPORT_MB", "")
    try:
        mb = float(raw) if raw.strip() else MAX_IMPORT_MB_DEFAULT
    except ValueError:
        mb = MAX_IMPORT_MB_DEFAULT
    return int((mb if mb > 0 else MAX_IMPORT_MB_DEFAULT) * 2**20)


def read_file_bytes(path: str | os.PathLike[str]) -> bytes:
    """The file's bytes; ``InputError`` (``file`` set) when it does not exist, is not a readable file, or
    is larger than :func:`max_import_bytes` (checked before reading)."""
    p = check_import_file(path)
    try:
        return p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", file=str(path)) from exc


def check_import_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a ``Path`` when it is an existing regular file within :func:`max_import_bytes`; else
    ``InputError`` (``file`` set). Reads nothing (streaming importers open the file themselves)."""
    p = Path(path)
    if not p.exists():
        raise InputError("file not found", file=str(path))
    if not p.is_file():
        raise InputError("not a regular file", file=str(path))
    size, limit = p.stat().st_size, max_import_bytes()
    if size > limit:
        raise InputError(
            f"the file is {size / 2**20:.3g} MiB, over the import limit of {limit / 2**20:g} MiB "
            f"(AUTOMONITOR_MAX_IMPORT_MB); split it into smaller files",
            file=str(path),
        )
    return p


def json_objects(lines: Iterable[str], file: str) -> Iterator[tuple[int, JSONObject]]:
    """``(1-based line, object)`` for each non-blank line of ``lines`` (a JSONL file's lines), parsed with
    :func:`json.loads`; the strict readers of one-object-a-line files (source adapters, errata, readings,
    probe corpora) share it.

    Raises:
        InputError: a line that is not JSON ("invalid JSON: ...") or not an object ("expected a JSON
            object"), naming ``file`` and the line.
    """
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg}", file=file, line=n) from None
        if not isinstance(obj, dict):
            raise InputError("expected a JSON object", file=file, line=n)
        yield n, obj


_Model = TypeVar("_Model", bound=BaseModel)


def model_lines(path: Path, model: type[_Model], what: str) -> list[_Model]:
    """The non-blank lines of the JSONL file ``path`` (UTF-8), each validated as ``model``, in order (split
    on ``\\n`` only: a text field may hold U+2028 or U+0085, which JSON leaves unescaped).

    Raises:
        InputError: an unreadable file ("cannot read the ``what`` file"), or a line that is not JSON, not
            an object, or fails ``model``, naming the file, the 1-based line and the field.
    """
    where = str(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the {what} file: {exc}", file=where) from None
    out: list[_Model] = []
    for n, obj in json_objects(text.split("\n"), where):
        try:
            out.append(model.model_validate(obj))
        except ValidationError as exc:
            e = exc.errors()[0]
            field = ".".join(str(x) for x in e["loc"]) or None
            raise InputError(e["msg"], file=where, line=n, field=field) from None
    return out


def _not_blank(v: str) -> str:
    if not v.strip():
        raise ValueError("must not be blank")
    return v.strip()


def _real_date(v: str) -> str:
    dt.date.fromisoformat(v)  # ValueError on 2026-02-30
    return v


#: a text field of a reviewed JSONL file (:func:`model_lines`: errata, readings): stripped, never blank
LineText = Annotated[str, AfterValidator(_not_blank)]
#: a date ``YYYY-MM-DD`` of such a file that exists in the calendar
LineDate = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$"), AfterValidator(_real_date)]
