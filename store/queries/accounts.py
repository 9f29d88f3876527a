"""Store queries of the accounts (``annotator`` rows), the login throttle and revoked login sessions.

Queries only: the store checks no permission; :mod:`automonitor.annotation.accounts` checks the acting account
first. Functions run inside the caller's session (or connection) and commit nothing.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Session, col

from store.models import Annotator, LoginThrottle, RevokedSession


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


def revoke_session(session: Session, nonce_hash: str, account_id: int, revoked_at: datetime) -> bool:
    """Record a revoked login session (``revoked_session`` row); True when this call added it, False
    when ``nonce_hash`` was already recorded (the existing row is kept). A concurrent insert of the same
    hash surfaces as ``IntegrityError`` at flush/commit."""
    if session.get(RevokedSession, nonce_hash) is not None:
        return False
    session.add(RevokedSession(nonce_hash=nonce_hash, account_id=account_id, revoked_at=revoked_at))
    session.flush()
    return True


def prune_revoked_sessions(session: Session, before: datetime) -> int:
    """Delete the ``revoked_session`` rows revoked before ``before``; returns how many went."""
    res = session.execute(sa.delete(RevokedSession).where(col(RevokedSession.revoked_at) < before))
    return int(getattr(res, "rowcount", 0) or 0)


def session_revoked(session: Session, nonce_hash: str) -> bool:
    """True when a ``revoked_session`` row holds ``nonce_hash``."""
    q = sa.select(col(RevokedSession.nonce_hash)).where(col(RevokedSession.nonce_hash) == nonce_hash)
    return session.execute(q).first() is not None
