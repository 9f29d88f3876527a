"""Store queries of the accounts (``annotator`` rows) and the login throttle.

Queries only: the store checks no permission; :mod:`automonitor.annotation.accounts` checks the acting account
first. Functions run inside the caller's session (or connection) and commit nothing.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Session, col

from store.models import Annotator, LoginThrottle


def has_accounts(conn: sa.Connection | Session) -> bool:
    """True when at least one account (any role, active or not) exists."""
    return conn.execute(sa.select(col(Annotator.id)).limit(1)).first() is not None


def name_taken(session: Session, name: str) -> bool:
    """True when an account (active or not) is called ``name``."""
    return session.execute(sa.select(col(Annotator.id)).where(col(Annotator.name) == name)).first() is not None


def account_by_name(session: Session, name: str) -> Annotator | None:
    """The account row called ``name`` (active or not), or ``None``."""
    return session.execute(sa.select(Annotator).where(col(Annotator.name) == name)).scalars().first()


def active_accounts(session: Session) -> list[Annotator]:
    """The active account rows, ordered by name."""
    q = sa.select(Annotator).where(col(Annotator.active).is_(True)).order_by(col(Annotator.name))
    return list(session.execute(q).scalars().all())


def clear_throttle(session: Session, keys: list[str]) -> None:
    """Delete the login-throttle rows of ``keys``."""
    session.execute(sa.delete(LoginThrottle).where(col(LoginThrottle.key).in_(keys)))


def set_password_hash(session: Session, annotator_id: int, password_hash: str) -> None:
    """Store a new password hash for an account."""
    session.execute(sa.update(Annotator).where(col(Annotator.id) == annotator_id).values(password_hash=password_hash))
