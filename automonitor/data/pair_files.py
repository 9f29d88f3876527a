"""The generic pair file of the CLI contract: read, validate, import into and export from the store.

A pair file holds one *sample* (one side of a pair) per record, as JSONL (one JSON object a line), CSV
(same columns, ``meta`` as a JSON string) or Parquet (same columns, ``meta`` as a JSON string):

=============  ========  =====================================================================
field          required  value
=============  ========  =====================================================================
``pair_id``    yes       str, shared by the two sides of a pair (at most 128 characters)
``category``   yes       ``safety_permission`` | ``sycophancy_bias`` | ``specification_gaming``
``task``       yes       ``qa`` | ``code`` | ``reasoning``
``request``    yes       str, not blank
``response``   yes       str, not blank
``label``      yes       ``misbehavior`` | ``benign``
``sample_id``  no        str (at most 64 characters); assigned with ``hashing.make_sample_id`` when absent
``source``     no        str (at most 64 characters); default ``"import"``
``meta``       no        JSON object (default ``{}``): at most 16 levels deep, 64 KiB as JSON, finite numbers
``label_source`` no      label provenance (``vocab.LABEL_SOURCES``); default ``"user"``
``spans``      no        gold spans of a misbehavior sample: ``[{"start", "end", "provenance", "note"?,
                         "step"?}]`` (character offsets into ``response``; CSV/Parquet: a JSON text)
=============  ========  =====================================================================

Spans are checked like every field (:func:`check_spans`): integers with ``0 <= start < end <=
len(response)``, not only whitespace, provenance in ``vocab.SPAN_PROVENANCES``, on a misbehavior sample
only, no two spans of one provenance (one annotator) overlapping (whatever their ``step``), and a
``step`` below the number of steps of the sample's trajectory where that is known; an error names the file, line and
field (``spans[1].end``). Exports write ``spans`` only for samples that have gold spans.

A valid pair has exactly one ``misbehavior`` and one ``benign`` sample, the same category and task, and
the same request (compared after ``hashing.norm_text``). Text is stored exactly as given, so export gives
back the very same strings.

Import is all or nothing: every record is validated (fields by :class:`automonitor.data.row_models.PairRow`, then
the pairs, then against the store) before anything is written, and the write is one transaction.
The file is streamed twice, never held whole: once to validate, keeping only a :class:`SampleKey` (ids
and hashes) a sample, once to write, :data:`WRITE_CHUNK` samples at a time; a file rewritten in between
is refused and nothing is written. Files are limited to ``AUTOMONITOR_MAX_IMPORT_MB`` (256 MiB). Any problem raises :class:`automonitor.errors.InputError`
located at the first problem (``file``, ``line``, ``field``); its message also lists up to
``max_errors`` problems, and its ``problems`` attribute holds them all as ``InputError`` objects.
Line numbers: JSONL = physical line; CSV = record number counting the header as line 1 (the row number
a spreadsheet shows); Parquet = 1-based row number.

Re-importing the same file inserts nothing (the sample ids are the same) and is not an error.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field as dc_field
from itertools import islice
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterable, Iterator, Protocol, TypeVar

from automonitor.data import records
from automonitor import vocab
from automonitor.errors import InputError
from automonitor.hashing import content_hash, make_sample_id, norm_text, sha256_text
from store import session_scope
from store.queries.samples import edition_has_rows
from automonitor.data.records import (
    Problems,
    RawRecord,
    check_csv_mode,
    check_import_file,
    csv_cell_out,
    iter_csv,
    iter_jsonl,
    iter_parquet,
)
from automonitor.data.row_models import PAIR_FIELDS, PAIR_MAX_LEN, PAIR_REQUIRED, PairRow, validate_one
from automonitor.data.spans import GoldSpan, SpanError, validate_spans
from automonitor.data.trajectory import step_ranges, steps_from_meta, steps_mismatch

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine
    from sqlmodel import Session

FIELDS: tuple[str, ...] = PAIR_FIELDS
REQUIRED: tuple[str, ...] = PAIR_REQUIRED
FORMATS: tuple[str, ...] = records.FORMATS
DEFAULT_SOURCE = "import"
MAX_LEN: dict[str, int] = PAIR_MAX_LEN
DEFAULT_LABEL_SOURCE = "user"
EXPORT_SPLITS: tuple[str, ...] = ("test", "train", "all")
EXPORT_STATUSES: tuple[str, ...] = ("gold", "candidate", "rejected", "all")


@dataclass
class PairFileSample:
    """One validated sample (one side of a pair) of a pair file (``sample_id`` always set, text exactly as in
    the file). Not :class:`automonitor.data.sources.SourcePair`, which is a whole pair read from a source."""

    line: int
    sample_id: str
    pair_id: str
    category: str
    task: str
    request: str
    response: str
    label: str
    source: str
    meta: dict[str, Any] = dc_field(default_factory=dict)
    label_source: str = "user"
    spans: list[dict[str, Any]] | None = None

    def as_row(self) -> dict[str, Any]:
        """The record as a pair-file row (the contract's columns, in ``FIELDS`` order; ``spans`` only
        when the record has some)."""
        return {k: getattr(self, k) for k in FIELDS if k != "spans" or self.spans}

    def key(self) -> SampleKey:
        """The record's :class:`SampleKey` (ids, vocabulary and content hashes; no text)."""
        return SampleKey(
            line=self.line,
            sample_id=self.sample_id,
            pair_id=self.pair_id,
            category=sys.intern(self.category),
            task=sys.intern(self.task),
            label=sys.intern(self.label),
            request_digest=bytes.fromhex(sha256_text(self.request)),
            response_digest=bytes.fromhex(sha256_text(self.response)),
        )


