"""Accounts of the annotation workbench: annotators and admins, argon2-hashed passwords, role checks.

The app keeps the logged-in :class:`Account` in ``st.session_state["auth.account"]``; every core
function of :mod:`automonitor.annotation` and :mod:`automonitor.agreement` takes the acting
``Account`` and checks its role and ownership itself (authorisation is enforced in the core, not only
by hiding widgets). Passwords are hashed with argon2id (``argon2-cffi``, RFC 9106 parameters) and are
never stored, logged or echoed.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import sqlalchemy as sa
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy.engine import Engine

from automonitor.errors import InputError, PermissionDenied
from automonitor.vocab import ROLES

_hasher = PasswordHasher()
_dummy: list[str] = []
MAX_NAME = 128


def _dummy_hash() -> str:
    """A hash verified against when the user name is unknown, so that a wrong name costs as much
    time as a wrong password (no user enumeration by timing). Made once, on first use."""
    if not _dummy:
        _dummy.append(_hasher.hash("automonitor-dummy-password"))
    return _dummy[0]


@dataclass(frozen=True)
class Account:
    """A logged-in user: ``id`` (``annotator.id``), ``name`` and ``role`` (``annotator`` | ``admin``)."""

    id: int
    name: str
    role: str

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


# The local command line acts as this trusted admin (whoever can run the CLI can open the store
# directly). Core functions accept it only by identity (``actor is SYSTEM``), never by equal fields.
SYSTEM = Account(id=0, name="system", role="admin")


def _clean_name(name: str) -> str:
    if not isinstance(name, str):
        raise InputError("user name must be a string", field="name")
    name = unicodedata.normalize("NFC", name).strip()
    if not name:
        raise InputError("user name must not be empty", field="name")
    if len(name) > MAX_NAME:
        raise InputError(f"user name longer than {MAX_NAME} characters", field="name")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise InputError("user name contains control characters", field="name")
    return name


def any_accounts(engine: Engine) -> bool:
    """True when at least one account (of any role) exists in the store (the app offers a first-admin
    set-up otherwise)."""
    from store.models import Annotator

    with engine.connect() as conn:
        return conn.execute(sa.select(Annotator.id).limit(1)).first() is not None


def create_user(engine: Engine, name: str, role: str, password: str) -> Account:
    """Create an account and return it.

    Args:
        name: unique user name (NFC-normalised, surrounding whitespace stripped, at most 128 chars).
        role: ``annotator`` or ``admin``.
        password: the clear-text password; only its argon2id hash is stored.

    Raises:
        InputError: empty/too long/duplicate name (field ``name``), unknown role (field ``role``),
            empty password (field ``password``). Nothing is written then.
    """
    from store import session_scope
    from store.models import Annotator

    name = _clean_name(name)
    if role not in ROLES:
        raise InputError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}", field="role")
    if not isinstance(password, str) or password == "":
        raise InputError("password must not be empty", field="password")
    pw_hash = _hasher.hash(password)
    try:
        with session_scope(engine) as s:
            if s.execute(sa.select(Annotator.id).where(Annotator.name == name)).first() is not None:
                raise InputError(f"user {name!r} already exists", field="name")
            row = Annotator(name=name, role=role, password_hash=pw_hash)
            s.add(row)
            s.flush()
            return Account(id=row.id, name=row.name, role=row.role)
    except sa.exc.IntegrityError as exc:  # a concurrent create of the same name
        raise InputError(f"user {name!r} already exists", field="name") from exc


def authenticate(engine: Engine, name: str, password: str) -> Account | None:
    """The account for ``name`` when ``password`` matches its hash, else ``None``.

    An unknown or inactive user costs one argon2 verification like a wrong password does (no user
    enumeration by timing). The password is never logged. A hash made with outdated parameters is
    upgraded on a successful login.
    """
    from store import session_scope
    from store.models import Annotator

    try:
        name = _clean_name(name)
    except InputError:
        name = None
    if not isinstance(password, str):
        password = ""
    row = None
    if name is not None:
        with session_scope(engine) as s:
            row = s.execute(sa.select(Annotator).where(Annotator.name == name)).scalars().first()
            if row is not None:
                s.expunge(row)
    target = row.password_hash if (row is not None and row.active) else _dummy_hash()
    try:
        ok = _hasher.verify(target, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        ok = False
    if not ok or row is None or not row.active:
        return None
    if _hasher.check_needs_rehash(row.password_hash):
        with session_scope(engine) as s:
            s.execute(sa.update(Annotator).where(Annotator.id == row.id)
                      .values(password_hash=_hasher.hash(password)))
    return Account(id=row.id, name=row.name, role=row.role)


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


def check_actor(session, account: Account | None):
    """Verify inside ``session`` that ``account`` is a current, active account with the same name and
    role as stored (a stale or forged ``Account`` is refused). Returns the ``Annotator`` row, or
    ``None`` for the CLI's :data:`SYSTEM` admin.

    Raises:
        PermissionDenied: not an ``Account``, unknown id, renamed, role changed, or deactivated.
    """
    from store.models import Annotator

    account = require_account(account)
    if account is SYSTEM:
        return None
    row = session.get(Annotator, account.id)
    if row is None or not row.active or row.name != account.name or row.role != account.role:
        raise PermissionDenied("unknown, changed or inactive account; log in again")
    return row


def list_accounts(engine: Engine, actor: Account) -> list[Account]:
    """All active accounts, ordered by name (admin only).

    Raises:
        PermissionDenied: ``actor`` is not an admin.
    """
    from store import session_scope
    from store.models import Annotator

    require_admin(actor)
    with session_scope(engine) as s:
        check_actor(s, actor)
        rows = s.execute(sa.select(Annotator).where(Annotator.active.is_(True))
                         .order_by(Annotator.name)).scalars().all()
        return [Account(id=r.id, name=r.name, role=r.role) for r in rows]


def get_account(engine: Engine, actor: Account, name: str) -> Account:
    """The account called ``name`` (admin only; an annotator may look up only themself).

    Raises:
        PermissionDenied: an annotator asking for someone else.
        NotFound: no such user.
    """
    from automonitor.errors import NotFound
    from store import session_scope
    from store.models import Annotator

    require_account(actor)
    if not actor.is_admin and name != actor.name:
        raise PermissionDenied("annotators can only look up their own account")
    with session_scope(engine) as s:
        check_actor(s, actor)
        row = s.execute(sa.select(Annotator).where(Annotator.name == name)).scalars().first()
        if row is None:
            raise NotFound(f"no user {name!r}")
        return Account(id=row.id, name=row.name, role=row.role)
