"""Derived documents kept in the store (table ``derived_document``): JSON text that the core computed
from the store's content, under a key and the fingerprint of that content.

The store knows no domain rule: it keeps one document per key and hands it back only to a reader that
names the same fingerprint; what a key means, how a fingerprint is made and when a document is computed
are the caller's (:mod:`automonitor.data.audit.cache`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from store.tables import derived_document
from automonitor.timestamps import utcnow

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

__all__ = ["read_document", "write_document"]


def read_document(conn: Connection | Session, key: str, fingerprint: str) -> str | None:
    """The JSON text kept under ``key`` when it was computed from content with ``fingerprint``; ``None``
    when no document is kept under ``key`` or it was computed from other content. One ``SELECT``."""
    t = derived_document.c
    q = sa.select(t.doc).where(t.key == key, t.fingerprint == fingerprint)
    doc: str | None = conn.execute(q).scalar_one_or_none()
    return doc


def write_document(session: Session, key: str, fingerprint: str, doc: str) -> None:
    """Keep ``doc`` (JSON text) under ``key`` for content with ``fingerprint``, replacing what ``key`` held
    (one statement, ``INSERT ... ON CONFLICT (key) DO UPDATE``: two writers of one key leave the later
    document, never an error). ``key`` and ``fingerprint``: at most 64 characters."""
    from store.models import DerivedDocument
    from store.queries import table_of

    t = table_of(DerivedDocument)
    values = {"key": key, "fingerprint": fingerprint, "doc": doc, "created_at": utcnow()}
    update = {"fingerprint": fingerprint, "doc": doc, "created_at": values["created_at"]}
    if session.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        session.execute(pg_insert(t).values(values).on_conflict_do_update(index_elements=["key"], set_=update))
        return
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    session.execute(sqlite_insert(t).values(values).on_conflict_do_update(index_elements=["key"], set_=update))
