"""Sample queries shared by ``build``, ``import`` and the app."""

from __future__ import annotations

from typing import Any, Iterable

import sqlalchemy as sa
from sqlmodel import Session

from store.models import Sample

_COLUMNS = [c.name for c in Sample.__table__.columns]


def existing_ids(session: Session, ids: Iterable[str], chunk: int = 900) -> set[str]:
    """The subset of ``ids`` already present in the ``sample`` table."""
    ids = list(ids)
    found: set[str] = set()
    for i in range(0, len(ids), chunk):
        part = ids[i:i + chunk]
        found.update(session.exec(sa.select(Sample.id).where(Sample.id.in_(part))).scalars())  # type: ignore[attr-defined]
    return found


def insert_samples(session: Session, rows: list[dict[str, Any]]) -> int:
    """Bulk-insert sample rows (dicts with ``Sample`` column names) that are not present yet.

    Rows whose ``id`` already exists are skipped (idempotent re-import). Runs inside the caller's
    transaction: nothing is committed here. Returns the number of rows inserted.
    """
    if not rows:
        return 0
    have = existing_ids(session, [r["id"] for r in rows])
    new = [r for r in rows if r["id"] not in have]
    if not new:
        return 0
    from store.models import utcnow

    now = utcnow()
    payload = []
    for r in new:
        d = {k: r.get(k) for k in _COLUMNS if k in r}
        d.setdefault("meta", {})
        d.setdefault("created_at", now)
        d.setdefault("status", "gold")
        d.setdefault("source", "")
        payload.append(d)
    session.execute(sa.insert(Sample), payload)
    return len(payload)
