"""Errata that last: a versioned file of label verdicts that every build applies.

``seeds/errata.jsonl`` (``$AUTOMONITOR_ERRATA`` overrides it): one JSON object a line with exactly the
fields of :class:`Erratum` (``pair_id``, ``source``, ``verdict`` = ``wrong`` | ``doubtful``, ``reason``,
``reader``, ``date`` ``YYYY-MM-DD``, as the CLI contract names them). A later line for the same pair replaces
an earlier one (a re-reading); lines are only ever appended.

What a build does with an erratum (:func:`apply_errata`, after the quality gates):

* ``wrong``: the pair leaves ``verified`` and goes to the candidate pool with the reason (its ``gate``
  is ``erratum (wrong): <reason>``); if the ``paper`` mirror draws it, it stays there marked: every row
  of the pair carries ``meta.erratum`` (verdict, reason, reader, date), the build report counts it, and
  it never enters train;
* ``doubtful``: the same, with ``erratum (doubtful): <reason>``.

A pair is matched by its ``pair_id`` or by the alias ``meta.upstream_id`` (the ids before pair ids were
named by content: ``safecoder:train:112``); a ``cand:`` prefix is ignored. An erratum that matches no
pair of the build is reported (build report ``errata.unmatched``, ``errata list``), never an error.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sqlmodel import Session

from automonitor.errors import InputError
from automonitor.timestamps import utcnow
from automonitor.data.sources import PairRecord
from store.queries import build as build_queries

VERDICTS: tuple[str, ...] = ("wrong", "doubtful")
DEFAULT_ERRATA = Path(__file__).resolve().parents[2] / "seeds" / "errata.jsonl"
_FIELDS = ("pair_id", "source", "verdict", "reason", "reader", "date")


class Erratum(BaseModel):
    """One line of the errata file (fields in file order; unknown fields are an error)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pair_id: str = Field(min_length=1)
    source: str = Field(min_length=1)
    verdict: Literal["wrong", "doubtful"]
    reason: str = Field(min_length=1)
    reader: str = Field(min_length=1)
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")

    @field_validator("pair_id", "source", "reason", "reader")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be blank")
        return v.strip()

    @field_validator("date")
    @classmethod
    def _real_date(cls, v: str) -> str:
        dt.date.fromisoformat(v)  # ValueError on 2026-02-30
        return v

    def line(self) -> str:
        """The JSONL line of this erratum (fields in :data:`_FIELDS` order, UTF-8 kept)."""
        return json.dumps({k: getattr(self, k) for k in _FIELDS}, ensure_ascii=False)


def errata_path(path: str | Path | None = None) -> Path:
    """``path``, else ``$AUTOMONITOR_ERRATA``, else the repository's ``seeds/errata.jsonl``."""
    return Path(path or os.environ.get("AUTOMONITOR_ERRATA") or DEFAULT_ERRATA)


def load_errata(path: str | Path | None = None) -> list[Erratum]:
    """Every erratum of the file in file order (``[]`` when the file does not exist).

    Raises:
        InputError: a line that is not a JSON object or fails :class:`Erratum` (file, line and field named).
    """
    p = errata_path(path)
    if not p.exists():
        return []
    out: list[Erratum] = []
    with open(p, encoding="utf-8") as fh:
        for n, text in enumerate(fh, 1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON: {exc.msg}", file=str(p), line=n) from None
            if not isinstance(obj, dict):
                raise InputError("expected a JSON object", file=str(p), line=n)
            try:
                out.append(Erratum.model_validate(obj))
            except ValidationError as exc:
                e = exc.errors()[0]
                field = ".".join(str(x) for x in e["loc"]) or None
                raise InputError(e["msg"], file=str(p), line=n, field=field) from None
    return out


def current(errata: Iterable[Erratum]) -> dict[str, Erratum]:
    """The erratum in force per ``pair_id`` (a later line replaces an earlier one)."""
    return {e.pair_id.removeprefix("cand:"): e for e in errata}


def source_of(pair_id: str) -> str:
    """The source a pair id names: the part before the first ``:`` (a ``cand:`` prefix skipped)."""
    return pair_id.removeprefix("cand:").split(":", 1)[0]


def add_erratum(
    pair_id: str,
    verdict: str,
    reason: str,
    reader: str = "anonymous",
    *,
    source: str | None = None,
    path: str | Path | None = None,
    date: str | None = None,
) -> Erratum:
    """Append one erratum to the errata file (created if missing) under an exclusive ``flock``, after
    checking that the whole file is valid (so a bad file is never appended to). The next build applies it.

    Args:
        pair_id: the pair (``cand:`` prefix dropped); ``source`` defaults to :func:`source_of`.
        verdict: ``wrong`` | ``doubtful``. date: ``YYYY-MM-DD``, default today (UTC).
    Returns:
        The erratum written.
    Raises:
        InputError: an invalid field (``field`` names the option) or an invalid errata file.
    """
    pid = pair_id.strip().removeprefix("cand:")
    try:
        e = Erratum(
            pair_id=pid,
            source=source or source_of(pid),
            verdict=verdict,  # type: ignore[arg-type]
            reason=reason,
            reader=reader,
            date=date or utcnow().date().isoformat(),
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(err["msg"], field=f"--{err['loc'][0]}" if err["loc"] else None) from None
    p = errata_path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            load_errata(p)  # refuse to append to a broken file
            fh.seek(0, os.SEEK_END)
            if fh.tell() > 0:
                fh.seek(fh.tell() - 1)
                last = fh.read(1)
                fh.seek(0, os.SEEK_END)
                if last != "\n":
                    fh.write("\n")
            fh.write(e.line() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
    return e


def erratum_meta(e: Erratum) -> dict[str, str]:
    """The ``meta.erratum`` a build puts on each row of a pair with erratum ``e``."""
    return {"verdict": e.verdict, "reason": e.reason, "reader": e.reader, "date": e.date}


def apply_errata(
    pairs: list[PairRecord], errata: dict[str, Erratum], g: Counter[str], applied: dict[str, str]
) -> list[PairRecord]:
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
        out.append(replace(p, gate=f"erratum ({e.verdict}): {e.reason}", meta={**p.meta, "erratum": erratum_meta(e)}))
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


def stored_pairs(session: Session) -> dict[str, str]:
    """Every stored pair id and ``meta.upstream_id`` alias -> the stored pair id (``cand:`` dropped)."""
    by_id: dict[str, str] = {}
    for pid, _src, meta in build_queries.pair_index(session):
        base = pid.removeprefix("cand:")
        by_id.setdefault(base, base)
        up = meta.get("upstream_id") if isinstance(meta, dict) else None
        if isinstance(up, str):
            by_id.setdefault(up, base)
    return by_id


def errata_status(session: Session | None, errata: Iterable[Erratum]) -> list[dict[str, Any]]:
    """The errata in force, each as its fields plus ``in_store``: the stored pair id it matches (by
    ``pair_id`` or the ``meta.upstream_id`` alias), ``None`` when the pair no longer exists (reported,
    not an error). ``session`` ``None``: there is no store yet, so no pair is in it."""
    by_id = stored_pairs(session) if session is not None else {}
    return [{**e.model_dump(), "in_store": by_id.get(e.pair_id)} for e in current(errata).values()]
