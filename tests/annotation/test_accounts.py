"""Accounts (argon2 hashes, roles, authentication) and authorisation enforced in the core: an
annotator can never read another annotator's labels or assignments through any public function."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import sqlalchemy as sa

from automonitor.annotation import accounts, agreement
from automonitor import annotation
from automonitor.annotation.accounts import Account, authenticate, create_user, require_admin
from automonitor.errors import InputError, PermissionDenied
from store import session_scope
from store.models import Annotator
from automonitor.annotation import queries as q
from store.queries.samples import insert_samples

from helpers import candidate_row

PW = "a long enough password"


def test_create_and_authenticate_store_only_an_argon2_hash(engine):
    assert accounts.any_accounts(engine) is False
    acc = create_user(engine, "  alice ", "annotator", "s3cret passphrase")
    assert isinstance(acc, Account) and (acc.name, acc.role) == ("alice", "annotator")
    assert accounts.any_accounts(engine) is True
    with session_scope(engine) as s:
        stored = s.execute(sa.select(Annotator.password_hash)).scalar_one()
    assert stored.startswith("$argon2id$") and "s3cret" not in stored
    assert authenticate(engine, "alice", "s3cret passphrase") == acc
    assert authenticate(engine, "alice", "s3cret passphrase ") is None
    assert authenticate(engine, "alice", "") is None
    assert authenticate(engine, "nobody", "s3cret passphrase") is None
    assert authenticate(engine, "", "x") is None


def test_production_hashes_use_rfc_9106_low_memory_and_the_suite_alone_the_cheapest(monkeypatch, engine):
    # the suite's own processes hash cheaply (tests/conftest.py sets the variable) ...
    assert accounts.hasher.time_cost == 1 and accounts.hasher.memory_cost == 8
    # ... a real deployment never: unset, or set to anything but "1", gives RFC 9106's parameters
    for value in (None, "", "0", "true", "yes"):
        if value is None:
            monkeypatch.delenv(accounts.TEST_HASHES_ENV, raising=False)
        else:
            monkeypatch.setenv(accounts.TEST_HASHES_ENV, value)
        h = accounts.make_hasher()
        assert (h.time_cost, h.memory_cost, h.parallelism) == (3, 65536, 4)
    monkeypatch.setattr(accounts, "hasher", h)
    acc = create_user(engine, "carol", "annotator", "s3cret passphrase")  # one hash at production cost
    with session_scope(engine) as s:
        stored = s.execute(sa.select(Annotator.password_hash)).scalar_one()
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    assert authenticate(engine, "carol", "s3cret passphrase") == acc


def test_a_login_upgrades_a_hash_made_with_other_parameters(monkeypatch, engine):
    acc = create_user(engine, "dave", "annotator", "pw-long-enough-1")  # the suite's cheap parameters
    monkeypatch.setenv(accounts.TEST_HASHES_ENV, "0")
    monkeypatch.setattr(accounts, "hasher", accounts.make_hasher())
    assert authenticate(engine, "dave", "pw-long-enough-1") == acc
    with session_scope(engine) as s:
        stored = s.execute(sa.select(Annotator.password_hash)).scalar_one()
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")


def test_create_user_rejects_bad_input_and_writes_nothing(engine):
    create_user(engine, "bob", "admin", PW)
    for args, fld in (
        (("bob", "annotator", PW), "name"),
        (("carol", "root", PW), "role"),
        (("carol", "admin", ""), "password"),
        (("   ", "admin", PW), "name"),
        (("a\x00b", "admin", PW), "name"),
    ):
        with pytest.raises(InputError) as e:
            create_user(engine, *args)
        assert e.value.field == fld
    with session_scope(engine) as s:
        assert s.execute(sa.select(sa.func.count()).select_from(Annotator)).scalar() == 1


def test_role_checks_refuse_annotators_and_stale_accounts(sqlite_engine):
    eng = sqlite_engine
    admin = create_user(eng, "root", "admin", PW)
    ann = create_user(eng, "ann", "annotator", PW)
    assert require_admin(admin) is admin
    for bad in (ann, None, "root", dataclasses.replace(ann, role="superuser")):
        with pytest.raises(PermissionDenied):
            require_admin(bad)
    with pytest.raises(PermissionDenied):
        accounts.account_table(eng, ann)
    assert [a["name"] for a in accounts.account_table(eng, admin)] == ["ann", "root"]
    # an Account whose role was forged, or whose user was demoted/deactivated, is refused by the core
    forged = Account(id=ann.id, name="ann", role="admin")
    with pytest.raises(PermissionDenied):
        accounts.account_table(eng, forged)
    with session_scope(eng) as s:
        s.execute(sa.update(Annotator).where(Annotator.id == admin.id).values(active=False))
    with pytest.raises(PermissionDenied):
        accounts.account_table(eng, admin)
    assert authenticate(eng, "root", PW) is None


# ------------------------------------------------------------------ annotator A cannot read B's labels
def _store_with_two_annotators(engine):
    a = create_user(engine, "anna", "annotator", PW)
    b = create_user(engine, "bert", "annotator", PW)
    admin = create_user(engine, "root", "admin", PW)
    rows = []
    for p in range(3):
        req = f"Req {p}"
        for lab in ("misbehavior", "benign"):
            resp = f"{lab} answer {p}"
            rows.append(
                candidate_row(
                    id=f"i{p}{lab[0]}",
                    pair_id=f"pp{p}",
                    category="specification_gaming",
                    task="qa",
                    label=lab,
                    request=req,
                    response=resp,
                    source="src",
                )
            )
    with session_scope(engine) as s:
        insert_samples(s, rows)
    annotation.assign(engine, admin, k=2, seed=3)
    for sid in (r["id"] for r in rows):
        annotation.save_label(engine, b, sid, "misbehavior", note="BERT-SECRET-NOTE")
    annotation.save_label(engine, a, rows[0]["id"], "benign", note="anna note")
    return a, b, admin, rows


# Every public function of the annotation core and the store queries that takes an acting account,
# with how annotator A calls it. A new function without an entry here makes the test below fail.
def _calls(engine, a, b, rows, tmp_path, admin=None):
    sid = rows[0]["id"]
    return {
        (annotation, "assign"): lambda: annotation.assign(engine, a),
        (annotation, "my_queue"): lambda: annotation.my_queue(engine, a),
        (annotation, "get_item"): lambda: annotation.get_item(engine, a, sid),
        (annotation, "save_label"): lambda: annotation.save_label(engine, a, sid, "benign"),
        (annotation, "my_progress"): lambda: annotation.my_progress(engine, a),
        (annotation, "submit_batch"): lambda: annotation.submit_batch(engine, a),
        (annotation, "annotation_progress"): lambda: annotation.annotation_progress(engine, a),
        (annotation, "annotation_records"): lambda: annotation.annotation_records(engine, a),
        (annotation, "export_annotations"): lambda: annotation.export_annotations(engine, a, tmp_path / "x.jsonl"),
        (annotation, "import_annotations"): lambda: annotation.import_annotations(engine, a, tmp_path / "x.jsonl"),
        (annotation, "adjudication_queue"): lambda: annotation.adjudication_queue(engine, a, reveal_names=True),
        (annotation, "adjudicate"): lambda: annotation.adjudicate(engine, a, sid, "benign", "x"),
        (annotation, "finalize_pairs"): lambda: annotation.finalize_pairs(engine, a),
        (annotation, "adjudication_records"): lambda: annotation.adjudication_records(engine, a),
        (annotation, "export_adjudications"): lambda: annotation.export_adjudications(engine, a, tmp_path / "y.csv"),
        (annotation, "rejected_pairs"): lambda: annotation.rejected_pairs(engine, a),
        (annotation, "flag_item"): lambda: annotation.flag_item(engine, a, sid, "please look"),
        (annotation, "item_flags"): lambda: annotation.item_flags(engine, a),
        (annotation, "resolve_flag"): lambda: annotation.resolve_flag(engine, a, 1),
        (agreement, "agreement"): lambda: agreement.agreement(engine, a),
        (agreement, "label_table"): lambda: agreement.label_table(engine, a),
        (agreement, "label_fingerprint"): lambda: agreement.label_fingerprint(engine, a),
        (agreement, "monitor_agreement"): lambda: agreement.monitor_agreement(engine, a, "any-run"),
        (agreement, "resolved_labels"): lambda: agreement.resolved_labels(
            engine, a, agreement.label_table(engine, admin)
        ),
        (annotation, "unassign"): lambda: annotation.unassign(engine, a, everything=True),
        (accounts, "issue_session"): lambda: accounts.issue_session(engine, a, secret="test-secret"),  # A's own
        (q, "assignment_rows"): lambda: _in_session(engine, q.assignment_rows, a),
        (q, "assignment_rows#b"): lambda: _in_session(engine, q.assignment_rows, a, b.id),
        (q, "label_rows"): lambda: _in_session(engine, q.label_rows, a),
        (q, "label_rows#b"): lambda: _in_session(engine, q.label_rows, a, b.id),
        (q, "label_rows#sample"): lambda: _in_session(engine, q.label_rows, a, with_sample=True),
        (q, "candidate_samples"): lambda: _in_session(engine, q.candidate_samples, a),
        (q, "annotator_loads"): lambda: _in_session(engine, q.annotator_loads, a),
        (q, "latest_adjudications"): lambda: _in_session(engine, q.latest_adjudications, a),
        (q, "adjudication_rows"): lambda: _in_session(engine, q.adjudication_rows, a),
        (accounts, "check_actor"): lambda: None,  # verifies the actor itself; returns A's own row
        (accounts, "login_alive"): lambda: accounts.login_alive(engine, a),  # A's own login: a bool
        (accounts, "create_user"): lambda: accounts.create_user(engine, "mallory", "admin", PW, actor=a),
        (accounts, "set_password"): lambda: accounts.set_password(engine, a, "bert", PW + "!"),
        (accounts, "end_sessions"): lambda: accounts.end_sessions(engine, a, "bert"),
        (accounts, "set_active"): lambda: accounts.set_active(engine, a, "bert", False),
        (accounts, "account_table"): lambda: accounts.account_table(engine, a),
        (accounts, "account_events"): lambda: accounts.account_events(engine, a, "bert"),
    }


def _in_session(engine, fn, *args, **kw):
    with session_scope(engine) as s:
        return fn(s, *args, **kw)


def test_annotator_a_cannot_read_b_labels_through_any_public_function(engine, tmp_path):
    a, b, admin, rows = _store_with_two_annotators(engine)
    calls = _calls(engine, a, b, rows, tmp_path, admin)
    covered = {(mod, name.split("#")[0]) for mod, name in calls}
    for mod in (annotation, agreement, accounts, q):
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            if name.startswith("_") or fn.__module__ != mod.__name__:
                continue
            params = inspect.signature(fn).parameters
            if {"actor", "account"} & set(params) and name not in ("require_admin", "require_account"):
                assert (mod, name) in covered, f"{mod.__name__}.{name} takes an actor but is not checked"
    (tmp_path / "x.jsonl").write_text('{"annotator": "bert", "sample_id": "%s", "label": "benign"}\n' % rows[0]["id"])
    for (mod, name), call in calls.items():
        try:
            result = call()
        except PermissionDenied:
            continue
        except InputError:
            continue  # refused as bad input (e.g. nothing to submit) - nothing read either
        text = repr(result)
        assert "BERT-SECRET-NOTE" not in text and "bert" not in text, f"{name} leaked B's data"
        if name.startswith(("label_rows", "assignment_rows")):
            assert result and all(r["annotator"] == "anna" for r in result)
    # the admin does see B's labels
    assert any(r["note"] == "BERT-SECRET-NOTE" for r in annotation.annotation_records(engine, admin))
    # and the blocked write did not change anything
    assert annotation.adjudication_records(engine, admin) == []
