"""Login sessions that survive a reload: signed, expiring tokens bound to the account,
never carrying the password; the secret comes from the environment or a generated 0600 file."""

from __future__ import annotations

import stat

import pytest

from automonitor.annotation import accounts
from automonitor.annotation.accounts import SYSTEM, issue_session, resume_session
from automonitor.errors import PermissionDenied
from store import session_scope
from store.models import Annotator

from helpers import account_named, fast_user


def test_token_resumes_the_account_and_dies_when_forged_expired_or_changed(engine, monkeypatch):
    monkeypatch.setenv("AUTOMONITOR_SESSION_SECRET", "k" * 32)
    anna = fast_user(engine, "anna", "annotator")
    tok = issue_session(engine, anna)
    assert resume_session(engine, tok) == anna
    assert issue_session(engine, anna) != tok  # a nonce per login: per-browser tokens
    assert resume_session(engine, tok[:-2] + ("AA" if tok[-2:] != "AA" else "BB")) is None  # forged
    assert resume_session(engine, tok, secret="another-secret") is None
    assert resume_session(engine, None) is None and resume_session(engine, "garbage") is None
    # expired: a lifetime of one minute, a clock two minutes ahead
    monkeypatch.setenv("AUTOMONITOR_SESSION_HOURS", str(1 / 60))
    import itsdangerous.timed as timed

    real = timed.TimestampSigner.get_timestamp
    monkeypatch.setattr(timed.TimestampSigner, "get_timestamp", lambda self: real(self) + 120)
    assert resume_session(engine, tok) is None
    monkeypatch.undo()
    monkeypatch.setenv("AUTOMONITOR_SESSION_SECRET", "k" * 32)
    assert resume_session(engine, tok) == anna
    # a password change or a deactivation ends every session of the account
    with session_scope(engine) as s:
        row = s.get(Annotator, anna.id)
        row.password_hash = row.password_hash + "x"
    assert resume_session(engine, tok) is None
    tok2 = issue_session(engine, anna)
    with session_scope(engine) as s:
        s.get(Annotator, anna.id).active = False
    assert resume_session(engine, tok2) is None
    with pytest.raises(PermissionDenied):
        issue_session(engine, SYSTEM)


def test_the_token_never_holds_the_password_or_its_hash(engine, monkeypatch):
    from itsdangerous import URLSafeTimedSerializer

    monkeypatch.setenv("AUTOMONITOR_SESSION_SECRET", "s" * 32)
    bob = fast_user(engine, "bob", "admin")
    tok = issue_session(engine, bob)
    valid, data = URLSafeTimedSerializer("wrong key", salt=accounts._SESSION_SALT).loads_unsafe(tok)
    assert valid is False  # readable by anyone (it is only signed), so it holds nothing secret
    assert set(data) == {"id", "name", "role", "pw", "g", "n"} and data["name"] == "bob"
    with session_scope(engine) as s:
        h = s.get(Annotator, bob.id).password_hash
    assert h not in tok and "pw" != data["pw"] and len(data["pw"]) == 16


def test_generated_secret_file_is_private_and_stable(tmp_path, monkeypatch):
    monkeypatch.delenv("AUTOMONITOR_SESSION_SECRET", raising=False)
    path = tmp_path / "cfg" / "secret"
    monkeypatch.setenv("AUTOMONITOR_SECRET_FILE", str(path))
    first = accounts.session_secret()
    assert len(first) == 64 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert accounts.session_secret() == first
    monkeypatch.setenv("AUTOMONITOR_SESSION_SECRET", "from-env")
    assert accounts.session_secret() == "from-env"