@dataclass(frozen=True, slots=True)
class SampleKey:
    """What the file-level and store checks need of one validated sample: its line, ids, vocabulary and
    the SHA-256 digests (32 bytes, ``hashing.sha256_text``) of its request and response, no text. An
    import keeps one key per sample (about 400 bytes), not the samples, so its memory stays small."""

    line: int
    sample_id: str
    pair_id: str
    category: str
    task: str
    label: str
    request_digest: bytes
    response_digest: bytes

    @property
    def request_hash(self) -> str:
        """The request's hash as the store keeps it (hex)."""
        return self.request_digest.hex()

    @property
    def response_hash(self) -> str:
        """The response's hash as the store keeps it (hex)."""
        return self.response_digest.hex()


class _Located(Protocol):
    @property
    def line(self) -> int: ...

    @property
    def pair_id(self) -> str: ...


_L = TypeVar("_L", bound=_Located)


@dataclass(frozen=True)
class PairSource:
    """Where a pair file's bytes are read from: a ``path`` on disk (streamed) or ``data`` in memory (an
    upload); ``file`` names it in errors. An import reads it twice: once to validate, once to write."""

    file: str
    path: Path | None = None
    data: bytes | None = None

    def open(self) -> IO[bytes]:
        """A binary file object over the bytes; ``InputError`` when the file cannot be opened."""
        if self.path is None:
            return io.BytesIO(self.data or b"")
        try:
            return self.path.open("rb")
        except OSError as exc:
            raise InputError(f"cannot read the file: {exc.strerror or exc}", file=self.file) from exc

    def head(self, n: int = 65_536) -> bytes:
        """The first ``n`` bytes (format sniffing, the empty-file check)."""
        with self.open() as fh:
            return fh.read(n)

    def size(self) -> int:
        """The size in bytes."""
        return len(self.data or b"") if self.path is None else self.path.stat().st_size

    def sha256(self) -> str:
        """Hex SHA-256 of the bytes, read in 1 MiB blocks (the same file is read again at write time and
        must not have changed)."""
        h = hashlib.sha256()
        try:
            with self.open() as fh:
                while block := fh.read(2**20):
                    h.update(block)
        except OSError as exc:
            raise InputError(f"cannot read the file: {exc.strerror or exc}", file=self.file) from exc
        return h.hexdigest()


def iter_raw(source: PairSource, fmt: str, problems: Problems, *, csv_mode: str = "safe") -> Iterator[RawRecord]:
    """The raw records of a pair file, one at a time (:mod:`automonitor.data.records`: JSONL lines, CSV
    rows, Parquet row batches), so the file is never held whole. Read problems (malformed JSON or CSV, a
    bad header, an unreadable Parquet file) go to ``problems``."""
    with source.open() as fh:
        if fmt == "jsonl":
            yield from iter_jsonl(fh, problems, undecodable="keep")
        elif fmt == "csv":
            text = io.TextIOWrapper(fh, encoding="utf-8-sig", errors="surrogateescape", newline="")
            yield from iter_csv(
                text, problems, columns=FIELDS, required=REQUIRED, undecodable="keep", csv_mode=csv_mode
            )
        else:
            yield from iter_parquet(fh, problems, columns=FIELDS, required=REQUIRED)


# --------------------------------------------------------------------------------------------- reading


def detect_format(name: str, data: bytes | None = None, fmt: str | None = None) -> str:
    """The pair-file format (``jsonl`` | ``csv`` | ``parquet``): :func:`automonitor.data.records.detect_format`.

    Raises ``InputError`` (field ``--format``) for an unknown ``fmt``, or when nothing decides it.
    """
    return records.detect_format(name, data, fmt, FORMATS)


def read_records(
    data: bytes, file: str, fmt: str | None = None, *, max_errors: int = 10, csv_mode: str = "safe"
) -> tuple[str, list[RawRecord]]:
    """Parse a pair file's bytes into raw records (no field validation yet; :mod:`automonitor.data.records`).

    Returns ``(format, records)``. Raises ``InputError`` for an empty file, malformed JSON or CSV,
    a JSONL line that is not an object, bytes that are not UTF-8 where no field can be named, a CSV/
    Parquet header with missing, unknown or duplicate columns, or a CSV row with the wrong field count.
    """
    fmt = detect_format(file, data, fmt)
    body = data[3:] if data.startswith(codecs.BOM_UTF8) else data
    if fmt != "parquet" and not body.strip():
        raise InputError("the file is empty: no samples", file=file, line=1)
    fmt, raw = records.read_records(
        data,
        file,
        fmt,
        columns=FIELDS,
        required=REQUIRED,
        undecodable="keep",
        max_errors=max_errors,
        csv_mode=csv_mode,
    )
    if not raw:
        raise InputError("the file has no samples", file=file, line=1 if fmt != "csv" else 2)
    return fmt, raw


# ------------------------------------------------------------------------------------------ validation


