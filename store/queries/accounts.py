"""Store queries of the accounts (``annotator`` rows), the login throttle and revoked login sessions.

The account list's reads (``users list``) are :mod:`store.queries.account_list`'s (Core, no ORM). Queries only:
the store checks no permission; :mod:`automonitor.annotation.accounts` checks the acting account
first. Functions run inside the caller's session (or connection) and commit nothing.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Session, col

from automonitor.timestamps import as_utc, utcnow
from store.models import AccountEvent, Annotator, LoginThrottle, RevokedSession
from store.queries.account_list import has_accounts as has_accounts  # re-exported: Core, the app asks it on every page
from store.queries.rowtypes import AccountEventRow


def name_taken(session: Session, name: str) -> bool:
    """True when an account (active or not) is called ``name``."""
    return session.execute(sa.select(col(Annotator.id)).where(col(Annotator.name) == name)).first() is not None


def account_by_name(session: Session, name: str) -> Annotator | None:
    """The account row called ``name`` (active or not), or ``None``."""
    return session.execute(sa.select(Annotator).where(col(Annotator.name) == name)).scalars().first()


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


def active_admins(session: Session) -> int:
    """How many active admin accounts there are."""
    q = sa.select(sa.func.count()).where(col(Annotator.role) == "admin", col(Annotator.active).is_(True))
    return int(session.execute(q).scalar_one())


def set_active(session: Session, annotator_id: int, active: bool) -> None:
    """Mark an account active or deactivated."""
    session.execute(sa.update(Annotator).where(col(Annotator.id) == annotator_id).values(active=active))


def end_sessions(session: Session, annotator_id: int, *, only_epoch: int | None = None) -> bool:
    """Raise the account's ``session_epoch`` by one (in the database, so concurrent calls each count);
    with ``only_epoch`` only while the epoch still is that value. True when a row changed."""
    q = sa.update(Annotator).where(col(Annotator.id) == annotator_id)
    if only_epoch is not None:
        q = q.where(col(Annotator.session_epoch) == only_epoch)
    res = session.execute(q.values(session_epoch=col(Annotator.session_epoch) + 1))
    return bool(getattr(res, "rowcount", 0))


def record_event(
    session: Session,
    account_id: int,
    action: str,
    actor: str,
    detail: str | None = None,
    *,
    at: datetime | None = None,
) -> None:
    """Append an ``account_event`` row (``at`` default now)."""
    session.add(AccountEvent(account_id=account_id, action=action, actor=actor, detail=detail, at=at or utcnow()))
    session.flush()


def account_events(session: Session, account_id: int | None = None) -> list[AccountEventRow]:
    """The ``account_event`` rows (with the account's ``name``), oldest first; ``account_id``: one
    account's only."""
    q = (
        sa.select(
            col(Annotator.name),
            col(AccountEvent.action),
            col(AccountEvent.actor),
            col(AccountEvent.detail),
            col(AccountEvent.at),
        )
        .join(Annotator, col(Annotator.id) == col(AccountEvent.account_id))
        .order_by(col(AccountEvent.at), col(AccountEvent.id))
    )
    if account_id is not None:
        q = q.where(col(AccountEvent.account_id) == account_id)
    return [
        AccountEventRow(account=r.name, action=r.action, actor=r.actor, detail=r.detail, at=as_utc(r.at))
        for r in session.execute(q)
    ]
