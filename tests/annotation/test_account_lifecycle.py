"""Accounts a team can manage (issue 37, findings 1 and 2): a logout ends every live session of the login
(the other tab's next action and its save are refused), an admin ends a user's sessions, the password
policy, ``users passwd|deactivate|reactivate|list|end-sessions|history``, a deactivated annotator's open
assignments reassigned with their submitted labels kept; every action recorded (who, when) in the store.
SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from automonitor import annotation
from automonitor.annotation import accounts
from automonitor.annotation.accounts import SYSTEM, authenticate, create_user
from automonitor.annotation.assignment import reassign_open
from automonitor.errors import InputError, PermissionDenied
from store import session_scope
from store.models import AccountEvent, Assignment
from store.queries.samples import insert_samples

from helpers import candidate_row, run_cli_in_process

PW = "correct horse battery"


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("AUTOMONITOR_SESSION_SECRET", "k" * 32)


def test_password_policy_in_the_core(engine):
    for bad, word in (
        ("", "empty"),
        ("x", "at least 12"),
        ("short pass", "at least 12"),
        (" " * 20, "blanks"),
        ("\t\n  \u3000" * 4, "blanks"),
        ("Alice-Admin-1", "user name"),
        ("  alice-admin-1  ", "user name"),
    ):
        with pytest.raises(InputError) as ei:
            create_user(engine, "alice-admin-1", "admin", bad)
        assert ei.value.field == "password" and word in str(ei.value) and (not bad.strip() or bad not in str(ei.value))
    assert not accounts.any_accounts(engine)  # nothing written
    acc = create_user(engine, "alice-admin-1", "admin", PW)
    with pytest.raises(InputError):
        accounts.set_password(engine, SYSTEM, "alice-admin-1", "tiny")
    assert authenticate(engine, "alice-admin-1", PW) == acc


def test_logout_in_one_tab_ends_the_others_and_refuses_their_save(engine):
    """Two tabs of one login (the second resumed from the same cookie), and another browser's login:
    a logout in the first tab ends all of them server-side; the others' next save is refused."""
    admin = create_user(engine, "root", "admin", PW)
    anna = create_user(engine, "anna", "annotator", PW)
    _items(engine)
    annotation.assign(engine, admin, k=1, seed=1)
    token = accounts.issue_session(engine, authenticate(engine, "anna", PW))
    tab1, tab2 = accounts.resume_session(engine, token), accounts.resume_session(engine, token)
    laptop = accounts.issue_session(engine, authenticate(engine, "anna", PW))
    sid = annotation.my_queue(engine, tab2)[0].sample_id
    annotation.save_label(engine, tab2, sid, "benign")  # works while logged in
    assert accounts.end_session(engine, token) is True  # "Log out" in tab 1
    assert not accounts.login_alive(engine, tab2) and not accounts.login_alive(engine, tab1)
    with pytest.raises(PermissionDenied):
        annotation.save_label(engine, tab2, sid, "misbehavior")
    assert accounts.resume_session(engine, token) is None and accounts.resume_session(engine, laptop) is None
    fresh = authenticate(engine, "anna", PW)  # a new login works
    assert accounts.login_alive(engine, fresh) and fresh == anna
    annotation.save_label(engine, fresh, sid, "misbehavior")
    # the admin ends anna's sessions: the fresh login is refused at once
    accounts.end_sessions(engine, admin, "anna")
    with pytest.raises(PermissionDenied):
        annotation.save_label(engine, fresh, sid, "benign")
    # an annotator may not end someone else's sessions
    with pytest.raises(PermissionDenied):
        accounts.end_sessions(engine, authenticate(engine, "anna", PW), "root")
    events = [(e["account"], e["action"], e["actor"]) for e in accounts.account_events(engine, admin)]
    assert ("anna", "logout", "anna") in events and ("anna", "sessions_ended", "root") in events