def sample_record(line: int, row: PairRow, default_source: str = DEFAULT_SOURCE) -> PairFileSample:
    """The :class:`PairFileSample` of a validated row at ``line``: ``sample_id`` assigned with
    ``hashing.make_sample_id`` when absent, ``source`` and ``label_source`` defaulted."""
    return PairFileSample(
        line=line,
        sample_id=row.sample_id or make_sample_id(row.pair_id, row.label, row.request, row.response),
        pair_id=row.pair_id,
        category=row.category,
        task=row.task,
        request=row.request,
        response=row.response,
        label=row.label,
        source=row.source or default_source,
        meta=row.meta,
        label_source=row.label_source or DEFAULT_LABEL_SOURCE,
        spans=row.spans,
    )


def check_unique_sample_ids(records: Iterable[SampleKey], problems: Problems) -> None:
    """Add a problem (field ``sample_id``) for every record whose sample id an earlier record has: a
    repeated row (same pair, label and content) or a reused id."""
    seen: dict[str, SampleKey] = {}
    for r in records:
        first = seen.setdefault(r.sample_id, r)
        if first is r:
            continue
        same_content = (first.pair_id, first.label, first.request_digest, first.response_digest) == (
            r.pair_id,
            r.label,
            r.request_digest,
            r.response_digest,
        )
        if same_content:
            message = f"duplicate sample: same sample_id '{r.sample_id}' and content as line {first.line}"
        else:
            message = f"duplicate sample_id '{r.sample_id}' (first used at line {first.line})"
        problems.add(message, line=r.line, field="sample_id")


def check_pair_sides(records: Iterable[SampleKey], problems: Problems) -> None:
    """Add a problem for every ``pair_id`` that does not have exactly two samples, one ``misbehavior`` and
    one ``benign``, with the same category, task and request (compared by ``sha256_text``, i.e. after
    ``norm_text``); located at
    the side that breaks the rule (field ``pair_id``, ``label``, ``category``, ``task`` or ``request``)."""
    rule = "a pair needs exactly one misbehavior and one benign sample"
    for pair_id, sides in group_pairs(records).items():
        if len(sides) == 1:
            problems.add(
                f"pair '{pair_id}' has only one sample (a {sides[0].label} side); {rule}",
                line=sides[0].line,
                field="pair_id",
            )
            continue
        if len(sides) > 2:
            lines = ", ".join(str(s.line) for s in sides)
            problems.add(
                f"pair '{pair_id}' has {len(sides)} samples (lines {lines}); {rule}",
                line=sides[2].line,
                field="pair_id",
            )
            continue
        a, b = sides
        if a.label == b.label:
            message, field = (
                f"pair '{pair_id}' has two '{a.label}' samples (lines {a.line} and {b.line}); {rule}",
                "label",
            )
        elif a.category != b.category:
            message, field = (
                f"category '{b.category}' differs from '{a.category}' on the other side of pair "
                f"'{pair_id}' (line {a.line})",
                "category",
            )
        elif a.task != b.task:
            message, field = (
                f"task '{b.task}' differs from '{a.task}' on the other side of pair '{pair_id}' (line {a.line})",
                "task",
            )
        elif a.request_digest != b.request_digest:
            message, field = (
                f"request differs from the other side of pair '{pair_id}' (line {a.line}); both "
                f"sides must answer the same request",
                "request",
            )
        else:
            continue
        problems.add(message, line=b.line, field=field)


def check_spans(records: Iterable[PairFileSample], problems: Problems) -> None:
    """Gold spans against their text (:func:`automonitor.data.spans.validate_spans`): only on misbehavior
    samples, inside ``response``, not blank, no overlap within one provenance (whatever the spans'
    ``step``), and a ``step`` below the number of steps of the sample's trajectory (the steps of
    ``response`` read as a serialised trajectory, else ``meta["steps"]``; unchecked when neither).
    Each fault is added to ``problems`` at the record's line with field ``spans[i].start|end|step``
    (or ``spans``)."""
    for r in records:
        if not r.spans:
            continue
        if r.label != "misbehavior":
            problems.add("gold spans are only allowed on a misbehavior sample", line=r.line, field="spans")
            continue
        try:
            n_steps = len(step_ranges(r.response)) or len(steps_from_meta(r.meta) or []) or None
            spans = [GoldSpan.model_validate(sp) for sp in r.spans]
            if n_steps is None:
                stepped = next((i for i, sp in enumerate(spans) if sp.step is not None), None)
                if stepped is not None:
                    raise SpanError(
                        f"span {stepped}: a step is given but the response is no trajectory (no steps in "
                        "response or meta.steps)",
                        stepped,
                        "step",
                    )
            validate_spans(r.response, spans, n_steps)
        except SpanError as exc:
            problems.add(str(exc), line=r.line, field=f"spans[{exc.index}].{exc.field}")
        except ValueError as exc:
            problems.add(f"bad span: {exc}", line=r.line, field="spans")


def check_steps(record: PairFileSample, problems: Problems) -> None:
    """A record's typed trajectory (``meta.steps``) against its ``response``: the steps must be a
    list of :class:`automonitor.data.trajectory.Step` objects and describe exactly the text the monitor
    judges (:func:`automonitor.data.trajectory.steps_mismatch`), so annotators and the drill-down, which
    show the steps, see what the monitor saw. A fault is added to ``problems`` at the record's line with
    field ``meta.steps``; a record without ``meta.steps`` (or with an empty list) passes."""
    raw = (record.meta or {}).get("steps")
    if raw is None or raw == []:
        return
    steps = steps_from_meta(record.meta)
    if steps is None:
        problems.add(
            "meta.steps must be a list of step objects (role, thought, action, observation, content)",
            line=record.line,
            field="meta.steps",
        )
        return
    why = steps_mismatch(record.response, steps, record.request)
    if why is not None:
        problems.add(f"meta.steps do not match response: {why}", line=record.line, field="meta.steps")


