"""Accounts of the annotation workbench: annotators and admins, argon2-hashed passwords, role checks.

The app keeps the logged-in :class:`Account` in ``st.session_state["auth.account"]``; every core
function of :mod:`automonitor.annotation` and :mod:`automonitor.annotation.agreement` takes the acting
``Account`` and checks its role and ownership itself (authorisation is enforced in the core, not only
by hiding widgets). Passwords are hashed with argon2id (``argon2-cffi``, RFC 9106 parameters) and are
never stored, logged or echoed.

Who may act (:class:`Account`, :data:`SYSTEM`, :func:`require_admin`, :func:`require_account`, the stale-login rule)
and the account list (:func:`account_table`) live in :mod:`automonitor.annotation.roster`, without argon2 or the
ORM, and are importable from here.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import unicodedata
from pathlib import Path
from datetime import datetime, timedelta
from typing import Any, Callable

import sqlalchemy as sa
from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.timestamps import as_utc, utcnow
from automonitor.errors import InputError, NotFound, PermissionDenied
from automonitor.vocab import ROLES
from store import session_scope
from store.models import Annotator, LoginThrottle
from store.queries import accounts as store
from store.queries.rowtypes import AccountEventRow

from automonitor.annotation.roster import (  # re-exported: who may act, the account list (module doc)
    SYSTEM as SYSTEM,
    Account as Account,
    SESSION_COOKIE as SESSION_COOKIE,
    AccountInfo as AccountInfo,
    account_table as account_table,
    any_accounts as any_accounts,
    refuse_stale,
    require_account as require_account,
    require_admin as require_admin,
)

#: the environment variable that makes password hashing cheap; set by the test suite only (tests/conftest.py)
TEST_HASHES_ENV = "AUTOMONITOR_INSECURE_TEST_HASHES"


def make_hasher() -> PasswordHasher:
    """The argon2id hasher: RFC 9106's low-memory parameters (argon2-cffi's
    ``profiles.RFC_9106_LOW_MEMORY``: 3 passes over 64 MiB, 4 lanes; about 0.1-2 s per hash depending
    on the machine's load). Only when ``AUTOMONITOR_INSECURE_TEST_HASHES=1`` (the test suite sets it
    for its own processes, so that the hundreds of accounts it creates do not cost a second each)
    argon2-cffi's ``profiles.CHEAPEST`` (1 pass over 8 KiB): never set it for a real store. Hashes
    made with either verify under both; a login upgrades a hash whose parameters differ
    (``check_needs_rehash``)."""
    if os.environ.get(TEST_HASHES_ENV) == "1":
        return PasswordHasher.from_parameters(profiles.CHEAPEST)
    return PasswordHasher.from_parameters(profiles.RFC_9106_LOW_MEMORY)


hasher = make_hasher()
_dummy: list[str] = []
MAX_NAME = 128


def _dummy_hash() -> str:
    """A hash verified against when the user name is unknown, so that a wrong name costs as much
    time as a wrong password (no user enumeration by timing). Made once, on first use."""
    if not _dummy:
        _dummy.append(hasher.hash("automonitor-dummy-password"))
    return _dummy[0]


def _clean_name(name: str) -> str:
    name = unicodedata.normalize("NFC", name).strip()
    if not name:
        raise InputError("user name must not be empty", field="name")
    if len(name) > MAX_NAME:
        raise InputError(f"user name longer than {MAX_NAME} characters", field="name")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise InputError("user name contains control characters", field="name")
    return name


MIN_PASSWORD = 12
"""Shortest password accepted (characters)."""
MAX_PASSWORD = 1024
"""Longest password accepted (characters; argon2 hashes any length, this bounds the work)."""


def check_password(name: str, password: object) -> str:
    """Return ``password`` when it meets the policy: a string of :data:`MIN_PASSWORD` to
    :data:`MAX_PASSWORD` characters, not only whitespace, and not the user name (compared
    case-insensitively, surrounding whitespace ignored).

    Raises:
        InputError: field ``password``, naming the rule broken (the password itself is never echoed).
    """
    if not isinstance(password, str) or password == "":
        raise InputError("password must not be empty", field="password")
    if not password.strip():
        raise InputError("password must not be only blanks", field="password")
    if len(password) < MIN_PASSWORD:
        raise InputError(f"password must have at least {MIN_PASSWORD} characters", field="password")
    if len(password) > MAX_PASSWORD:
        raise InputError(f"password longer than {MAX_PASSWORD} characters", field="password")
    if password.strip().casefold() == str(name).strip().casefold():
        raise InputError("password must not be the user name", field="password")
    return password


def check_new_account(name: str, role: str, password: str) -> str:
    """The cleaned ``name`` of a new account when ``name``, ``role`` and ``password`` are acceptable, checked
    without a store (the command line checks them before it creates a store for the first account: bad input
    changes nothing, not even the store file).

    Raises:
        InputError: empty/too long name (field ``name``), unknown role (field ``role``), a password the policy
            refuses (field ``password``)."""
    name = _clean_name(name)
    if role not in ROLES:
        raise InputError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}", field="role")
    check_password(name, password)
    return name


def create_user(engine: Engine, name: str, role: str, password: str, *, actor: Account | None = None) -> Account:
    """Create an account and return it; the creation is recorded (``account_event``: who, when).

    Args:
        name: unique user name (NFC-normalised, surrounding whitespace stripped, at most 128 chars).
        role: ``annotator`` or ``admin``.
        password: the clear-text password (:func:`check_password`); only its argon2id hash is stored.
        actor: who creates it: an admin :class:`Account`, or ``None`` for the command line
            (:data:`SYSTEM`).

    Raises:
        InputError: empty/too long/duplicate name (field ``name``), unknown role (field ``role``),
            a password the policy refuses (field ``password``). Nothing is written then.
        PermissionDenied: ``actor`` is not an admin.
    """
    actor = require_admin(actor if actor is not None else SYSTEM)
    name = check_new_account(name, role, password)
    pw_hash = hasher.hash(password)
    try:
        with session_scope(engine) as s:
            check_actor(s, actor)
            if store.name_taken(s, name):
                raise InputError(f"user {name!r} already exists", field="name")
            row = Annotator(name=name, role=role, password_hash=pw_hash)
            s.add(row)
            s.flush()
            acc = _account(row)
            store.record_event(s, acc.id, "created", actor.name, f"role {role}")
            return acc
    except sa.exc.IntegrityError as exc:  # a concurrent create of the same name
        raise InputError(f"user {name!r} already exists", field="name") from exc


# --- login throttle -------------------------------------------------------------------------------
ACCOUNT_FREE_FAILURES = 5
"""Consecutive failed logins of one account name before it is locked."""
CLIENT_FREE_FAILURES = 20
"""Consecutive failed logins from one client (any names) before it is locked."""
BASE_LOCK_SECONDS = 30.0
"""First lock; every further failure doubles it ..."""
MAX_LOCK_SECONDS = 900.0
"""... up to 15 minutes."""
FAILURE_WINDOW_SECONDS = 3600.0
"""A failure older than this (since the last one) starts the count again."""


class LoginThrottled(PermissionDenied):
    """Too many failed logins for this account or client: try again after ``retry_after`` seconds."""

    def __init__(self, retry_after: float, scope: str):
        self.retry_after, self.scope = max(1.0, float(retry_after)), scope
        super().__init__(f"too many failed logins for this {scope}; try again in {int(self.retry_after + 0.999)} s")


def lock_seconds(failures: int, free: int) -> float:
    """Length of the lock after ``failures`` consecutive failures (0 while ``failures < free``):
    ``BASE_LOCK_SECONDS * 2 ** (failures - free)``, at most ``MAX_LOCK_SECONDS``."""
    if failures < free:
        return 0.0
    return min(BASE_LOCK_SECONDS * 2.0 ** min(failures - free, 30), MAX_LOCK_SECONDS)


def _throttle_keys(name: str | None, raw_name: str, client: str | None) -> list[tuple[str, str, int]]:
    """The throttle keys of a login attempt as ``(key, scope, free failures)``: the account name (the
    cleaned one, else the raw text; at most 180 characters) and, when known, the client address."""
    acct = (name if name is not None else raw_name)[:180]
    keys = [(f"account:{acct}", "account", ACCOUNT_FREE_FAILURES)]
    if client:
        keys.append((f"client:{str(client)[:180]}", "client", CLIENT_FREE_FAILURES))
    return keys


def _record_failure(engine: Engine, keys: list[tuple[str, str, int]], now: datetime) -> None:
    """Count one failed login on every throttle key (``(key, scope, free failures)``) and lock the
    keys past their free failures (:func:`lock_seconds`); retried on a concurrent first failure."""
    for attempt in range(5):
        try:
            with session_scope(engine) as s:
                for key, _scope, free in keys:
                    row = s.get(LoginThrottle, key, with_for_update=True)
                    if row is None:
                        row = LoginThrottle(key=key, failures=0)
                    last = as_utc(row.last_failure_at)
                    if last is not None and (now - last).total_seconds() > FAILURE_WINDOW_SECONDS:
                        row.failures = 0
                    row.failures += 1
                    row.last_failure_at = now
                    wait = lock_seconds(row.failures, free)
                    row.locked_until = now + timedelta(seconds=wait) if wait else None
                    s.add(row)
            return
        except (sa.exc.IntegrityError, sa.exc.OperationalError):  # a concurrent first failure
            if attempt == 4:
                raise


def authenticate(
    engine: Engine,
    name: str,
    password: str,
    *,
    client: str | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Account | None:
    """The account for ``name`` when ``password`` matches its hash, else ``None``.

    An unknown or inactive user costs one argon2 verification like a wrong password does (no user
    enumeration by timing). The password is never logged. A hash made with outdated parameters is
    upgraded on a successful login.

    Throttle (recorded in the store, table ``login_throttle``): after ``ACCOUNT_FREE_FAILURES``
    consecutive failures for a name (known or not), or ``CLIENT_FREE_FAILURES`` from one ``client``
    (e.g. the browser's address), that key is locked for ``lock_seconds`` (30 s, doubling per further
    failure, at most 15 min); a login while locked raises :class:`LoginThrottled` without checking the
    password. A success clears both keys and is recorded in ``account_event`` (action ``login``, the
    account as its own actor; ``users history`` lists it). ``clock``: a callable giving the aware UTC ``datetime`` now
    (injectable for tests; default the system clock).
    """
    now = (clock or utcnow)()
    clean: str | None
    try:
        clean = _clean_name(name)
    except InputError:
        clean = None
    keys = _throttle_keys(clean, name, client)
    _check_throttle(engine, keys, now)
    row = _find_user(engine, clean) if clean is not None else None
    target = row.password_hash if (row is not None and row.active) else _dummy_hash()
    try:
        ok = hasher.verify(target, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        ok = False
    if not ok or row is None or not row.active:
        _record_failure(engine, keys, now)
        return None
    with session_scope(engine) as s:
        store.clear_throttle(s, [k for k, _, _ in keys])
        store.record_event(s, int(row.id or 0), "login", row.name, None, at=now)
    if hasher.check_needs_rehash(row.password_hash):
        with session_scope(engine) as s:
            store.set_password_hash(s, _account(row).id, hasher.hash(password))
    return _account(row)


def _check_throttle(engine: Engine, keys: list[tuple[str, str, int]], now: datetime) -> None:
    """Refuse a login while any of its throttle keys is locked.

    Raises:
        LoginThrottled: a key is locked at ``now`` (with the seconds left and the key's scope).
    """
    with session_scope(engine) as s:
        for key, scope, _free in keys:
            row = s.get(LoginThrottle, key)
            until = as_utc(row.locked_until) if row is not None else None
            if until is not None and until > now:
                raise LoginThrottled((until - now).total_seconds(), scope)


def _find_user(engine: Engine, name: str) -> Annotator | None:
    """The stored account row called ``name`` (detached from its session), or ``None``."""
    with session_scope(engine) as s:
        row = store.account_by_name(s, name)
        if row is not None:
            s.expunge(row)
        return row


def _account(row: Annotator) -> Account:
    """The :class:`Account` of a stored ``annotator`` row, as a login of its current session epoch."""
    if row.id is None:  # pragma: no cover - a stored (flushed) row always has its id
        raise RuntimeError(f"account {row.name!r} has no id")
    return Account(id=row.id, name=row.name, role=row.role, epoch=int(row.session_epoch or 0))


def check_actor(session: Session, account: Account | None) -> Annotator | None:
    """Verify inside ``session`` that ``account`` is a current, active account with the same name and
    role as stored (a stale or forged ``Account`` is refused). Returns the ``Annotator`` row, or
    ``None`` for the CLI's :data:`SYSTEM` admin.

    A login (an ``Account`` with an ``epoch``) is also refused once its sessions were ended (logout in
    any tab, password change, deactivation, an admin's :func:`end_sessions`): every core action of a
    stale page fails here, even one run from a widget callback before the page checks its login.

    Raises:
        PermissionDenied: not an ``Account``, unknown id, renamed, role changed, deactivated, or its
            sessions were ended.
    """
    account = require_account(account)
    if account is SYSTEM:
        return None
    row = session.get(Annotator, account.id)
    refuse_stale(account, row)
    return row


# ------------------------------------------------------------------ login sessions (survive a reload)
#: The browser cookie that keeps a login across reloads is :data:`SESSION_COOKIE` (re-exported from
#: :mod:`automonitor.annotation.roster`, which the app reads it from without this module's imports).
#: Default lifetime of a login session (``AUTOMONITOR_SESSION_HOURS`` overrides it).
SESSION_HOURS = 12.0
_SESSION_SALT = "automonitor.login-session.v1"


def session_secret() -> str:
    """The key that signs login-session cookies: ``$AUTOMONITOR_SESSION_SECRET`` when set, else the
    content of a generated file (``$AUTOMONITOR_SECRET_FILE``, default
    ``~/.config/automonitor/session-secret``), created once with 32 random bytes and mode 0600
    (``O_CREAT | O_EXCL``, so two processes never write different keys). Raises ``OSError`` when the
    file cannot be created or read."""
    env = os.environ.get("AUTOMONITOR_SESSION_SECRET")
    if env:
        return env
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "automonitor" / "session-secret"
    path = Path(os.environ.get("AUTOMONITOR_SECRET_FILE") or base)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
    return path.read_text().strip()


def session_max_age() -> float:
    """Lifetime of a login session in seconds (``$AUTOMONITOR_SESSION_HOURS``, default 12 h)."""
    try:
        hours = float(os.environ.get("AUTOMONITOR_SESSION_HOURS") or SESSION_HOURS)
    except ValueError:
        hours = SESSION_HOURS
    return max(60.0, hours * 3600.0)


#: A revoked token is remembered at least this long (seconds), even when sessions are shorter.
REVOKED_MIN_RETENTION_S = 7 * 24 * 3600.0


def revoked_retention() -> timedelta:
    """How long a logout is remembered in ``revoked_session``: the longer of :func:`session_max_age`
    and :data:`REVOKED_MIN_RETENTION_S` (7 days). A token revoked longer ago than that is expired by
    its own age; the 7-day floor keeps a logout in force if the session lifetime is raised later to
    at most a week."""
    return timedelta(seconds=max(session_max_age(), REVOKED_MIN_RETENTION_S))


def _password_tag(password_hash: str) -> str:
    """A short digest of the stored argon2 hash: a token dies when the password changes (the
    password itself, or its hash, is never in a token)."""
    return hashlib.sha256(password_hash.encode()).hexdigest()[:16]


def issue_session(engine: Engine, account: Account, secret: str | None = None) -> str:
    """A signed, timestamped login token for ``account`` (``itsdangerous.URLSafeTimedSerializer``,
    HMAC-SHA1 over ``{"id", "name", "role", "pw": digest of the stored hash, "g": the account's session
    epoch, "n": random nonce}``).

    Raises:
        PermissionDenied: ``account`` is not a stored, active account (e.g. :data:`SYSTEM`), or its
            sessions were ended since it logged in.
    """
    with session_scope(engine) as s:
        row = check_actor(s, account)
        if row is None:
            raise PermissionDenied("the command-line admin has no login session")
        tag, epoch = _password_tag(row.password_hash), int(row.session_epoch or 0)
    payload = {
        "id": account.id,
        "name": account.name,
        "role": account.role,
        "pw": tag,
        "g": epoch,
        "n": secrets.token_hex(8),
    }
    return URLSafeTimedSerializer(secret or session_secret(), salt=_SESSION_SALT).dumps(payload)


def _token_data(token: str | None, secret: str | None, *, max_age: float | None) -> dict[str, Any] | None:
    """The payload of a login token signed with ``secret`` (default :func:`session_secret`) and at most
    ``max_age`` seconds old (``None``: any age), or ``None`` when it is missing, too long, forged, too
    old, not a dict or lacks an int ``id``, a str ``name`` or a non-empty str nonce ``n``."""
    if not token or len(token) > 4096:
        return None
    ser = URLSafeTimedSerializer(secret or session_secret(), salt=_SESSION_SALT)
    try:
        data = ser.loads(token, max_age=int(max_age) if max_age is not None else None)
    except BadSignature:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("id"), int) or not isinstance(data.get("name"), str):
        return None
    nonce = data.get("n")
    if not isinstance(nonce, str) or not nonce or len(nonce) > 256:
        return None  # a token without its nonce could never be revoked: refused
    return data


def _nonce_hash(nonce: str) -> str:
    """The key of a token in ``revoked_session``: SHA-256 (hex) of its nonce."""
    return hashlib.sha256(nonce.encode()).hexdigest()


def end_session(
    engine: Engine, token: str | None, secret: str | None = None, *, clock: Callable[[], datetime] | None = None
) -> bool:
    """Log out: end *every* live login session of the token's account, server-side. The account's
    session epoch is raised (so every token and every logged-in page of it, in any tab or browser, is
    refused from now on: :func:`resume_session`, :func:`check_actor`) and the token's nonce is recorded
    (table ``revoked_session``); the logout is recorded in ``account_event``.

    Returns True when the token is (now or already) ended, False when there was nothing to end: no
    token, a forged or unsigned one, or one without nonce (which :func:`resume_session` refuses
    anyway). A token already outlived by an earlier logout ends nothing more (idempotent; safe against
    a concurrent logout of the same token). ``clock``: aware UTC ``datetime`` now (tests; default the
    system clock).

    Each logout also prunes the rows revoked more than :func:`revoked_retention` ago: their tokens
    are older than any login lifetime and refused by their age alone, so the table stays small.
    """
    data = _token_data(token, secret, max_age=None)
    if data is None:
        return False
    key, now = _nonce_hash(data["n"]), (clock or utcnow)()
    try:
        with session_scope(engine) as s:
            if store.revoke_session(s, key, data["id"], now):
                epoch = data.get("g", 0)
                if store.end_sessions(s, data["id"], only_epoch=epoch if isinstance(epoch, int) else 0):
                    store.record_event(s, data["id"], "logout", str(data["name"])[:128], None, at=now)
            store.prune_revoked_sessions(s, now - revoked_retention())
    except sa.exc.IntegrityError:  # the same token logged out concurrently: revoked all the same
        with session_scope(engine) as s:
            if not store.session_revoked(s, key):
                raise
    return True


def resume_session(engine: Engine, token: str | None, secret: str | None = None) -> Account | None:
    """The :class:`Account` of a login token made by :func:`issue_session`, or ``None`` when the
    token is missing, forged, older than :func:`session_max_age`, has no nonce, was ended by
    :func:`end_session` (logout, in this or any other tab) or :func:`end_sessions`, or its account was
    renamed, deactivated, changed role or changed password since."""
    data = _token_data(token, secret, max_age=session_max_age())
    if data is None:
        return None
    epoch = data.get("g", 0)
    if not isinstance(epoch, int):
        return None
    acc = Account(id=data["id"], name=data["name"], role=str(data.get("role")), epoch=epoch)
    try:
        with session_scope(engine) as s:
            if store.session_revoked(s, _nonce_hash(data["n"])):
                return None
            row = check_actor(s, acc)
            if row is None or _password_tag(row.password_hash) != data.get("pw"):
                return None
    except PermissionDenied:
        return None
    return acc


def login_alive(engine: Engine, account: Account | None) -> bool:
    """True while ``account`` (a page's logged-in account) may still act: stored, active, unchanged
    and its sessions not ended since it logged in (:func:`check_actor`). Pages call it on every rerun,
    so another tab lands on the login page at its next action after a logout."""
    try:
        with session_scope(engine) as s:
            check_actor(s, account)
    except PermissionDenied:
        return False
    return True


# ------------------------------------------------------------------ account lifecycle (admin actions)
def account_row(s: Session, name: str) -> Annotator:
    """The stored account row called ``name`` inside session ``s`` (no permission check: callers check
    the actor first).

    Raises:
        NotFound: no such user. InputError: an invalid name.
    """
    row = store.account_by_name(s, _clean_name(name))
    if row is None:
        raise NotFound(f"no user {name!r}")
    return row


def _self_or_admin(actor: Account, name: str) -> None:
    if not actor.is_admin and _clean_name(name) != actor.name:
        raise PermissionDenied("only an admin may change another user's account")


def set_password(engine: Engine, actor: Account, name: str, password: str) -> None:
    """Give ``name`` a new password (an admin for anyone, a user for themself). Every login session of
    that account ends (its tokens carry the old hash's digest and its epoch is raised); recorded in
    ``account_event``.

    Raises:
        InputError: the policy refuses the password (:func:`check_password`, field ``password``).
        PermissionDenied: an annotator changing someone else's password; a stale ``actor``.
        NotFound: no such user.
    """
    require_account(actor)
    _self_or_admin(actor, name)
    check_password(_clean_name(name), password)
    pw_hash = hasher.hash(password)
    with session_scope(engine) as s:
        check_actor(s, actor)
        row = account_row(s, name)
        store.set_password_hash(s, int(row.id or 0), pw_hash)
        store.end_sessions(s, int(row.id or 0))
        store.record_event(s, int(row.id or 0), "password_changed", actor.name)


def end_sessions(engine: Engine, actor: Account, name: str) -> None:
    """End every login session of ``name`` now (an admin for anyone, a user for themself): each open
    page of that account lands on the login page at its next action and its writes are refused.
    Recorded in ``account_event``.

    Raises:
        PermissionDenied / NotFound: as :func:`set_password`.
    """
    require_account(actor)
    _self_or_admin(actor, name)
    with session_scope(engine) as s:
        check_actor(s, actor)
        row = account_row(s, name)
        store.end_sessions(s, int(row.id or 0))
        store.record_event(s, int(row.id or 0), "sessions_ended", actor.name)


def set_active(engine: Engine, actor: Account, name: str, active: bool) -> None:
    """Deactivate (``active=False``) or reactivate an account (admin only). A deactivated account
    cannot log in, its sessions end at once, it gets no new assignments; its submitted labels stay
    (with its name: provenance) and its open assignments can be moved to others
    (:func:`automonitor.annotation.assignment.reassign_open`). Recorded in ``account_event``; a no-op
    change is refused.

    Raises:
        InputError: the account is already in that state, or this would deactivate the last active
            admin (field ``name``).
        PermissionDenied: ``actor`` is not an admin. NotFound: no such user.
    """
    require_admin(actor)
    with session_scope(engine) as s:
        check_actor(s, actor)
        row = account_row(s, name)
        if bool(row.active) == active:
            raise InputError(f"user {row.name!r} is already {'active' if active else 'deactivated'}", field="name")
        if not active and row.role == "admin" and store.active_admins(s) <= 1:
            raise InputError("the last active admin cannot be deactivated", field="name")
        store.set_active(s, int(row.id or 0), active)
        store.end_sessions(s, int(row.id or 0))
        store.record_event(s, int(row.id or 0), "reactivated" if active else "deactivated", actor.name)


def account_events(engine: Engine, actor: Account, name: str | None = None) -> list[AccountEventRow]:
    """The recorded account actions (admin only), oldest first: ``{"account", "action", "actor",
    "detail", "at"}``; ``name``: one account's only.

    Raises:
        PermissionDenied: ``actor`` is not an admin. NotFound: no such user.
    """
    require_admin(actor)
    with session_scope(engine) as s:
        check_actor(s, actor)
        aid = int(account_row(s, name).id or 0) if name is not None else None
        return store.account_events(s, aid)
