"""Reading and validating a pair file (the format: :mod:`automonitor.data.pairfiles`).

A file is streamed (:class:`PairSource`, :func:`iter_raw`), each record validated as it comes
(:func:`checked_records`: the fields by :class:`automonitor.data.row_models.PairRow`, the trajectory steps, the
gold spans), keeping one :class:`SampleKey` a sample; then the file-level rules (:func:`check_file`: unique
sample ids, two matching sides a pair). Every problem is an :class:`automonitor.errors.InputError` naming
the file, line and field. :func:`scan_pairs` does all of it.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterable, Iterator, Protocol, TypedDict

from automonitor.data.records import Problems, RawRecord, detect_format, iter_csv, iter_jsonl, iter_parquet
from automonitor.data.row_models import PAIR_FIELDS, PAIR_REQUIRED, PairRow, validate_one
from automonitor.data.spans import GoldSpan, SpanError, validate_spans
from automonitor.data.trajectory import step_ranges, steps_from_meta, steps_mismatch
from automonitor.errors import InputError
from automonitor.hashing import make_sample_id, sha256_text

DEFAULT_SOURCE = "import"
#: How many problems of a bad pair file the error lists by default (``import --max-errors``); all are counted
MAX_LISTED = 20
DEFAULT_LABEL_SOURCE = "user"


class PairFileSample(PairRow):
    """One validated sample (one side of a pair) of a pair file at ``line``: a :class:`PairRow` with
    ``sample_id``, ``source`` and ``label_source`` always set (text exactly as in the file). Not
    :class:`automonitor.data.sources.SourcePair`, which is a whole pair read from a source."""

    line: int
    sample_id: str
    source: str
    label_source: str

    @classmethod
    def of(cls, line: int, row: PairRow, default_source: str = DEFAULT_SOURCE) -> PairFileSample:
        """The record of a validated ``row`` at ``line``: ``sample_id`` assigned with
        ``hashing.make_sample_id`` when absent, ``source`` and ``label_source`` defaulted."""
        return cls.model_construct(
            **{
                **dict(row),
                "line": line,
                "sample_id": row.sample_id or make_sample_id(row.pair_id, row.label, row.request, row.response),
                "source": row.source or default_source,
                "label_source": row.label_source or DEFAULT_LABEL_SOURCE,
            }
        )

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
            chars=len(self.request) + len(self.response),
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
    chars: int = 0  # characters of request + response (what a monitor is shown of the sample)

    @property
    def request_hash(self) -> str:
        """The request's hash as the store keeps it (hex)."""
        return self.request_digest.hex()

    @property
    def response_hash(self) -> str:
        """The response's hash as the store keeps it (hex)."""
        return self.response_digest.hex()


class _Labelled(Protocol):
    category: str
    task: str
    label: str
    request: str
    response: str


class SampleContent(TypedDict):
    """The labelled content of one sample: what a pair file, the store and the training corpus share."""

    category: str
    task: str
    label: str
    request: str
    response: str


def sample_content(sample: _Labelled) -> SampleContent:
    """The :class:`SampleContent` of a sample (a stored ``Sample``, a :class:`PairFileSample`, ...)."""
    return SampleContent(
        category=sample.category, task=sample.task, label=sample.label, request=sample.request, response=sample.response
    )


@dataclass(frozen=True)
class PairSource:
    """Where a pair file's bytes are read from: a ``path`` on disk (streamed) or ``data`` in memory (an
    upload); ``file`` names it in errors. An import reads it twice: once to validate, once to write."""

    file: str
    path: Path | None = None
    data: bytes = b""

    def open(self) -> IO[bytes]:
        """A binary file object over the bytes; ``InputError`` when the file cannot be opened."""
        if self.path is None:
            return io.BytesIO(self.data)
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
        return len(self.data) if self.path is None else self.path.stat().st_size

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
                text, problems, columns=PAIR_FIELDS, required=PAIR_REQUIRED, undecodable="keep", csv_mode=csv_mode
            )
        else:
            yield from iter_parquet(fh, problems, columns=PAIR_FIELDS, required=PAIR_REQUIRED)


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
        differs = next((f for f in ("category", "task") if getattr(a, f) != getattr(b, f)), None)
        if a.label == b.label:
            message = f"pair '{pair_id}' has two '{a.label}' samples (lines {a.line} and {b.line}); {rule}"
            problems.add(message, line=b.line, field="label")
        elif differs is not None:
            message = f"{differs} '{getattr(b, differs)}' differs from '{getattr(a, differs)}' on the other side"
            problems.add(f"{message} of pair '{pair_id}' (line {a.line})", line=b.line, field=differs)
        elif a.request_digest != b.request_digest:
            message = f"request differs from the other side of pair '{pair_id}' (line {a.line})"
            problems.add(f"{message}; both sides must answer the same request", line=b.line, field="request")


