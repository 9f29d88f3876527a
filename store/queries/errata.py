"""Store queries of the errata entered into a store (table ``erratum``, append-only).

Queries only: the rules (fields, bounds, which erratum is in force) are :mod:`automonitor.data.errata`'s.
SQLAlchemy Core over the light view :data:`store.tables.erratum` (a read of the errata, as ``automonitor stats``
makes, imports neither the ORM nor :mod:`store.models`); functions run inside the caller's connection or session
and commit nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from automonitor.timestamps import as_utc, utcnow
from store.tables import erratum

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session


def add_rows(conn: Connection | Session, rows: list[dict[str, Any]]) -> None:
    """Append ``erratum`` rows (dicts of its columns but ``id``; ``entered_at`` default now) in one statement."""
    if rows:
        now = utcnow()
        conn.execute(sa.insert(erratum), [{"entered_at": now, **r} for r in rows])


def rows(conn: Connection | Session) -> list[dict[str, Any]]:
    """Every ``erratum`` row as a dict of its columns (``id``, ``pair_id``, ``source``, ``verdict``, ``reason``,
    ``reader``, ``date``, ``origin``, ``entered_by``, ``entered_at``: aware UTC), in the order entered (by id)."""
    out = []
    for r in conn.execute(sa.select(erratum).order_by(erratum.c.id)).mappings():
        d = dict(r)
        d["entered_at"] = as_utc(r["entered_at"])
        out.append(d)
    return out
