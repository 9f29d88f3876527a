"""Store reads of the account list (``automonitor users list``, the app's Accounts page): the ``annotator`` rows,
each account's newest ``account_event``, one account's stored state and whether there is any account (the app asks
this on every page). SQLAlchemy Core over the light views of
:mod:`store.tables`, so that listing the accounts imports neither the ORM, SQLModel nor :mod:`store.models`.

Queries only: the store checks no permission; :mod:`automonitor.annotation.roster` checks the acting account
first. Functions run inside the caller's connection or session and commit nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlalchemy as sa

from automonitor.timestamps import as_utc
from store.tables import account_event, annotator

if TYPE_CHECKING:
    from datetime import datetime

    from sqlalchemy.engine import Connection, Row
    from sqlalchemy.orm import Session

    from store.queries.rowtypes import LastEvent

__all__ = ["account_state", "all_accounts", "has_accounts", "last_events"]


def has_accounts(conn: Connection | Session) -> bool:
    """True when at least one account (any role, active or not) exists."""
    return conn.execute(sa.select(annotator.c.id).limit(1)).first() is not None


def account_state(conn: Connection | Session, account_id: int) -> Row[int, str, str, bool, int] | None:
    """The stored ``(id, name, role, active, session_epoch)`` of account ``account_id`` (attributes by those
    names), or ``None`` when there is no such account."""
    a = annotator.c
    q = sa.select(a.id, a.name, a.role, a.active, a.session_epoch).where(a.id == account_id)
    return conn.execute(q).first()


def all_accounts(conn: Connection | Session) -> list[Row[int, str, str, bool, datetime]]:
    """Every account (active or not), ordered by name: rows of ``id``, ``name``, ``role``, ``active`` and
    ``created_at`` (aware UTC), attributes by those names."""
    a = annotator.c
    return list(conn.execute(sa.select(a.id, a.name, a.role, a.active, a.created_at).order_by(a.name)).all())


def last_events(conn: Connection | Session) -> dict[int, LastEvent]:
    """``{account_id: {"action", "actor", "at"}}`` of each account's newest event."""
    e = account_event.c
    rows = conn.execute(sa.select(e.account_id, e.action, e.actor, e.at).order_by(e.at, e.id))
    return {account_id: {"action": action, "actor": actor, "at": as_utc(at)} for account_id, action, actor, at in rows}
