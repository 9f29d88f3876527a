"""Shared types and readers for the public-source importers.

Every importer turns the files of one raw folder into :class:`SourcePair` objects: one request with a
misbehavior response and a benign response to that *same* request, plus where each side came from.
Readers raise :class:`automonitor.errors.InputError` naming the file (relative to the raw dir), the
line and the field of a malformed record.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, NamedTuple, TypedDict

from typing_extensions import Unpack

from automonitor.errors import InputError
from automonitor.data.records import json_objects


#: one object of a raw source file as parsed from JSON, before its fields are checked (:func:`need_str`)
Record = dict[str, Any]
#: a JSON object read from a raw file with its 1-based line (or its index in a JSON list)
Numbered = tuple[int, Record]


@dataclass(kw_only=True)
class SourcePair:
    """One misbehavior/benign pair for the same request.

    Attributes:
        source: registry name of the importer (also ``Sample.source``).
        pair_id: stable id ``"<source>:<record id>"`` shared by both samples.
        category, task: contract vocabulary (``automonitor.vocab``). A registered importer leaves
            ``source``, ``category`` and ``task`` out: :func:`~automonitor.data.sources.registry.register_source`
            sets them to its registered ones on every pair and control its ``load`` returns.
        request: the request text shown to a monitor (identical for both sides).
        misbehavior, benign: the two responses.
        mis_file, ben_file: path of each side's file relative to the raw dir.
        mis_record, ben_record: record id / line / index of each side in its file.
        meta: metadata shared by both sides (cwe, language, model, bbh task, ...).
        mis_meta, ben_meta: per-side metadata (e.g. the model that wrote that side).
        eligible_test: ``False`` when the pair may go to train but not to the test set or the
            candidate pool (e.g. code over the length cap); ``test_note`` says why.
        group: stratum used for proportional test selection (``None``: one stratum).
        label_source: label provenance (CONTRACT vocabulary): how the label of both sides is known.
        gate: set by the build's quality gates: why the pair goes to the annotation candidate pool
            instead of train/test (``None``: passed).
        answered_other_prompt: per side (``"misbehavior"`` / ``"benign"``), how the prompt that side
            actually answered differs from ``request`` (e.g. the benign chain was sampled without the
            cue); a side not listed answered ``request`` as shown. The build keeps a pair with an entry
            out of ``verified`` unless its ``label_source`` says so
            (:data:`automonitor.data.build.config.OTHER_PROMPT_PROVENANCES`).
    """

    source: str = ""
    pair_id: str
    category: str = ""
    task: str = ""
    request: str
    misbehavior: str
    benign: str
    mis_file: str
    ben_file: str
    mis_record: str
    ben_record: str
    meta: dict[str, Any] = field(default_factory=dict)
    mis_meta: dict[str, Any] = field(default_factory=dict)
    ben_meta: dict[str, Any] = field(default_factory=dict)
    eligible_test: bool = True
    test_note: str | None = None
    group: str | None = None
    label_source: str = "user"
    gate: str | None = None
    answered_other_prompt: dict[str, str] = field(default_factory=dict)


class Side(NamedTuple):
    """One side of a pair as :func:`make_pair` takes it: the response ``text``, the ``file`` it is in
    (relative to the raw dir) and its ``record`` there (line, index or id)."""

    text: str
    file: str
    record: str


class PairFields(TypedDict, total=False):
    """The :class:`SourcePair` fields besides the two sides that :func:`make_pair` passes on (a field left
    out keeps its default)."""

    meta: dict[str, Any]
    mis_meta: dict[str, Any]
    ben_meta: dict[str, Any]
    eligible_test: bool
    test_note: str | None
    group: str | None
    label_source: str
    answered_other_prompt: dict[str, str]


def make_pair(pair_id: str, request: str, mis: Side, ben: Side, **fields: Unpack[PairFields]) -> SourcePair:
    """The :class:`SourcePair` of ``request`` with misbehavior side ``mis`` (``misbehavior``, ``mis_file``,
    ``mis_record``) and benign side ``ben`` (``benign``, ``ben_file``, ``ben_record``); ``fields`` as
    :class:`SourcePair` names them."""
    return SourcePair(
        pair_id=pair_id,
        misbehavior=mis.text,
        mis_file=mis.file,
        mis_record=mis.record,
        request=request,
        benign=ben.text,
        ben_file=ben.file,
        ben_record=ben.record,
        **fields,
    )


@dataclass
class SourceResult:
    """What one importer read: its pairs, drop reasons with counts, and the files it read."""

    pairs: list[SourcePair] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    controls: list[SourcePair] = field(default_factory=list)  # benign-only control samples (``benign`` side)

    def found(self, raw: Path, relname: str) -> Path | None:
        """``raw / relname`` when that file exists (then listed in ``files``), else ``None`` (listed in
        ``missing``)."""
        path = raw / relname
        if not path.exists():
            self.missing.append(relname)
            return None
        self.files.append(relname)
        return path

    def found_all(self, raw: Path, relnames: Sequence[str]) -> bool:
        """``True`` when every ``raw / relname`` exists (then all are listed in ``files``); else ``False``
        with the absent ones listed in ``missing`` (none in ``files``)."""
        absent = [f for f in relnames if not (raw / f).exists()]
        self.missing.extend(absent)
        if not absent:
            self.files.extend(relnames)
        return not absent

    def jsonl(self, raw: Path, relname: str, need: Sequence[str] = ()) -> Iterator[Numbered]:
        """:func:`read_jsonl` of ``raw / relname`` when that file exists (:meth:`found`, looked up when
        iteration starts); nothing when it does not.

        Raises:
            InputError: as :func:`read_jsonl`.
        """
        path = self.found(raw, relname)
        if path is not None:
            yield from read_jsonl(raw, path, need)

    def add(self, got: SourcePair | str | None) -> None:
        """Keep what a pair builder returned: a pair goes to ``pairs``, a string is a drop reason counted
        in ``dropped``, ``None`` (left out, not counted) is ignored."""
        if isinstance(got, str):
            self.dropped[got] += 1
        elif got is not None:
            self.pairs.append(got)


#: ``SourcePair.meta`` key of a cross-model cue pair: the follower model's own answer to the question
#: asked without the cue (in the format of the pair's cue answer), ``None`` when that run has none
UNCUED_ANSWER = "follower_uncued_answer"


def cue_not_shown(p: SourcePair, cue_key: str) -> str | None:
    """The screen shared by the cross-model cue sources: a reason when the pair does not show that the
    follower's answer came from the cue, else ``None``.

    A cross-model pair's misbehavior side is the model that answered the cue's (wrong) option. When that
    model gives the same option in its own run *without* the cue (``meta[UNCUED_ANSWER]`` equals
    ``meta[cue_key]``), the cued answer is its ordinary mistake, not cue-following: a monitor asked
    about sycophancy or bias has nothing in the response to flag, so the label is arguable and the pair
    goes to the annotation candidate pool (the reading behind this rule: docs/verified_readings.md,
    "Cross-model cue pairs"). A pair whose follower answered something else uncued (the key, another
    option, or no parsable answer) is not screened here.
    """
    uncued, cue = p.meta.get(UNCUED_ANSWER), p.meta.get(cue_key)
    if uncued is not None and uncued == cue:
        return f"cue not shown to change the answer: the follower gives {cue} without the cue too"
    return None


def content_pair_id(source: str, misbehavior: str, benign: str, prefix: str = "") -> str:
    """A pair id named by source and content, not by the upstream split:
    ``"<source>:[<prefix>-]<first 10 hex of sha256(misbehavior NUL benign)>"``. Stable across upstream
    re-splits and file order; the upstream id stays in ``meta["upstream_id"]`` (the errata alias)."""
    digest = hashlib.sha256(f"{misbehavior}\0{benign}".encode()).hexdigest()[:10]
    return f"{source}:{prefix + '-' if prefix else ''}{digest}"


def rel(raw: Path, path: Path) -> str:
    """``path`` relative to the raw dir, with forward slashes."""
    return path.relative_to(raw).as_posix()


def read_jsonl(raw: Path, path: Path, need: Sequence[str] = ()) -> Iterator[Numbered]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file (``.gz`` allowed), each
    object checked to hold the string fields ``need`` (:func:`need_str`, in that order) first.

    Raises:
        InputError: a line is not valid JSON or not an object (file relative to ``raw``, 1-based line), or
            lacks a ``need`` field (file, line, field).
    """
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for n, obj in json_objects(fh, rel(raw, path)):
                for key in need:
                    need_str(obj, key, raw, path, n)
                yield n, obj
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # an InputError raised above is none of these
        raise InputError(f"cannot read file: {exc}", file=rel(raw, path)) from None


