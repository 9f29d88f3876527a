"""A successful login is an account event (action ``login``, the account its own actor), listed by ``users
history`` beside the logout that ends it; a failed one is not. The database holds the widened vocabulary
(migration r15_account_login_event: a CHECK constraint on PostgreSQL, the table's own CHECK on SQLite); the
downgrade refuses, changing nothing, while a login event is stored. SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from automonitor.annotation import accounts
from automonitor.annotation.accounts import authenticate, create_user

from helpers import run_cli_in_process

PW = "correct horse battery"
REVISION = "r15_account_login_event"


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("AUTOMONITOR_SESSION_SECRET", "k" * 32)


def _version(engine) -> str:
    with engine.connect() as c:
        return c.execute(sa.text("select version_num from alembic_version")).scalar()


def _insert_event(engine, action: str) -> None:
    with engine.begin() as c:
        account = c.execute(sa.text("select id from annotator order by id limit 1")).scalar()
        c.execute(
            sa.text("insert into account_event (account_id, action, actor, at) values (:a, :x, 'test', :t)"),
            {"a": account, "x": action, "t": datetime(2026, 12, 7, tzinfo=UTC)},
        )


def test_a_login_is_recorded_and_listed_by_users_history(engine):
    admin = create_user(engine, "root", "admin", PW)
    create_user(engine, "anna", "annotator", PW)
    assert authenticate(engine, "anna", "wrong password here") is None  # a failed login: no event
    anna = authenticate(engine, "anna", PW)
    token = accounts.issue_session(engine, anna)
    assert accounts.end_session(engine, token) is True
    events = [(e["account"], e["action"], e["actor"]) for e in accounts.account_events(engine, admin, "anna")]
    assert events == [("anna", "created", "system"), ("anna", "login", "anna"), ("anna", "logout", "anna")]
    res = run_cli_in_process(
        ["users", "history", "anna", "--json"], db=engine.url.render_as_string(hide_password=False)
    )
    assert res.returncode == 0, res.stderr
    assert [r["action"] for r in json.loads(res.stdout)] == ["created", "login", "logout"]


def test_the_database_holds_the_action_vocabulary(engine):
    create_user(engine, "anna", "annotator", PW)
    _insert_event(engine, "login")
    with pytest.raises(sa.exc.IntegrityError, match="ck_account_event_action"):
        _insert_event(engine, "logged_in")


def test_the_downgrade_refuses_while_a_login_is_stored_and_the_upgrade_keeps_events(engine):
    from alembic import command

    from store import init_db
    from store.engine import alembic_config
    from store.migrations.versions.r15_account_login_event import down_revision

    create_user(engine, "anna", "annotator", PW)
    authenticate(engine, "anna", PW)
    cfg = alembic_config(engine)
    with pytest.raises(RuntimeError, match="1 event\\(s\\) are logins"):
        command.downgrade(cfg, down_revision)
    assert _version(engine) == REVISION
    _insert_event(engine, "login")  # the constraint still allows it: nothing changed
    with engine.begin() as c:
        c.execute(sa.text("delete from account_event where action = 'login'"))
    command.downgrade(cfg, down_revision)
    assert _version(engine) == down_revision
    with pytest.raises(sa.exc.IntegrityError, match="ck_account_event_action"):
        _insert_event(engine, "login")  # before this revision a login was no action the store knew
    _insert_event(engine, "logout")
    init_db(engine)
    assert _version(engine) == REVISION
    _insert_event(engine, "login")
    with engine.connect() as c:
        kept = c.execute(sa.text("select action from account_event order by id")).scalars().all()
    assert kept == ["created", "logout", "login"]
    with engine.connect() as c:  # the table's index survived the copy (SQLite) / the ALTER (PostgreSQL)
        assert "ix_account_event_account_id" in {i["name"] for i in sa.inspect(c).get_indexes("account_event")}
