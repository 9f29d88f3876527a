"""Errata that last: readers' verdicts on pair labels, shipped with the package
(``automonitor/data/errata.jsonl``, or ``$AUTOMONITOR_ERRATA``) and kept in the store's ``erratum`` table.

What they mean, which one is in force for a pair (:func:`current`: the strictest verdict among readers who
disagree, a reader's later erratum replacing their own), how conflicts are shown and what a build does with
them (out of ``verified``, to candidates with gate ``erratum (<verdict>): <reason>``, marked
``meta.erratum`` in the ``paper`` mirror, never train): ``docs/explanation/editions.md``, "Errata". A pair
is matched by ``pair_id`` or ``meta.upstream_id`` (a ``cand:`` prefix ignored); an unmatched erratum is
reported, never an error.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from automonitor.errors import InputError
from automonitor.data.errata_file import DEFAULT_ERRATA as DEFAULT_ERRATA, errata_path as errata_path
from automonitor.data.records import LineDate, LineText, model_lines
from automonitor.timestamps import utcnow
from automonitor.vocab import ERRATUM_ORIGINS
from store import session_scope
from store.queries import errata as errata_queries
from store.queries.composition import latest_build_report, pair_index

if TYPE_CHECKING:  # the sources package imports every source module: only the build, which applies errata, needs it
    from sqlalchemy.engine import Connection, Engine
    from sqlalchemy.orm import Session

    from automonitor.data.sources import SourcePair

VERDICTS: tuple[str, ...] = ("wrong", "doubtful")
_FIELDS = ("pair_id", "source", "verdict", "reason", "reader", "date")
MAX_REASON = 4096
"""Longest reason, in UTF-8 bytes."""
MAX_FIELD = 128
"""Longest ``source`` and ``reader`` (characters); a ``pair_id`` may have 256."""


class Erratum(BaseModel):
    """One erratum (a line of the errata file; fields in file order; unknown fields are an error)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pair_id: LineText = Field(min_length=1, max_length=256, description="the pair whose label is in question")
    source: LineText = Field(min_length=1, max_length=MAX_FIELD, description="the pair's source")
    verdict: Literal["wrong", "doubtful"] = Field(
        description="wrong (the label is wrong) or doubtful (the pair cannot be decided)"
    )
    reason: LineText = Field(min_length=1, description="why, in words a reader can check against the pair")
    reader: LineText = Field(min_length=1, max_length=MAX_FIELD, description="who read the pair")
    date: LineDate = Field(description="when it was read (YYYY-MM-DD)")

    @field_validator("reason")
    @classmethod
    def _bounded(cls, v: str) -> str:
        if len(v.encode("utf-8", "surrogatepass")) > MAX_REASON:
            raise ValueError(f"longer than {MAX_REASON} bytes")
        return v

    def line(self) -> str:
        """The JSONL line of this erratum (fields in :data:`_FIELDS` order, UTF-8 kept)."""
        return json.dumps({k: getattr(self, k) for k in _FIELDS}, ensure_ascii=False)


def load_errata(path: str | Path | None = None) -> list[Erratum]:
    """Every erratum of an errata file (default: the shipped one, :func:`errata_path`) in file order
    (``[]`` when the file does not exist).

    Raises:
        InputError: an unreadable file, or a line that is not a JSON object or fails :class:`Erratum`
            (file, line and field named).
    """
    p = errata_path(path)
    if not p.exists():
        return []
    return model_lines(p, Erratum, "errata")


#: how strict a verdict is: between readers who disagree, the strictest is in force (:func:`current`)
STRICTNESS: dict[str, int] = {"doubtful": 1, "wrong": 2}


def _readings(errata: Iterable[Erratum]) -> dict[str, dict[str, tuple[int, Erratum]]]:
    """Per pair (``cand:`` dropped), each reader's latest erratum with its position in ``errata``."""
    out: dict[str, dict[str, tuple[int, Erratum]]] = {}
    for i, e in enumerate(errata):
        out.setdefault(e.pair_id.removeprefix("cand:"), {})[e.reader] = (i, e)
    return out


def _in_force(readings: dict[str, tuple[int, Erratum]]) -> Erratum:
    return max(readings.values(), key=lambda t: (STRICTNESS[t[1].verdict], t[0]))[1]