def check_spans(record: PairFileSample, problems: Problems) -> None:
    """A record's gold spans against its text (:func:`automonitor.data.spans.validate_spans`): only on a
    misbehavior sample, inside ``response``, not blank, no overlap within one provenance (whatever the
    spans' ``step``), and a ``step`` below the number of steps of the sample's trajectory (the steps of
    ``response`` read as a serialised trajectory, else ``meta["steps"]``; unchecked when neither).
    Each fault is added to ``problems`` at the record's line with field ``spans[i].start|end|step``
    (or ``spans``)."""
    if not record.spans:
        return
    if record.label != "misbehavior":
        problems.add("gold spans are only allowed on a misbehavior sample", line=record.line, field="spans")
        return
    try:
        n_steps = len(step_ranges(record.response)) or len(steps_from_meta(record.meta) or []) or None
        spans = [GoldSpan.model_validate(sp) for sp in record.spans]
        stepped = next((i for i, sp in enumerate(spans) if sp.step is not None), None)
        if n_steps is None and stepped is not None:
            raise SpanError(
                f"span {stepped}: a step is given but the response is no trajectory (no steps in "
                "response or meta.steps)",
                stepped,
                "step",
            )
        validate_spans(record.response, spans, n_steps)
    except SpanError as exc:
        problems.add(str(exc), line=record.line, field=f"spans[{exc.index}].{exc.field}")
    except ValueError as exc:
        problems.add(f"bad span: {exc}", line=record.line, field="spans")


def check_steps(record: PairFileSample, problems: Problems) -> None:
    """A record's typed trajectory (``meta.steps``) against its ``response``: the steps must be a
    list of :class:`automonitor.data.trajectory.Step` objects and describe exactly the text the monitor
    judges (:func:`automonitor.data.trajectory.steps_mismatch`), so annotators and the drill-down, which
    show the steps, see what the monitor saw. A fault is added to ``problems`` at the record's line with
    field ``meta.steps``; a record without ``meta.steps`` (or with an empty list) passes."""
    if record.meta.get("steps") in (None, []):
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


def checked_records(
    records: Iterable[RawRecord], problems: Problems, span_problems: Problems, *, default_source: str = DEFAULT_SOURCE
) -> Iterator[PairFileSample]:
    """The valid records of ``records`` as :class:`PairFileSample`, one at a time: field problems (unknown
    fields, required fields present, strings (``meta`` a JSON object), UTF-8 text without NUL, vocabulary of
    category/task/label, non-blank text, id lengths; then the trajectory steps, :func:`check_steps`) go to
    ``problems``, the problems of a valid record's spans (:func:`check_spans`) to ``span_problems``."""
    for record in records:
        row = validate_one(PairRow, record, problems)
        if row is None:
            continue
        rec = PairFileSample.of(record.line, row, default_source)
        check_steps(rec, problems)
        check_spans(rec, span_problems)
        yield rec


def check_file(keys: list[SampleKey], problems: Problems, span_problems: Problems) -> None:
    """Raise ``InputError`` at the first stage with problems: the fields (``problems`` as filled by
    :func:`checked_records`), unique sample ids (:func:`check_unique_sample_ids`: an assigned id repeats
    when a row is duplicated), the pairs' sides (:func:`check_pair_sides`), then the spans
    (``span_problems``)."""
    problems.raise_if_any()
    check_unique_sample_ids(keys, problems)
    problems.raise_if_any()
    check_pair_sides(keys, problems)
    problems.raise_if_any()
    span_problems.raise_if_any()


def group_pairs(keys: Iterable[SampleKey]) -> dict[str, list[SampleKey]]:
    """Keys grouped by ``pair_id`` (groups and members in file order)."""
    groups: dict[str, list[SampleKey]] = {}
    for k in keys:
        groups.setdefault(k.pair_id, []).append(k)
    return groups


def scan_pairs(
    source: PairSource,
    fmt: str | None = None,
    *,
    default_source: str = DEFAULT_SOURCE,
    max_errors: int = MAX_LISTED,
    csv_mode: str = "safe",
) -> tuple[str, list[SampleKey], str]:
    """Read and validate a pair file streaming, keeping one :class:`SampleKey` a sample. Returns
    ``(format, keys, sha256 of the bytes)`` (the hash only for a file on disk, else ``""``).

    Raises ``InputError`` (see the package doc) at the first stage that has problems: an empty file,
    read problems (malformed JSON or CSV, a JSONL line that is not an object, bytes that are not UTF-8
    where no field can be named, a CSV/Parquet header with missing, unknown or duplicate columns, a CSV
    row with the wrong field count) listed in line order together with the field problems of the lines
    that could be read (the first ``max_errors`` named, all counted), a file without samples, then :func:`checked_records` and
    :func:`check_file`. ``csv_mode``: how a CSV file's cells were written (``safe``, the export default,
    or ``exact``)."""
    head = source.head()
    fmt = detect_format(source.file, head, fmt)
    if fmt != "parquet" and not head.removeprefix(codecs.BOM_UTF8).strip() and source.size() <= len(head):
        raise InputError("the file is empty: no samples", file=source.file, line=1)
    sha = source.sha256() if source.path is not None else ""
    read_problems = Problems(source.file, max_errors)
    problems, span_problems = Problems(source.file, max_errors), Problems(source.file, max_errors)
    raw = iter_raw(source, fmt, read_problems, csv_mode=csv_mode)
    keys = [rec.key() for rec in checked_records(raw, problems, span_problems, default_source=default_source)]
    if read_problems:  # the records' field problems too: every bad line of the file in one list
        read_problems.absorb(problems)
        read_problems.raise_if_any()
    if not keys and not problems:  # every record read is either a key or a problem
        raise InputError("the file has no samples", file=source.file, line=1 if fmt != "csv" else 2)
    check_file(keys, problems, span_problems)
    return fmt, keys, sha
