"""Who may act, and the account list: the acting :class:`Account` (and the command line's :data:`SYSTEM`), the
role checks every core function of the annotation workbench makes, the rule that refuses a stale or forged login,
:func:`account_table` (``automonitor users list``, the app's Accounts page), and what the app asks on every page
before anyone logs in: :func:`any_accounts` and the session cookie's name :data:`SESSION_COOKIE`.

Kept apart from :mod:`automonitor.annotation.accounts` (passwords, login sessions, account changes: argon2,
itsdangerous and the ORM), which re-exports every name here, so that listing the accounts reads the store
through SQLAlchemy Core (:mod:`store.queries.account_list`) with the same permission checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, TypedDict

from automonitor.errors import PermissionDenied
from automonitor.timestamps import as_utc
from automonitor.vocab import ROLES
from store.queries import account_list

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine, Row

    from store.models import Annotator
    from store.queries.rowtypes import LastEvent

__all__ = [
    "SYSTEM",
    "Account",
    "AccountInfo",
    "account_table",
    "check_listing_actor",
    "refuse_stale",
    "require_account",
    "require_admin",
]


@dataclass(frozen=True)
class Account:
    """A logged-in user: ``id`` (``annotator.id``), ``name`` and ``role`` (``annotator`` | ``admin``)."""

    id: int
    name: str
    role: str
    #: the account's session generation when this login was made (``annotator.session_epoch``); a
    #: logged-in page whose epoch is older is refused (:func:`refuse_stale`, by
    #: :func:`automonitor.annotation.accounts.check_actor`; ``None``: not a login, e.g. the command line's
    #: :data:`SYSTEM`)
    epoch: int | None = field(default=None, compare=False)

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


# The local command line acts as this trusted admin (whoever can run the CLI can open the store
# directly). Core functions accept it only by identity (``actor is SYSTEM``), never by equal fields.
SYSTEM = Account(id=0, name="system", role="admin")


def require_admin(account: Account | None) -> Account:
    """Return ``account`` if it is an admin; raise :class:`PermissionDenied` otherwise (also for
    ``None`` or a non-``Account``)."""
    if not isinstance(account, Account) or account.role != "admin":
        raise PermissionDenied("this action needs an admin account")
    return account


def require_account(account: Account | None) -> Account:
    """Return ``account`` if it is a logged-in :class:`Account` of a known role, else raise
    :class:`PermissionDenied`."""
    if not isinstance(account, Account) or account.role not in ROLES:
        raise PermissionDenied("not logged in")
    return account


def refuse_stale(account: Account, row: Annotator | Row[int, str, str, bool, int] | None) -> None:
    """Refuse ``account`` unless ``row`` (its stored ``annotator`` row, ORM or Core: ``None`` when there is none) is a
    current, active account with the same name and role; a login (an ``account`` with an ``epoch``) also once
    its sessions were ended (logout in any tab, password change, deactivation, an admin's end of sessions).

    Raises:
        PermissionDenied: unknown id, renamed, role changed, deactivated, or its sessions were ended.
    """
    if row is None or not row.active or row.name != account.name or row.role != account.role:
        raise PermissionDenied("unknown, changed or inactive account; log in again")
    if account.epoch is not None and account.epoch != int(row.session_epoch or 0):
        raise PermissionDenied("this login session was ended (logout or an admin); log in again")


def check_listing_actor(conn: Connection, account: Account | None) -> None:
    """Verify on ``conn`` that ``account`` is a current, active account as stored (:func:`refuse_stale`; the
    command line's :data:`SYSTEM` admin is not stored): what :func:`automonitor.annotation.accounts.check_actor`
    checks inside a session, read through SQLAlchemy Core.

    Raises:
        PermissionDenied: not an ``Account``, unknown id, renamed, role changed, deactivated, or its
            sessions were ended.
    """
    account = require_account(account)
    if account is SYSTEM:
        return
    refuse_stale(account, account_list.account_state(conn, account.id))


#: The name of the browser cookie that carries a login-session token (:func:`automonitor.annotation.accounts.issue_session`).
SESSION_COOKIE = "automonitor_session"


def any_accounts(engine: Engine) -> bool:
    """True when at least one account (of any role) exists in the store (the app offers a first-admin
    set-up otherwise). Core only (:func:`store.queries.account_list.has_accounts`): a workbench without accounts
    imports neither the ORM nor :mod:`store.models` to ask it."""
    with engine.connect() as conn:
        return account_list.has_accounts(conn)


class AccountInfo(TypedDict):
    """One account as :func:`account_table` lists it."""

    id: int | None
    name: str
    role: str
    active: bool
    created_at: datetime
    last_event: LastEvent | None


def account_table(engine: Engine, actor: Account, *, include_inactive: bool = True) -> list[AccountInfo]:
    """Every account (admin only) as ``{"id", "name", "role", "active", "created_at", "last_event":
    {"action", "actor", "at"} | None}``, ordered by name; ``include_inactive=False``: active ones only.

    Raises:
        PermissionDenied: ``actor`` is not an admin (or a stale login, :func:`check_listing_actor`).
    """
    require_admin(actor)
    with engine.connect() as conn:  # Core only: the list imports neither the ORM nor the tables' classes
        check_listing_actor(conn, actor)
        last = account_list.last_events(conn)
        return [
            AccountInfo(
                id=r.id,
                name=r.name,
                role=r.role,
                active=bool(r.active),
                created_at=as_utc(r.created_at),
                last_event=last.get(int(r.id or 0)),
            )
            for r in account_list.all_accounts(conn)
            if include_inactive or r.active
        ]