def test_logout_revokes_the_token_in_the_store_for_every_copy(engine, monkeypatch):
    """A logout (``end_session``) records the token's nonce in ``revoked_session``: every copy of that
    cookie is refused from then on, before it expires, and so is every other login of that account (its
    session epoch is raised: a logout ends every live session of the login, issue 37)."""
    import sqlalchemy as sa
    from itsdangerous import URLSafeTimedSerializer

    from automonitor.annotation.accounts import end_session
    from store.models import RevokedSession

    monkeypatch.setenv("AUTOMONITOR_SESSION_SECRET", "r" * 32)
    anna = fast_user(engine, "anna", "annotator")
    tok, other = issue_session(engine, anna), issue_session(engine, anna)  # two browsers
    kept_copy = str(tok)  # e.g. another tab, or a cookie pasted elsewhere
    assert resume_session(engine, kept_copy) == anna
    assert end_session(engine, tok) is True
    assert resume_session(engine, kept_copy) is None
    assert resume_session(engine, other) is None  # another browser's login of anna ends too
    assert end_session(engine, tok) is True  # idempotent
    with session_scope(engine) as s:
        rows = s.execute(sa.select(RevokedSession)).scalars().all()
        assert [(r.account_id, len(r.nonce_hash)) for r in rows] == [(anna.id, 64)]
        assert rows[0].revoked_at is not None
        _, data = URLSafeTimedSerializer("x", salt=accounts._SESSION_SALT).loads_unsafe(tok)
        assert data["n"] not in rows[0].nonce_hash  # the nonce is stored hashed
    # nothing to revoke: no token, a forged one, one signed with another key
    assert end_session(engine, None) is False and end_session(engine, "garbage") is False
    assert end_session(engine, other[:-2] + ("AA" if other[-2:] != "AA" else "BB")) is False
    assert end_session(engine, other, secret="another-secret") is False
    other = issue_session(engine, account_named(engine, "anna"))  # a new login
    assert resume_session(engine, other) == anna
    # a correctly signed token without nonce (or with an empty one) is refused and cannot be revoked
    ser = URLSafeTimedSerializer("r" * 32, salt=accounts._SESSION_SALT)
    with session_scope(engine) as s:
        pw = accounts._password_tag(s.get(Annotator, anna.id).password_hash)
    base = {"id": anna.id, "name": "anna", "role": "annotator", "pw": pw, "g": 1}
    for bad in (base, {**base, "n": ""}, {**base, "n": 7}):
        assert resume_session(engine, ser.dumps(bad)) is None
        assert end_session(engine, ser.dumps(bad)) is False
    assert resume_session(engine, ser.dumps({**base, "n": "abcd"})) == anna  # same payload with a nonce


def test_a_logout_prunes_revocations_older_than_any_login(engine, monkeypatch):
    """``revoked_session`` does not grow for ever: a logout deletes the rows revoked longer ago than
    ``revoked_retention()`` (a token that old is refused by its age), and keeps the recent ones."""
    from datetime import timedelta

    import sqlalchemy as sa

    from automonitor.annotation.accounts import end_session, revoked_retention
    from automonitor.timestamps import as_utc, utcnow
    from store.models import RevokedSession

    monkeypatch.setenv("AUTOMONITOR_SESSION_SECRET", "p" * 32)
    monkeypatch.setenv("AUTOMONITOR_SESSION_HOURS", "1")
    assert revoked_retention() == timedelta(days=7)  # the floor: longer than a 1-hour session
    anna = fast_user(engine, "anna", "annotator")
    old, recent, now_tok = (issue_session(engine, anna) for _ in range(3))
    t0 = utcnow()
    assert end_session(engine, old, clock=lambda: t0 - timedelta(days=8))
    assert end_session(engine, recent, clock=lambda: t0 - timedelta(days=6))
    with session_scope(engine) as s:
        assert s.execute(sa.select(sa.func.count()).select_from(RevokedSession)).scalar_one() == 2
    assert end_session(engine, now_tok, clock=lambda: t0)
    with session_scope(engine) as s:
        left = sorted(r.revoked_at for r in s.execute(sa.select(RevokedSession)).scalars())
    assert len(left) == 2 and all(t0 - as_utc(t) <= timedelta(days=6, seconds=1) for t in left)
    assert resume_session(engine, recent) is None and resume_session(engine, now_tok) is None
