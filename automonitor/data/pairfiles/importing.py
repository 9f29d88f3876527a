"""Importing a pair file into the store, all or nothing: :func:`prepare_import` validates it without a
store (:mod:`automonitor.data.pairfiles.read`), :func:`apply_import` checks it against the store
(:mod:`automonitor.data.pairfiles.compare`) and writes it in one transaction."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, TypedDict

import sqlalchemy as sa

from automonitor import vocab
from automonitor.data.pairfiles.compare import StoredSamples, check_store, find_duplicates
from automonitor.data.pairfiles.read import (
    DEFAULT_SOURCE,
    MAX_LISTED,
    PairSource,
    SampleKey,
    PairFileSample,
    checked_records,
    group_pairs,
    iter_raw,
    sample_content,
    scan_pairs,
)
from automonitor.data.records import Problems, check_csv_mode, check_import_file
from automonitor.data.row_models import PAIR_MAX_LEN
from automonitor.errors import InputError
from automonitor.hashing import content_hash, norm_text, sha256_text
from store import session_scope
from store.queries import spans as span_queries
from store.queries.locks import begin_serialised_write
from store.queries.samples import edition_has_rows, insert_samples

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine
    from sqlmodel import Session

#: a sample whose request + response is longer than this (characters; ~100k tokens at ~4 characters a token) is
#: named in an import's warnings: it is over most judges' context windows, so a run will end it in error
LONG_SAMPLE_CHARS = 400_000
WRITE_CHUNK = 500  # samples read, converted and inserted at a time by an import's write
_WRITE_ATTEMPTS = 6


class ImportSummary(TypedDict):
    """What :func:`apply_import` did (``automonitor import --json`` prints it)."""

    file: str
    format: str
    rows: int
    pairs: int
    inserted: int
    skipped_existing: int
    duplicates_skipped: int
    duplicate_pairs: dict[str, str]  # {pair_id: duplicated pair_id}
    status: str
    split: str | None
    warnings: list[str]


def sample_rows(
    records: list[PairFileSample], *, status: str, split: str | None, source_file: str | None
) -> list[dict[str, Any]]:
    """``Sample`` column dicts for ``records`` (hashes computed, ``source_record`` = line number)."""
    return [
        {
            **sample_content(r),
            "id": r.sample_id,
            "pair_id": r.pair_id,
            "source": r.source,
            "source_file": (source_file[-512:] if source_file else None),
            "source_record": str(r.line),
            "split": split,
            "status": status,
            "request_hash": sha256_text(r.request),
            "response_hash": sha256_text(r.response),
            "content_hash": content_hash(r.request, r.response, r.label),
            "meta": r.meta,
            "label_source": r.label_source,
        }
        for r in records
    ]


@dataclass
class ImportPlan:
    """A validated pair file ready to be written (``prepare_import``), independent of any store.

    It holds one :class:`SampleKey` per sample (``keys``, file order), not the samples: the write reads
    ``source`` again (:meth:`records`), so an import's memory does not grow with the text it carries.
    ``sha256``: the file's hash when it was validated (a file on disk must not change before the write)."""

    format: str
    keys: list[SampleKey]
    status: str
    split: str | None
    source: PairSource
    max_errors: int = MAX_LISTED
    strict: bool = False
    default_source: str = DEFAULT_SOURCE
    csv_mode: str = "safe"
    sha256: str = ""

    @property
    def file(self) -> str:
        """The file's name in errors and summaries."""
        return self.source.file

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
    max_errors: int = MAX_LISTED,
    strict: bool = False,
    csv_mode: str = "safe",
) -> ImportPlan:
    """Read and validate a pair file (``path``, or ``data`` bytes named ``name``) without a store.

    Gold samples get ``status='gold'`` and ``split`` (``test`` by default, or ``train``);
    ``as_candidates=True`` gives ``status='candidate'``, ``split=None``. Raises ``InputError`` for any
    bad input (see the package doc) or a bad ``split``/``as_candidates``/``default_source``. ``strict``: a
    pair that duplicates another (``find_duplicates``) is an error at apply time instead of skipped.
    ``csv_mode``: how a CSV file's cells were written (``safe``, the export default, or ``exact``).
    """
    if path is not None:
        source = PairSource(str(path), path=check_import_file(path))
    elif data is not None:
        source = PairSource(name or "<upload>", data=data)
    else:
        raise InputError("no input: give a path or data")
    if as_candidates:
        if split is not None:
            raise InputError("candidates have no split: do not combine --split with --as-candidates", field="--split")
        status = "candidate"
    else:
        split = split or "test"
        if split not in vocab.SPLITS:
            raise InputError(f"unknown split '{split}' (use one of: {', '.join(vocab.SPLITS)})", field="--split")
        status = "gold"
    if not default_source or not norm_text(default_source) or len(default_source) > PAIR_MAX_LEN["source"]:
        raise InputError(f"the default source must be 1-{PAIR_MAX_LEN['source']} characters", field="--source")
    check_csv_mode(csv_mode)
    fmt, keys, sha = scan_pairs(source, fmt, default_source=default_source, max_errors=max_errors, csv_mode=csv_mode)
    return ImportPlan(
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


@dataclass
class _Written:
    """What one import transaction did: ``stored`` = ``check_store``'s samples already stored
    (``{sample_id: (status, split)}``), ``dups`` = skipped duplicate pairs, ``inserted`` = new samples."""

    stored: StoredSamples
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


def _write_once(engine: Engine, plan: ImportPlan) -> _Written:
    """One write transaction: check the store, find duplicates, then read the file again and insert the
    new samples :data:`WRITE_CHUNK` at a time. Raises ``InputError`` (conflict with the store, a duplicate
    under ``strict``, or a file that changed since it was validated) and the database's
    ``IntegrityError``/``OperationalError`` when another writer got in between (the caller retries)."""
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
    for attempt in range(1, _WRITE_ATTEMPTS + 1):
        try:
            return _write_once(engine, plan)
        except (sa.exc.IntegrityError, sa.exc.OperationalError) as exc:
            lock = ("locked", "busy", "deadlock", "serializ", "could not obtain")
            if isinstance(exc, sa.exc.OperationalError) and not any(t in str(exc).lower() for t in lock):
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
    """The warnings of an import: duplicate pairs skipped, samples stored with another status or split,
    samples longer than :data:`LONG_SAMPLE_CHARS`."""
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
    long = [k for k in plan.keys if k.chars > LONG_SAMPLE_CHARS]
    if long:
        shown = ", ".join(f"'{k.sample_id}' (line {k.line}, {k.chars:,} characters)" for k in long[:5])
        warnings.append(
            f"{len(long)} sample(s) longer than {LONG_SAMPLE_CHARS:,} characters (request + response, about "
            f"{LONG_SAMPLE_CHARS // 4000}k tokens), over most judges' context windows, so a run will likely end them "
            f"in error: {shown}{' ...' if len(long) > 5 else ''}"
        )
    return warnings


def apply_import(engine: Engine, plan: ImportPlan) -> ImportSummary:
    """Write a prepared import in one transaction, after checking it against the store (``check_store``).

    Samples already stored with the same content are skipped and keep their stored status and split.
    Returns an :class:`ImportSummary` (``warnings``: e.g. skipped duplicates, samples stored with another
    status or split). Raises ``InputError`` on a conflict with the store; then nothing is written.
    Concurrent imports are safe: the database holds at most one sample per ``(pair_id, label)``; when
    another writer commits the same samples first the transaction is checked again (same content:
    skipped; different content: ``InputError``), never a raw ``IntegrityError``.
    """
    written = _write_with_retries(engine, plan)
    warnings = _import_warnings(plan, written)
    if plan.status == "gold" and plan.split == "test" and written.inserted:
        with session_scope(engine) as session:
            built = any(edition_has_rows(session, e) for e in vocab.EDITIONS)
        if built:  # the store holds built editions
            warnings.append(
                f"the {written.inserted} imported test sample(s) join no edition: this store's editions "
                "(paper, verified, ...) come from `automonitor build`, so `run` and `report` (edition paper by "
                "default) do not see them; import them into a store without a build to measure them alone"
            )
    return ImportSummary(
        file=plan.file,
        format=plan.format,
        rows=len(plan.keys),
        pairs=len(group_pairs(plan.keys)),
        inserted=written.inserted,
        skipped_existing=len(plan.keys) - written.inserted - 2 * len(written.dups),
        duplicates_skipped=len(written.dups),
        duplicate_pairs=written.dups,
        status=plan.status,
        split=plan.split,
        warnings=warnings,
    )
