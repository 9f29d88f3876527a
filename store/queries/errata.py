"""Store queries of the errata entered into a store (table ``erratum``, append-only).

Queries only: the rules (fields, bounds, which erratum is in force) are :mod:`automonitor.data.errata`'s.
Functions run inside the caller's session and commit nothing.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col

from automonitor.timestamps import as_utc, utcnow
from store.models import Erratum


def add_rows(session: Session, rows: list[dict[str, Any]]) -> None:
    """Append ``erratum`` rows (dicts of its columns; ``entered_at`` default now) in one statement."""
    if rows:
        now = utcnow()
        session.execute(sa.insert(Erratum), [{"entered_at": now, **r} for r in rows])


def rows(session: Session) -> list[dict[str, Any]]:
    """Every ``erratum`` row as a dict of its columns, in the order entered (by id)."""
    out = []
    for r in session.execute(sa.select(Erratum).order_by(col(Erratum.id))).scalars():
        d = r.model_dump()
        d["entered_at"] = as_utc(r.entered_at)
        out.append(d)
    return out