def read_json(raw: Path, path: Path) -> Any:
    """Parse a whole JSON file.

    Raises:
        InputError: unreadable or invalid JSON (file relative to ``raw``, line of the error).
    """
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=rel(raw, path), line=exc.lineno) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", file=rel(raw, path)) from None


def read_json_list(raw: Path, path: Path) -> list[tuple[int, Any]]:
    """The items of a file holding one JSON array, each with the 1-based line its text starts on (so an
    error about an item can name its line).

    Raises:
        InputError: unreadable file, invalid JSON (file, line) or not a JSON array.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", file=rel(raw, path)) from None
    dec = json.JSONDecoder()
    ws = " \t\r\n"

    def skip(i: int) -> int:
        while i < len(text) and text[i] in ws:
            i += 1
        return i

    def bad(msg: str, pos: int) -> InputError:
        return InputError(msg, file=rel(raw, path), line=text.count("\n", 0, pos) + 1)

    i = skip(1 if text.startswith("\ufeff") else 0)
    if not text.startswith("[", i):
        raise bad("expected a JSON array", i)
    out: list[tuple[int, Any]] = []
    i = skip(i + 1)
    if text.startswith("]", i):
        return out
    line, counted = 1, 0  # the line of position ``counted``: newlines counted once each, not from 0 per item
    while True:
        try:
            obj, end = dec.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise bad(f"invalid JSON: {exc.msg}", exc.pos) from None
        line += text.count("\n", counted, i)
        counted = i
        out.append((line, obj))
        i = skip(end)
        if text.startswith(",", i):
            i = skip(i + 1)
            continue
        if text.startswith("]", i) and not text[skip(i + 1) :]:
            return out
        raise bad("invalid JSON: expected ',' or ']' after an array item", i)


def need_str(obj: Record, key: str, raw: Path, path: Path, line: int | None) -> str:
    """``obj[key]`` as a string.

    Raises:
        InputError: the field is missing or not a string.
    """
    val = obj.get(key)
    if not isinstance(val, str):
        raise InputError("missing or not a string", file=rel(raw, path), line=line, field=key)
    return val


LANGUAGES = {
    "py": "Python",
    "c": "C",
    "h": "C",
    "cc": "C++",
    "cpp": "C++",
    "cxx": "C++",
    "hpp": "C++",
    "C": "C++",
    "js": "JavaScript",
    "jsx": "JavaScript",
    "ts": "TypeScript",
    "rb": "Ruby",
    "go": "Go",
    "java": "Java",
    "php": "PHP",
}


def language_of(file_name: str) -> str:
    """Programming language name guessed from a file extension (``"code"`` when unknown)."""
    ext = file_name.rsplit(".", 1)[-1] if "." in file_name else ""
    return LANGUAGES.get(ext, LANGUAGES.get(ext.lower(), "code"))