def current(errata: Iterable[Erratum]) -> dict[str, Erratum]:
    """The erratum in force per ``pair_id`` (module doc): each reader's latest erratum counts; between
    readers the strictest verdict wins (``wrong`` over ``doubtful``), the latest of that verdict shown."""
    return {pid: _in_force(rs) for pid, rs in _readings(errata).items()}


def conflicts(errata: Iterable[Erratum]) -> dict[str, list[Erratum]]:
    """The pairs whose readers disagree: pair id -> the other readers' latest errata whose verdict differs
    from the one in force (:func:`current`), oldest first. A pair whose readers agree is not listed."""
    out: dict[str, list[Erratum]] = {}
    for pid, rs in _readings(errata).items():
        force = _in_force(rs)
        others = [e for _, e in sorted(rs.values(), key=lambda t: t[0]) if e.verdict != force.verdict]
        if others:
            out[pid] = others
    return out


def other_readings(errata: Iterable[Erratum], pair_id: str, reader: str) -> list[Erratum]:
    """The latest errata of readers other than ``reader`` for ``pair_id`` (``cand:`` ignored) whose verdict
    differs from ``reader``'s latest one: what a new report by ``reader`` conflicts with, oldest first."""
    rs = _readings(errata).get(pair_id.strip().removeprefix("cand:"), {})
    mine = rs.get(reader.strip())
    if mine is None:
        return []
    return [
        e
        for _, e in sorted(rs.values(), key=lambda t: t[0])
        if e.reader != mine[1].reader and e.verdict != mine[1].verdict
    ]


def erratum_conflicts(engine: Engine, e: Erratum) -> tuple[list[Erratum], Erratum]:
    """What erratum ``e`` (just recorded in ``engine``'s store) conflicts with, read after the write (so a
    report another reader entered meanwhile is seen): the other readers' differing verdicts on its pair
    (:func:`other_readings`; ``[]`` when none) and the erratum now in force for the pair (:func:`current`)."""
    with engine.connect() as conn:
        errata = errata_in_force(conn)
    pid = e.pair_id.removeprefix("cand:")
    return other_readings(errata, pid, e.reader), current(errata).get(pid, e)


def conflict_warning(e: Erratum, others: list[Erratum], in_force: Erratum) -> str:
    """One line (no newline) saying that erratum ``e`` conflicts with ``others`` (other readers' verdicts on
    the same pair) and which verdict is in force. Texts are raw: escape them for the place they are shown."""
    said = "; ".join(f"{o.reader} said {o.verdict} ({o.date})" for o in others)
    return (
        f"conflicting errata on pair {e.pair_id}: {e.reader} says {e.verdict}, {said}; in force: {in_force.verdict} "
        "(between readers the strictest verdict wins)"
    )


def source_of(pair_id: str) -> str:
    """The source a pair id names: the part before the first ``:`` (a ``cand:`` prefix skipped)."""
    return pair_id.removeprefix("cand:").split(":", 1)[0]