def test_passwd_deactivate_reassign_reactivate_are_recorded(engine):
    admin = create_user(engine, "root", "admin", PW)
    create_user(engine, "anna", "annotator", PW)
    create_user(engine, "bert", "annotator", PW)
    create_user(engine, "cleo", "annotator", PW)
    _items(engine, pairs=4)
    annotation.assign(engine, admin, k=1, seed=7)
    anna = authenticate(engine, "anna", PW)
    queue = annotation.my_queue(engine, anna)
    assert queue
    for item in queue:
        annotation.save_label(engine, anna, item.sample_id, "benign", note="anna's reading")
    annotation.submit_batch(engine, anna)
    n_submitted = len(queue)
    bert = authenticate(engine, "bert", PW)
    bert_items = [i.sample_id for i in annotation.my_queue(engine, bert)]
    annotation.save_label(engine, bert, bert_items[0], "unsure", note="not sure yet")  # a draft, never submitted
    token = accounts.issue_session(engine, bert)

    accounts.set_password(engine, admin, "bert", PW + " v2")
    assert authenticate(engine, "bert", PW) is None and authenticate(engine, "bert", PW + " v2") is not None
    assert accounts.resume_session(engine, token) is None and not accounts.login_alive(engine, bert)

    with pytest.raises(InputError):  # still active: deactivate first
        reassign_open(engine, admin, "bert")
    accounts.set_active(engine, admin, "bert", False)
    assert authenticate(engine, "bert", PW + " v2") is None
    with pytest.raises(InputError):
        accounts.set_active(engine, admin, "bert", False)  # already deactivated
    with pytest.raises(InputError):
        reassign_open(engine, admin, "bert", to="bert")
    res = reassign_open(engine, admin, "bert")
    assert res["moved"] == len(bert_items) and res["left"] == []
    with session_scope(engine) as s:
        holders = dict(s.execute(sa.select(Assignment.sample_id, Assignment.annotator_id)).all())
        bert_id = next(r["id"] for r in accounts.account_table(engine, admin) if r["name"] == "bert")
        assert bert_id not in holders.values()
    # anna's submitted labels are kept, under her name; anna stays a holder of her submitted items
    accounts.set_active(engine, admin, "anna", False)
    assert reassign_open(engine, admin, "anna") == {"moved": 0, "by_annotator": {}, "left": []}
    recs = [r for r in annotation.annotation_records(engine, admin) if r["annotator"] == "anna"]
    assert len(recs) == n_submitted and all(r["note"] == "anna's reading" for r in recs)
    assert not [r for r in annotation.annotation_records(engine, admin) if r["annotator"] == "bert"]  # draft gone
    accounts.set_active(engine, admin, "anna", True)
    assert authenticate(engine, "anna", PW) is not None
    with pytest.raises(InputError):  # the last active admin stays
        accounts.set_active(engine, admin, "root", False)
    with pytest.raises(PermissionDenied):
        accounts.set_active(engine, authenticate(engine, "anna", PW), "cleo", False)
    table = {r["name"]: r for r in accounts.account_table(engine, admin)}
    assert table["bert"]["active"] is False and table["bert"]["last_event"]["action"] == "reassigned"
    # anna logged in after her reactivation (twice above): her last event is that login, her own
    assert (table["anna"]["last_event"]["action"], table["anna"]["last_event"]["actor"]) == ("login", "anna")
    anna_hist = [(e["action"], e["actor"]) for e in accounts.account_events(engine, admin, "anna")]
    assert anna_hist[-4:] == [("deactivated", "root"), ("reactivated", "root"), ("login", "anna"), ("login", "anna")]
    assert [r["name"] for r in accounts.account_table(engine, admin, include_inactive=False)] == [
        "anna",
        "cleo",
        "root",
    ]
    hist = [(e["action"], e["actor"]) for e in accounts.account_events(engine, admin, "bert")]
    assert hist == [  # each successful login is recorded; the refused ones (old password, deactivated) are not
        ("created", "system"),
        ("login", "bert"),
        ("password_changed", "root"),
        ("login", "bert"),
        ("deactivated", "root"),
        ("reassigned", "root"),
    ]
    with session_scope(engine) as s:
        assert all(e.at is not None for e in s.execute(sa.select(AccountEvent)).scalars())


def test_the_database_refuses_an_unknown_account_action(engine):
    create_user(engine, "root", "admin", PW)
    with pytest.raises(sa.exc.IntegrityError):
        with session_scope(engine) as s:
            s.add(AccountEvent(account_id=1, action="promoted", actor="x"))


def test_users_cli_passwd_deactivate_reactivate_end_sessions_list_history(cli, db_url):
    # the commands that read stdin run in this process too (the same entry point and exit codes, ``sys.stdin``
    # a StringIO); a real pipe into the console script is tested in tests/cli
    stdin_cli = run_cli_in_process
    r = stdin_cli(["users", "add", "root", "--role", "admin", "--password-stdin"], db=db_url, input="x\n")
    assert r.returncode == 2 and "at least 12" in r.stderr and r.stdout == ""
    r = stdin_cli(["users", "add", "root", "--role", "admin", "--password-stdin"], db=db_url, input="          \n")
    assert r.returncode == 2 and "blank" in r.stderr
    assert (
        stdin_cli(
            ["users", "add", "root", "--role", "admin", "--password-stdin"], db=db_url, input=PW + "\n"
        ).returncode
        == 0
    )
    assert stdin_cli(["users", "add", "anna", "--password-stdin"], db=db_url, input=PW + "\n").returncode == 0
    r = stdin_cli(["users", "passwd", "anna", "--password-stdin"], db=db_url, input="anna\n")
    assert r.returncode == 2 and "password" in r.stderr
    r = stdin_cli(["users", "passwd", "anna", "--password-stdin"], db=db_url, input="a brand new password\n")
    assert r.returncode == 0, r.stderr
    assert cli(["users", "end-sessions", "anna"], db=db_url).returncode == 0
    assert cli(["users", "deactivate", "ghost"], db=db_url).returncode == 2
    r = cli(["users", "deactivate", "anna", "--reassign", "--json"], db=db_url)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["reassigned"]["moved"] == 0
    r = cli(["users", "list", "--json"], db=db_url)
    assert [u["name"] for u in json.loads(r.stdout)] == ["root"]
    r = cli(["users", "list", "--all", "--json"], db=db_url)
    rows = {u["name"]: u for u in json.loads(r.stdout)}
    assert rows["anna"]["active"] is False and rows["anna"]["last_event"]["action"] == "deactivated"
    assert cli(["users", "reactivate", "anna"], db=db_url).returncode == 0
    r = cli(["users", "history", "anna", "--json"], db=db_url)
    assert [e["action"] for e in json.loads(r.stdout)] == [
        "created",
        "password_changed",
        "sessions_ended",
        "deactivated",
        "reactivated",
    ]
    assert all(e["actor"] == "system" and e["at"] for e in json.loads(r.stdout))


def _items(engine, pairs: int = 2) -> None:
    rows = []
    for p in range(pairs):
        for lab in ("misbehavior", "benign"):
            rows.append(
                candidate_row(
                    id=f"i{p}{lab[0]}",
                    pair_id=f"pp{p}",
                    category="specification_gaming",
                    task="qa",
                    label=lab,
                    request=f"Req {p}",
                    response=f"{lab} answer {p}",
                    source="src",
                )
            )
    with session_scope(engine) as s:
        insert_samples(s, rows)