def validate_records(
    records: Iterable[RawRecord], file: str, *, default_source: str = DEFAULT_SOURCE, max_errors: int = 10
) -> list[PairFileSample]:
    """Validate raw records field by field (:class:`automonitor.data.row_models.PairRow`), then as pairs; returns
    them in file order.

    Field checks: unknown fields, required fields present, strings (``meta`` a JSON object), UTF-8
    text without NUL, vocabulary of category/task/label, non-blank text, id lengths.
    File checks (:func:`check_unique_sample_ids`, then :func:`check_pair_sides`): unique sample ids (an
    assigned id repeats when a row is duplicated), and for every ``pair_id`` exactly two samples, one
    ``misbehavior`` and one ``benign``, with the same category, task and request (``norm_text``).
    Raises ``InputError`` at the first problem of the first stage that has any (see module doc).
    """
    problems, span_problems = Problems(file, max_errors), Problems(file, max_errors)
    out = list(checked_records(records, problems, span_problems, default_source=default_source))
    check_file(out, problems, span_problems)
    return out


def checked_records(
    records: Iterable[RawRecord], problems: Problems, span_problems: Problems, *, default_source: str = DEFAULT_SOURCE
) -> Iterator[PairFileSample]:
    """The valid records of ``records`` as :class:`PairFileSample`, one at a time: field problems go to
    ``problems``, the problems of a valid record's spans (:func:`check_spans`) to ``span_problems``."""
    for record in records:
        row = validate_one(PairRow, record, problems)
        if row is None:
            continue
        rec = sample_record(record.line, row, default_source)
        check_steps(rec, problems)
        check_spans([rec], span_problems)
        yield rec


def check_file(records: list[SampleKey] | list[PairFileSample], problems: Problems, span_problems: Problems) -> None:
    """Raise ``InputError`` at the first stage with problems: the fields (``problems`` as filled by
    :func:`checked_records`), unique sample ids, the pairs' sides, then the spans (``span_problems``)."""
    problems.raise_if_any()
    keys = [r.key() if isinstance(r, PairFileSample) else r for r in records]
    check_unique_sample_ids(keys, problems)
    problems.raise_if_any()
    check_pair_sides(keys, problems)
    problems.raise_if_any()
    span_problems.raise_if_any()


def group_pairs(records: Iterable[_L]) -> dict[str, list[_L]]:
    """Records (or keys) grouped by ``pair_id`` (groups and members in file order)."""
    groups: dict[str, list[_L]] = {}
    for r in records:
        groups.setdefault(r.pair_id, []).append(r)
    return groups


def parse_pairs(
    data: bytes,
    file: str,
    fmt: str | None = None,
    *,
    default_source: str = DEFAULT_SOURCE,
    max_errors: int = 10,
    csv_mode: str = "safe",
) -> tuple[str, list[PairFileSample]]:
    """Read and validate a whole pair file held in memory (e.g. an upload). Returns
    ``(format, records)``; raises ``InputError`` (see ``read_records`` and ``validate_records``).
    ``csv_mode``: how a CSV file's cells were written (``safe``, the export default, or ``exact``)."""
    fmt, raw = read_records(data, file, fmt, max_errors=max_errors, csv_mode=csv_mode)
    return fmt, validate_records(raw, file, default_source=default_source, max_errors=max_errors)


# --------------------------------------------------------------------------------------------- the store


def _content_diffs(stored: Any, record: SampleKey) -> list[str]:
    """The fields in which ``record`` differs from the stored sample row ``stored`` (request and response
    compared by hash), in the order pair_id, category, task, label, request, response."""
    return [
        name
        for name, have, want in (
            ("pair_id", stored.pair_id, record.pair_id),
            ("category", stored.category, record.category),
            ("task", stored.task, record.task),
            ("label", stored.label, record.label),
            ("request", stored.request_hash, record.request_hash),
            ("response", stored.response_hash, record.response_hash),
        )
        if have != want
    ]


def check_store(
    session: Session, records: list[SampleKey], file: str, *, max_errors: int = 10
) -> dict[str, tuple[str, str | None]]:
    """Check ``records`` against the store; returns ``{sample_id: (status, split)}`` for the samples
    already stored with the same content (an import skips them).

    A ``sample_id`` already stored with a different pair, category, task, label, request or response,
    or a ``pair_id`` already stored with other sample ids, raises ``InputError`` (field ``sample_id`` or
    ``pair_id``). Reads only.
    """
    from store.queries.pair_files import stored_pair_members, stored_samples

    problems = Problems(file, max_errors)
    stored = stored_samples(session, [r.sample_id for r in records])
    same: dict[str, tuple[str, str | None]] = {}
    for r in records:
        s = stored.get(r.sample_id)
        if s is None:
            continue
        diffs = _content_diffs(s, r)
        if diffs:
            problems.add(
                f"sample_id '{r.sample_id}' is already in the store with different content "
                f"(differs in: {', '.join(diffs)})",
                line=r.line,
                field="sample_id",
            )
        else:
            same[r.sample_id] = (s.status, s.split)
    groups = group_pairs(records)
    stored_pairs = stored_pair_members(session, groups)
    for pid, sides in groups.items():
        have = stored_pairs.get(pid)
        if have is None:
            continue
        want = {s.sample_id for s in sides}
        if have != want:
            problems.add(
                f"pair_id '{pid}' is already in the store with different samples "
                f"(stored: {', '.join(sorted(have))}; this file: {', '.join(sorted(want))})",
                line=sides[0].line,
                field="pair_id",
            )
    problems.raise_if_any()
    return same