def make_erratum(
    pair_id: str,
    verdict: str,
    reason: str,
    reader: str = "anonymous",
    *,
    date: str | None = None,
) -> Erratum:
    """A checked :class:`Erratum` (``cand:`` prefix dropped; ``source`` is :func:`source_of` the pair id,
    ``date`` defaults to today, UTC).

    Raises:
        InputError: an invalid field (``field`` names the CLI option: ``--verdict``, ``--reason``, ...).
    """
    pid = str(pair_id).strip().removeprefix("cand:")
    try:
        return Erratum(
            pair_id=pid,
            source=source_of(pid),
            verdict=verdict,  # type: ignore[arg-type]
            reason=reason,
            reader=reader,
            date=date or utcnow().date().isoformat(),
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(err["msg"], field=f"--{err['loc'][0]}" if err["loc"] else None) from None


def _row_values(e: Erratum, origin: str, entered_by: str | None) -> dict[str, Any]:
    if origin not in ERRATUM_ORIGINS:
        raise InputError(f"unknown origin {origin!r}; expected one of {', '.join(ERRATUM_ORIGINS)}", field="origin")
    return {**e.model_dump(), "origin": origin, "entered_by": (entered_by or None) and str(entered_by)[:MAX_FIELD]}


def add_erratum(
    engine: Engine,
    pair_id: str,
    verdict: str,
    reason: str,
    reader: str = "anonymous",
    *,
    origin: str = "cli",
    entered_by: str | None = None,
) -> Erratum:
    """Record one erratum in the store (table ``erratum``, one transaction) with its provenance:
    ``origin`` (``app`` | ``cli`` | ``import``) and ``entered_by`` (the logged-in account, if any). The
    next build applies it. Fields as :func:`make_erratum` (its default ``source`` and today's ``date``).

    Returns:
        The erratum recorded.
    Raises:
        InputError: an invalid field (``field`` names the option). Nothing is written then.
    """
    e = make_erratum(pair_id, verdict, reason, reader)
    values = _row_values(e, origin, entered_by)
    with session_scope(engine) as s:
        errata_queries.add_rows(s, [values])
    return e


def errata_in_force(session: Connection | Session | None, path: str | Path | None = None) -> list[Erratum]:
    """Every erratum a build applies, in order: the shipped file's (:func:`load_errata` of ``path``)
    then the store's (``session``: a session or a connection; ``None``: no store). Pass it to :func:`current`
    for the one in force per pair.

    Raises:
        InputError: an invalid shipped file (file, line, field).
    """
    rows = errata_queries.rows(session) if session is not None else []
    return load_errata(path) + [Erratum.model_validate({k: r[k] for k in _FIELDS}) for r in rows]


def export_errata(session: Connection | Session | None, out: str | Path, path: str | Path | None = None) -> int:
    """Write every erratum in force (:func:`errata_in_force`, the shipped ones and those entered into the
    store, a repeated identical line once) to ``out`` as the errata file, for review in git; the file is
    replaced whole (written beside it, then renamed). Returns the number of lines written.

    Raises:
        InputError: ``out`` cannot be written (field ``FILE``); an invalid shipped file.
    """
    lines = list(dict.fromkeys(e.line() for e in errata_in_force(session, path)))  # a repeated line once
    target = Path(out)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=".errata-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write("".join(line + "\n" for line in lines))
        os.replace(tmp, target)
    except OSError as exc:
        raise InputError(f"cannot write {target}: {exc.strerror or exc}", file=str(target), field="FILE") from None
    return len(lines)


def import_errata(engine: Engine, file: str | Path, *, path: str | Path | None = None) -> dict[str, int]:
    """Add the errata of a reviewed errata file to the store, all or nothing: the whole file is checked
    first (file, line and field named), then its lines that are not already in force (an identical
    erratum shipped or stored) are recorded with origin ``import``.

    Returns:
        ``{"read": int, "added": int, "already": int}``.
    Raises:
        InputError: a missing or invalid file. Nothing is written then.
    """
    p = Path(file)
    if not p.is_file():
        raise InputError(f"no such file: {p}", file=str(p))
    incoming = load_errata(p)
    with session_scope(engine) as s:
        have = {e.line() for e in errata_in_force(s, path)}
        new: list[Erratum] = []
        for e in incoming:
            if e.line() not in have:
                have.add(e.line())
                new.append(e)
        errata_queries.add_rows(s, [_row_values(e, "import", None) for e in new])
    return {"read": len(incoming), "added": len(new), "already": len(incoming) - len(new)}


def apply_errata(
    pairs: list[SourcePair], errata: dict[str, Erratum], g: Counter[str], applied: dict[str, str]
) -> list[SourcePair]:
    """``pairs`` with every erratum in force applied (module doc): ``gate`` set to
    ``erratum (<verdict>): <reason>`` and ``meta.erratum`` added. Matches ``pair_id`` or
    ``meta.upstream_id``; records each matched erratum key -> pair_id in ``applied`` and counts in ``g``."""
    if not errata:
        return pairs
    out = []
    for p in pairs:
        key = p.pair_id if p.pair_id in errata else p.meta.get("upstream_id")
        e = errata.get(key) if isinstance(key, str) else None
        if e is None:
            out.append(p)
            continue
        applied[e.pair_id] = p.pair_id
        g[f"to candidates: erratum ({e.verdict})"] += 1
        mark = {"verdict": e.verdict, "reason": e.reason, "reader": e.reader, "date": e.date}
        out.append(replace(p, gate=f"erratum ({e.verdict}): {e.reason}", meta={**p.meta, "erratum": mark}))
    return out


def errata_counts(errata: Iterable[Erratum], applied: dict[str, str] | None = None) -> dict[str, Any]:
    """``{"wrong": n, "doubtful": n, "by_source": {source: {"wrong": n, "doubtful": n}}}`` over the
    errata in force; with ``applied`` (erratum pair id -> build pair id) also ``applied`` (count) and
    ``unmatched`` (sorted pair ids no pair of the build has)."""
    cur = current(errata)
    by_src: dict[str, dict[str, int]] = {}
    tot: Counter[str] = Counter()
    for e in cur.values():
        tot[e.verdict] += 1
        d = by_src.setdefault(e.source, {v: 0 for v in VERDICTS})
        d[e.verdict] += 1
    doc: dict[str, Any] = {
        "wrong": tot["wrong"],
        "doubtful": tot["doubtful"],
        "by_source": dict(sorted(by_src.items())),
    }
    if applied is not None:
        doc["applied"] = len(applied)
        doc["unmatched"] = sorted(k for k in cur if k not in applied)
    return doc


def stored_pairs(session: Connection | Session) -> dict[str, str]:
    """Every stored pair id and ``meta.upstream_id`` alias -> the stored pair id (``cand:`` dropped)."""
    by_id: dict[str, str] = {}
    for pid, _src, meta in pair_index(session, meta_key="upstream_id"):  # the other samples' meta: not read
        base = pid.removeprefix("cand:")
        by_id.setdefault(base, base)
        up = meta.get("upstream_id") if isinstance(meta, dict) else None
        if isinstance(up, str):
            by_id.setdefault(up, base)
    return by_id


def why_not_in_store(build_report: Mapping[str, Any] | None, pair_id: str) -> str:
    """One line saying why the store holds no pair for the erratum on ``pair_id``, from the report of the
    store's last build (``build_report``, :func:`store.queries.composition.latest_build_report`; ``None``: never
    built): the reason the build dropped the pair it matched (its ``errata.not_stored``: a sample held by
    another pair, or a request shared with the test set), no pair of that build having the id (``unmatched``),
    or an erratum the last build did not have (the next build applies it)."""
    if build_report is None:
        return "no such pair in the store: it was never built from the raw sources (`automonitor build`)"
    errata = build_report.get("errata")
    errata = errata if isinstance(errata, Mapping) else {}
    dropped = errata.get("not_stored")
    seed = build_report.get("seed")
    if isinstance(dropped, Mapping) and isinstance(dropped.get(pair_id), str):
        return f"not in the store: {dropped[pair_id]}"
    unmatched = errata.get("unmatched")
    if isinstance(unmatched, list) and pair_id in unmatched:
        return f"no such pair in the store: no pair of the raw sources has this id (build seed {seed})"
    if not isinstance(dropped, Mapping):  # a build from before builds recorded the pairs they drop
        return (
            f"no such pair in the store: its last build (seed {seed}) did not keep it; that build does not record "
            "why (a build with another seed or errata records it)"
        )
    return f"no such pair in the store: not in its last build (seed {seed}); the next build applies it"


def errata_status(session: Connection | Session | None, errata: Iterable[Erratum]) -> list[dict[str, Any]]:
    """The errata in force, each as its fields plus ``in_store``: the stored pair id it matches (by
    ``pair_id`` or the ``meta.upstream_id`` alias), ``None`` when the store holds no such pair (reported,
    not an error), ``why_not_in_store``: then one line saying why (:func:`why_not_in_store`; ``None`` when
    the pair is in the store), and ``conflicts``: the other readers' differing verdicts on the pair
    (:func:`conflicts`; ``[]`` when they agree), each ``{"reader", "verdict", "date", "reason"}``.
    ``session`` ``None``: there is no store yet, so no pair is in it."""
    errata = list(errata)
    by_id = stored_pairs(session) if session is not None else {}
    build_report = latest_build_report(session) if session is not None else None
    others = conflicts(errata)
    return [
        {
            **e.model_dump(),
            "in_store": by_id.get(e.pair_id),
            "why_not_in_store": None if e.pair_id in by_id else why_not_in_store(build_report, e.pair_id),
            "conflicts": [
                {"reader": o.reader, "verdict": o.verdict, "date": o.date, "reason": o.reason}
                for o in others.get(pid, [])
            ],
        }
        for pid, e in current(errata).items()
    ]
