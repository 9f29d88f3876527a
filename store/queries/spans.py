"""Gold-span rows (table ``gold_span``): read by sample, counted by source and provenance, replaced per
sample. No domain rule here: :mod:`automonitor.data.spans` decides what a span is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import sqlalchemy as sa

from store.queries import chunks, insert_rows
from store.queries.rowtypes import SpanRow
from store.tables import gold_span

if TYPE_CHECKING:  # the ORM and the models for the writes only: a report reads spans on Core
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session

#: the span counts of ``stats``: store.queries.composition
__all__ = ["delete_span_rows", "delete_spans", "insert_spans", "spans_by_sample"]


def spans_by_sample(session: Connection | Session, sample_ids: Iterable[str]) -> dict[str, list[SpanRow]]:
    """``{sample_id: [SpanRow, ...]}`` (``start``, ``end``, ``provenance``, ``note``, ``step``), spans
    sorted by start; samples without spans are absent. ``session``: a session or a connection."""
    out: dict[str, list[SpanRow]] = {}
    ids = list(dict.fromkeys(sample_ids))
    t = gold_span
    for part in chunks(ids):
        rows = session.execute(
            sa.select(t.c.sample_id, t.c.start_char, t.c.end_char, t.c.provenance, t.c.note, t.c.step)
            .where(t.c.sample_id.in_(part))
            .order_by(t.c.sample_id, t.c.start_char, t.c.end_char)
        ).all()
        for sid, start, end, provenance, note, step in rows:
            out.setdefault(sid, []).append(
                {"start": start, "end": end, "provenance": provenance, "note": note, "step": step}
            )
    return out


def insert_spans(session: Session, sample_id_spans: Sequence[tuple[str, Mapping[str, object]]]) -> int:
    """Insert ``(sample_id, span)`` rows (a :class:`~store.queries.rowtypes.SpanRow` or a mapping with its keys;
    ``note`` and ``step`` may be absent) in the caller's transaction; returns the number inserted."""
    from store.models import GoldSpan, utcnow

    if not sample_id_spans:
        return 0
    now = utcnow()
    payload = [
        {
            "sample_id": sid,
            "start_char": sp["start"],
            "end_char": sp["end"],
            "provenance": sp["provenance"],
            "note": sp.get("note"),
            "step": sp.get("step"),
            "created_at": now,
        }
        for sid, sp in sample_id_spans
    ]
    return insert_rows(session, GoldSpan, payload)


def delete_spans(session: Session, sample_ids: Sequence[str], provenances: Sequence[str]) -> int:
    """Delete the spans of ``provenances`` of ``sample_ids``; returns the count."""
    from sqlmodel import col

    from store.models import GoldSpan

    n = 0
    for part in chunks(list(sample_ids)):
        stmt = sa.delete(GoldSpan).where(
            col(GoldSpan.sample_id).in_(part), col(GoldSpan.provenance).in_(list(provenances))
        )
        n += int(getattr(session.execute(stmt), "rowcount", 0) or 0)
    return n


def delete_span_rows(session: Session, rows: Sequence[tuple[str, int, int, str]]) -> int:
    """Delete spans by ``(sample_id, start, end, provenance)`` (the unique key); returns the count."""
    from sqlmodel import col

    from store.models import GoldSpan

    n = 0
    for sid, s, e, prov in rows:
        res = session.execute(
            sa.delete(GoldSpan).where(
                col(GoldSpan.sample_id) == sid,
                col(GoldSpan.start_char) == s,
                col(GoldSpan.end_char) == e,
                col(GoldSpan.provenance) == prov,
            )
        )
        n += int(getattr(res, "rowcount", 0) or 0)
    return n