def _pair_key(request: bytes, responses: Iterable[bytes]) -> bytes:
    """A pair's identity for the duplicate check: its request digest, then its responses' digests sorted
    (labels not compared); one small bytes object a pair."""
    return request + b"".join(sorted(responses))


def find_duplicates(session: Session, records: list[SampleKey]) -> dict[str, str]:
    """Pairs of ``records`` that repeat the request and both responses (after ``norm_text``; labels not
    compared) of a pair stored under ANOTHER ``pair_id``, or of an earlier pair of the same file:
    ``{pair_id: duplicated pair_id}`` in file order. Reads only."""
    from store.queries.pair_files import pairs_by_request_hash

    groups = group_pairs(records)
    req_hashes = list({sides[0].request_hash for sides in groups.values()})
    known: dict[bytes, str] = {}
    for pid, sides in pairs_by_request_hash(session, req_hashes).items():
        if len(sides) == 2:
            key = _pair_key(bytes.fromhex(sides[0][0]), (bytes.fromhex(rs) for _, rs in sides))
            known.setdefault(key, pid)
    del req_hashes
    out: dict[str, str] = {}
    for pid, pair in groups.items():
        key = _pair_key(pair[0].request_digest, (s.response_digest for s in pair))
        other = known.get(key)
        if other is not None and other != pid:
            out[pid] = other
        else:
            known.setdefault(key, pid)
    return out


def sample_rows(
    records: list[PairFileSample], *, status: str, split: str | None, source_file: str | None
) -> list[dict[str, Any]]:
    """``Sample`` column dicts for ``records`` (hashes computed, ``source_record`` = line number)."""
    return [
        dict(
            id=r.sample_id,
            pair_id=r.pair_id,
            category=r.category,
            task=r.task,
            label=r.label,
            request=r.request,
            response=r.response,
            source=r.source,
            source_file=(source_file[-512:] if source_file else None),
            source_record=str(r.line),
            split=split,
            status=status,
            request_hash=sha256_text(r.request),
            response_hash=sha256_text(r.response),
            content_hash=content_hash(r.request, r.response, r.label),
            meta=r.meta,
            label_source=r.label_source,
        )
        for r in records
    ]


@dataclass
class ImportPlan:
    """A validated pair file ready to be written (``prepare_import``), independent of any store.

    It holds one :class:`SampleKey` per sample (``keys``, file order), not the samples: the write reads
    ``source`` again (:meth:`records`), so an import's memory does not grow with the text it carries.
    ``sha256``: the file's hash when it was validated (a file on disk must not change before the write)."""

    file: str
    format: str
    keys: list[SampleKey]
    status: str
    split: str | None
    source: PairSource
    max_errors: int = 10
    strict: bool = False
    default_source: str = DEFAULT_SOURCE
    csv_mode: str = "safe"
    sha256: str = ""

    def changed(self) -> InputError:
        """The error of a file that changed between validation and write (nothing is written)."""
        return InputError(
            "the file changed while it was being imported; nothing was imported, try again", file=self.file
        )

    def records(self) -> Iterator[PairFileSample]:
        """The validated samples, read again from ``source`` one at a time, in file order. Raises
        :meth:`changed` when what is read no longer matches ``keys`` (the file was rewritten meanwhile)."""
        problems, span_problems = Problems(self.file, self.max_errors), Problems(self.file, self.max_errors)
        raw = iter_raw(self.source, self.format, problems, csv_mode=self.csv_mode)
        n = 0
        for rec in checked_records(raw, problems, span_problems, default_source=self.default_source):
            if n >= len(self.keys) or rec.key() != self.keys[n]:
                raise self.changed()
            n += 1
            yield rec
        if problems or span_problems or n != len(self.keys):
            raise self.changed()

    def check_unchanged(self) -> None:
        """Raise :meth:`changed` when a file on disk no longer has the hash it had when validated."""
        if self.source.path is not None and self.source.sha256() != self.sha256:
            raise self.changed()


