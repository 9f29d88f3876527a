"""The admin Accounts page (issue 37, finding 2), Streamlit ``AppTest`` against a real SQLite store: the
accounts with their state and last action, a new account refused by the password policy (shown as an
error, nothing written), accepted with a good one, a deactivation (the deactivated user's open page
lands on the login page), every action in the history."""

from __future__ import annotations


import pytest

from automonitor.annotation import accounts

from helpers import fast_user
from apptest_support import app_test, open_store, page_path


@pytest.fixture
def store(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'app.db'}"
    monkeypatch.setenv("AUTOMONITOR_DB", url)
    eng = open_store(url)
    yield eng, fast_user(eng, "root", "admin"), fast_user(eng, "anna", "annotator")
    eng.dispose()


def _run(account):

    at = app_test(120)
    at.session_state["auth.account"] = account
    at.run()
    at.switch_page(page_path("pages/accounts.py"))
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_admin_creates_deactivates_and_sees_the_history_annotator_is_refused(store):
    eng, root, anna = store
    at = _run(root)
    names = list(at.dataframe[0].value["name"])
    assert names == ["anna", "root"]
    at.text_input(key="accounts.new_name").input("cleo")
    at.text_input(key="accounts.new_password").input("cleo")  # too short and the user name
    at.button[0].click()  # the form's submit button
    at.run()
    assert any("password" in e.value for e in at.error)
    assert [a["name"] for a in accounts.account_table(eng, accounts.SYSTEM)] == ["anna", "root"]
    at.text_input(key="accounts.new_name").input("cleo")
    at.text_input(key="accounts.new_password").input("a long enough passphrase")
    at.button[0].click()
    at.run()
    assert not at.error and "cleo" in list(at.dataframe[0].value["name"])
    at.selectbox(key="accounts.target").set_value("anna")
    at.run()
    at.button(key="accounts.deactivate").click()
    at.run()
    assert any("Deactivated" in s.value for s in at.success)
    table = at.dataframe[0].value.set_index("name")
    assert table.loc["anna", "state"] == "deactivated" and table.loc["anna", "last action"] == "deactivated by root"
    history = at.dataframe[1].value
    assert ("cleo", "created", "root") in set(zip(history["account"], history["action"], history["by"]))
    # anna's open page, deactivated meanwhile, is logged out at its next run: only the login page is left

    gone = app_test(120)
    gone.session_state["auth.account"] = anna
    gone.run()
    assert not gone.exception and "auth.account" not in gone.session_state
    assert [t.value for t in gone.subheader] == ["Log in"]