def prepare_import(
    path: str | os.PathLike[str] | None = None,
    *,
    data: bytes | None = None,
    name: str | None = None,
    fmt: str | None = None,
    as_candidates: bool = False,
    split: str | None = None,
    default_source: str = DEFAULT_SOURCE,
    max_errors: int = 10,
    strict: bool = False,
    csv_mode: str = "safe",
) -> ImportPlan:
    """Read and validate a pair file (``path``, or ``data`` bytes named ``name``) without a store.

    Gold samples get ``status='gold'`` and ``split`` (``test`` by default, or ``train``);
    ``as_candidates=True`` gives ``status='candidate'``, ``split=None``. Raises ``InputError`` for any
    bad input (see module doc) or a bad ``split``/``as_candidates``/``default_source``. ``strict``: a
    pair that duplicates another (``find_duplicates``) is an error at apply time instead of skipped.
    ``csv_mode``: how a CSV file's cells were written (``safe``, the export default, or ``exact``).
    """
    if path is not None:
        file = str(path)
        source = PairSource(file, path=check_import_file(path))
    else:
        if data is None:
            raise InputError("no input: give a path or data")
        file = name or "<upload>"
        source = PairSource(file, data=data)
    if as_candidates:
        if split is not None:
            raise InputError("candidates have no split: do not combine --split with --as-candidates", field="--split")
        status = "candidate"
    else:
        split = split or "test"
        if split not in vocab.SPLITS:
            raise InputError(f"unknown split '{split}' (use one of: {', '.join(vocab.SPLITS)})", field="--split")
        status = "gold"
    if not default_source or not norm_text(default_source) or len(default_source) > MAX_LEN["source"]:
        raise InputError(f"the default source must be 1-{MAX_LEN['source']} characters", field="--source")
    check_csv_mode(csv_mode)
    fmt, keys, sha = scan_pairs(source, fmt, default_source=default_source, max_errors=max_errors, csv_mode=csv_mode)
    return ImportPlan(
        file=file,
        format=fmt,
        keys=keys,
        status=status,
        split=split,
        source=source,
        max_errors=max_errors,
        strict=strict,
        default_source=default_source,
        csv_mode=csv_mode,
        sha256=sha,
    )


def scan_pairs(
    source: PairSource,
    fmt: str | None = None,
    *,
    default_source: str = DEFAULT_SOURCE,
    max_errors: int = 10,
    csv_mode: str = "safe",
) -> tuple[str, list[SampleKey], str]:
    """Validate a pair file streaming, as :func:`parse_pairs` does a file in memory, keeping one
    :class:`SampleKey` a sample. Returns ``(format, keys, sha256 of the bytes)``. Raises ``InputError``
    as :func:`parse_pairs` does (read problems first, then fields, ids, pairs, spans)."""
    head = source.head()
    fmt = detect_format(source.file, head, fmt)
    if fmt != "parquet" and not head.removeprefix(codecs.BOM_UTF8).strip() and source.size() <= len(head):
        raise InputError("the file is empty: no samples", file=source.file, line=1)
    sha = source.sha256() if source.path is not None else ""
    read_problems = Problems(source.file, max_errors)
    problems, span_problems = Problems(source.file, max_errors), Problems(source.file, max_errors)
    n_raw = 0

    def counted(raw: Iterable[RawRecord]) -> Iterator[RawRecord]:
        nonlocal n_raw
        for r in raw:
            n_raw += 1
            yield r

    raw = counted(iter_raw(source, fmt, read_problems, csv_mode=csv_mode))
    keys = [rec.key() for rec in checked_records(raw, problems, span_problems, default_source=default_source)]
    read_problems.raise_if_any()
    if not n_raw:
        raise InputError("the file has no samples", file=source.file, line=1 if fmt != "csv" else 2)
    check_file(keys, problems, span_problems)
    return fmt, keys, sha


_WRITE_ATTEMPTS = 6


def _is_lock_conflict(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(t in text for t in ("locked", "busy", "deadlock", "serializ", "could not obtain"))


@dataclass
class _Written:
    """What one import transaction did: ``stored`` = ``check_store``'s samples already stored
    (``{sample_id: (status, split)}``), ``dups`` = skipped duplicate pairs, ``inserted`` = new samples."""

    stored: dict[str, tuple[str, str | None]]
    dups: dict[str, str]
    inserted: int


def _strict_duplicates_problem(plan: ImportPlan, dups: dict[str, str]) -> None:
    """Raise ``InputError`` (field ``pair_id``, at each duplicate's first line) for the duplicate pairs
    ``dups`` (``{pair_id: duplicated pair_id}``) of a ``--strict`` import."""
    problems = Problems(plan.file, plan.max_errors)
    groups = group_pairs(plan.keys)
    for pid, other in dups.items():
        problems.add(
            f"pair '{pid}' repeats the request and responses of pair '{other}' "
            f"(a duplicate; without --strict it is skipped)",
            line=groups[pid][0].line,
            field="pair_id",
        )
    problems.raise_if_any()


WRITE_CHUNK = 500  # samples read, converted and inserted at a time by an import's write


def _write_once(engine: Engine, plan: ImportPlan) -> _Written:
    """One write transaction: check the store, find duplicates, then read the file again and insert the
    new samples :data:`WRITE_CHUNK` at a time. Raises ``InputError`` (conflict with the store, a duplicate
    under ``strict``, or a file that changed since it was validated) and the database's
    ``IntegrityError``/``OperationalError`` when another writer got in between (the caller retries)."""
    from store import session_scope
    from store.queries.locks import begin_serialised_write
    from store.queries.samples import insert_samples

    source_file = Path(plan.file).name
    with session_scope(engine) as session:
        # imports one at a time from the duplicate check to the commit: two files with the same pair
        # under different pair ids, imported at once, must not both pass the check (no constraint can
        # say "no two pairs with the same request and responses")
        begin_serialised_write(session, "pair-import")
        stored = check_store(session, plan.keys, plan.file, max_errors=plan.max_errors)
        dups = find_duplicates(session, plan.keys)
        if dups and plan.strict:
            _strict_duplicates_problem(plan, dups)
        inserted = 0
        records = plan.records()
        while batch := list(islice(records, WRITE_CHUNK)):
            chunk = [r for r in batch if r.pair_id not in dups]
            inserted += insert_samples(
                session, sample_rows(chunk, status=plan.status, split=plan.split, source_file=source_file)
            )
            _write_spans(session, [r for r in chunk if r.spans])
        plan.check_unchanged()  # inside the transaction: a rewritten file rolls everything back
    return _Written(stored=stored, dups=dups, inserted=inserted)


def _write_spans(session: Session, records: list[PairFileSample]) -> int:
    """Insert the file's gold spans that the store does not hold yet (key: sample, provenance, start,
    end); a span already stored is skipped, so re-importing the same file adds nothing."""
    from store.queries import spans as span_queries

    have = span_queries.spans_by_sample(session, [r.sample_id for r in records])
    add = []
    for r in records:
        keys = {(s["provenance"], s["start"], s["end"]) for s in have.get(r.sample_id, [])}
        for sp in r.spans or []:
            if (sp["provenance"], sp["start"], sp["end"]) not in keys:
                add.append((r.sample_id, sp))
    return span_queries.insert_spans(session, add)


def _write_with_retries(engine: Engine, plan: ImportPlan) -> _Written:
    """:func:`_write_once`, retried up to ``_WRITE_ATTEMPTS`` times (with backoff) when another writer
    inserted some of these samples or pairs between the check and the insert (the database's unique keys:
    sample id, (pair_id, label)), or SQLite refused to upgrade a stale read snapshot. Each attempt checks
    again from scratch: the same content is then skipped, a different content is a conflict
    (``InputError``, exit 2). Raises ``InputError`` when every attempt conflicted."""
    import sqlalchemy as sa

    for attempt in range(1, _WRITE_ATTEMPTS + 1):
        try:
            return _write_once(engine, plan)
        except (sa.exc.IntegrityError, sa.exc.OperationalError) as exc:
            if isinstance(exc, sa.exc.OperationalError) and not _is_lock_conflict(exc):
                raise
            if attempt == _WRITE_ATTEMPTS:
                raise InputError(
                    "the import kept conflicting with samples written at the same time by "
                    "another writer; nothing was imported, try again",
                    file=plan.file,
                ) from None
            time.sleep(min(0.05 * 2**attempt, 1.0))
    raise AssertionError("unreachable: the last attempt returns or raises")


def _import_warnings(plan: ImportPlan, written: _Written) -> list[str]:
    """The warnings of an import: duplicate pairs skipped, samples stored with another status or split."""
    warnings = []
    dups = written.dups
    if dups:
        shown = ", ".join(f"'{p}' (= '{o}')" for p, o in list(dups.items())[:5])
        warnings.append(
            f"{len(dups)} duplicate pair(s) skipped: same request and responses as another "
            f"pair: {shown}{' ...' if len(dups) > 5 else ''}"
        )
    other = sum(1 for v in written.stored.values() if v != (plan.status, plan.split))
    if other:
        warnings.append(
            f"{other} sample(s) were already in the store with another status or split and were left as they are"
        )
    return warnings


def apply_import(engine: Engine, plan: ImportPlan) -> dict[str, Any]:
    """Write a prepared import in one transaction, after checking it against the store (``check_store``).

    Samples already stored with the same content are skipped and keep their stored status and split.
    Returns ``{"file", "format", "rows", "pairs", "inserted", "skipped_existing", "duplicates_skipped",
    "duplicate_pairs" ({pair_id: duplicated pair_id}), "status", "split", "warnings"}`` (``warnings``:
    list of str, e.g. skipped duplicates, samples stored with another status or split).
    Raises ``InputError`` on a conflict with the store; then nothing is written. Concurrent imports are
    safe: the database holds at most one sample per ``(pair_id, label)``; when another writer commits
    the same samples first the transaction is checked again (same content: skipped; different content:
    ``InputError``), never a raw ``IntegrityError``.
    """
    written = _write_with_retries(engine, plan)
    warnings = _import_warnings(plan, written)
    if plan.status == "gold" and plan.split == "test" and written.inserted and _store_has_editions(engine):
        warnings.append(
            f"the {written.inserted} imported test sample(s) join no edition: this store's editions "
            "(paper, verified, ...) come from `automonitor build`, so `run` and `report` (edition paper by "
            "default) do not see them; import them into a store without a build to measure them alone"
        )
    return {
        "file": plan.file,
        "format": plan.format,
        "rows": len(plan.keys),
        "pairs": len(group_pairs(plan.keys)),
        "inserted": written.inserted,
        "skipped_existing": len(plan.keys) - written.inserted - 2 * len(written.dups),
        "duplicates_skipped": len(written.dups),
        "duplicate_pairs": written.dups,
        "status": plan.status,
        "split": plan.split,
        "warnings": warnings,
    }


def _store_has_editions(engine: Engine) -> bool:
    """Whether the store holds built editions (any ``edition_sample`` row)."""
    with session_scope(engine) as session:
        return any(edition_has_rows(session, e) for e in vocab.EDITIONS)


def import_pairs(engine: Engine, path: str | os.PathLike[str] | None = None, **kwargs: Any) -> dict[str, Any]:
    """``prepare_import(path, **kwargs)`` then ``apply_import(engine, plan)``: import a pair file into the
    store, all or nothing. Returns the ``apply_import`` summary; raises ``InputError`` on bad input."""
    return apply_import(engine, prepare_import(path, **kwargs))


# -------------------------------------------------------------------------------------------- exporting


def _record_key(s) -> tuple[str, str, int, int, str, str]:
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
) -> list[dict[str, Any]]:
    """Stored samples as pair-file rows (``FIELDS`` keys), in insertion order (then file line order).

    ``status``: ``gold`` | ``candidate`` | ``rejected`` | ``all``. ``split``: ``test`` | ``train`` |
    ``all``; it filters samples that have a split (gold ones); candidates have none and are selected by
    ``status`` alone. ``edition`` (``paper``|``verified``, split ``test``): only that edition's test
    samples. ``label_source``: only samples with that provenance. Raises ``InputError`` for an unknown
    value.
    """
    from store.queries.pair_files import export_samples

    if split not in EXPORT_SPLITS:
        raise InputError(f"unknown split '{split}' (use one of: {', '.join(EXPORT_SPLITS)})", field="--split")
    if status not in EXPORT_STATUSES:
        raise InputError(f"unknown status '{status}' (use one of: {', '.join(EXPORT_STATUSES)})", field="--status")
    if label_source is not None and label_source not in vocab.LABEL_SOURCES:
        raise InputError(
            f"unknown label source '{label_source}' (use one of: {', '.join(vocab.LABEL_SOURCES)})",
            field="--label-source",
        )
    from store.queries.spans import spans_by_sample

    found = export_samples(session, split=split, status=status, edition=edition, label_source=label_source)
    samples = sorted(found, key=_record_key)
    spans = spans_by_sample(session, [s.id for s in samples if s.label == "misbehavior"])
    rows: list[dict[str, Any]] = [
        {
            "sample_id": s.id,
            "pair_id": s.pair_id,
            "category": s.category,
            "task": s.task,
            "request": s.request,
            "response": s.response,
            "label": s.label,
            "source": s.source,
            "meta": dict(s.meta or {}),
            "label_source": s.label_source,
        }
        for s in samples
    ]
    for r in rows:
        got = spans.get(str(r["sample_id"]))
        if got:
            r["spans"] = [{k: v for k, v in sp.items() if v is not None} for sp in got]
    return rows


def write_pairs(
    rows: list[dict[str, Any]], path: str | os.PathLike[str], fmt: str | None = None, *, csv_mode: str = "safe"
) -> str:
    """Write pair-file rows to ``path`` (atomically: temp file, then rename). Returns the format.

    JSONL: one object per line, UTF-8, non-ASCII kept. CSV: header ``FIELDS``, RFC 4180 quoting, ``meta``
    as a JSON string; ``csv_mode`` ``safe`` (default: a cell that would start a spreadsheet formula gets a
    leading ``'``, :func:`automonitor.data.records.csv_cell_out`, removed again on import) or ``exact``. Parquet (pyarrow): string columns, ``meta`` as a JSON string. Raises ``InputError``
    for an unknown format or a missing directory.
    """
    path = Path(path)
    fmt = detect_format(str(path), None, fmt)
    check_csv_mode(csv_mode)
    if not path.parent.exists():
        raise InputError("the directory does not exist", file=str(path))
    fields = FIELDS if any(r.get("spans") for r in rows) else tuple(k for k in FIELDS if k != "spans")
    fd, tmp = tempfile.mkstemp(prefix=".export-", dir=str(path.parent))
    try:
        if fmt == "jsonl":
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                for r in rows:
                    keys = [k for k in FIELDS if k != "spans" or r.get("spans")]
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
    return fmt


def _cell(row: dict[str, Any], key: str) -> Any:
    """A CSV/Parquet cell: ``meta`` and ``spans`` as JSON text (``spans`` empty when absent)."""
    if key == "meta":
        return json.dumps(row.get(key) or {}, ensure_ascii=False)
    if key == "spans":
        return json.dumps(row["spans"], ensure_ascii=False) if row.get("spans") else ""
    return row.get(key)


def check_export_options(
    path: str | os.PathLike[str], *, fmt: str | None = None, split: str = "test", status: str = "gold"
) -> str:
    """Validate export options before touching a store; returns the format. Raises ``InputError``."""
    fmt = detect_format(str(path), None, fmt)
    if split not in EXPORT_SPLITS:
        raise InputError(f"unknown split '{split}' (use one of: {', '.join(EXPORT_SPLITS)})", field="--split")
    if status not in EXPORT_STATUSES:
        raise InputError(f"unknown status '{status}' (use one of: {', '.join(EXPORT_STATUSES)})", field="--status")
    if not Path(path).parent.exists():
        raise InputError("the directory does not exist", file=str(path))
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
) -> dict[str, Any]:
    """Export stored samples to a pair file. Returns ``{"file", "format", "rows", "pairs", "split",
    "status"}``. See ``fetch_pair_rows`` for the filters and ``write_pairs`` for the formats and
    ``csv_mode``."""
    from store import session_scope

    check_export_options(path, fmt=fmt, split=split, status=status)  # fail before touching the store
    with session_scope(engine) as session:
        rows = fetch_pair_rows(session, split=split, status=status, edition=edition, label_source=label_source)
    fmt = write_pairs(rows, path, fmt, csv_mode=csv_mode)
    return {
        "file": str(path),
        "format": fmt,
        "rows": len(rows),
        "pairs": len({r["pair_id"] for r in rows}),
        "split": split,
        "status": status,
    }
