"""Accounts page (admins): every account with its state and last recorded action; create an account,
set a password, end a user's sessions, deactivate (optionally moving their open assignments to other
annotators) or reactivate, and the history of account actions. Every action is the core's
(``automonitor.annotation.accounts``, ``automonitor.annotation.assignment.reassign_open``), which checks
the acting admin, the password policy and records who did what, when."""

from __future__ import annotations

from pages._ui import nav as navigation

navigation.ensure_navigation()  # first, before the imports below: see _nav.ensure_navigation

import pandas as pd
import streamlit as st

from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import data as loaders
from pages._ui import widgets as ui

from automonitor.annotation import accounts as acc
from automonitor.annotation.assignment import reassign_open
from automonitor.errors import InputError, NotFound, PermissionDenied
from automonitor.escaping import reveal_controls
from automonitor.vocab import ROLES

PAGE = "accounts"
NAV = Nav(title="Accounts", icon=":material/manage_accounts:", order=40, access="admin")
FLASH = f"{PAGE}.flash"

account = auth.require_login("Access denied: the accounts page is for admins.", admin=True)
engine = loaders.engine()
st.title("Accounts")

flash = st.session_state.pop(FLASH, None)
if flash:
    st.success(flash)


def _done(message: str) -> None:
    st.session_state[FLASH] = message
    st.rerun()


def _act(fn, *args) -> bool:
    """Run one core action; show its refusal (bad input, permission, unknown user) as an error line."""
    try:
        fn(*args)
    except (InputError, PermissionDenied, NotFound) as exc:
        st.error(ui.md(str(exc)))
        return False
    return True


rows = acc.account_table(engine, account)
table = pd.DataFrame(
    [
        {
            "name": reveal_controls(r["name"]),
            "role": r["role"],
            "state": "active" if r["active"] else "deactivated",
            "last action": ""
            if r["last_event"] is None
            else f"{r['last_event']['action']} by {reveal_controls(r['last_event']['actor'])}",
            "when": None if r["last_event"] is None else r["last_event"]["at"],
        }
        for r in rows
    ]
)
st.dataframe(table, hide_index=True, width="stretch")

names = [r["name"] for r in rows]
active = [r["name"] for r in rows if r["active"]]
inactive = [r["name"] for r in rows if not r["active"]]

left, right = st.columns(2)
with left:
    with st.form(f"{PAGE}.create", clear_on_submit=True):
        st.subheader("New account")
        new_name = st.text_input("User name", key=f"{PAGE}.new_name")
        new_role = st.selectbox("Role", list(ROLES), key=f"{PAGE}.new_role")
        new_pw = st.text_input(
            "Password",
            type="password",
            key=f"{PAGE}.new_password",
            autocomplete="new-password",
            help=f"at least {acc.MIN_PASSWORD} characters, not only blanks, not the user name",
        )
        if st.form_submit_button("Create account") and _act(
            lambda: acc.create_user(engine, new_name or "", new_role, new_pw or "", actor=account)
        ):
            _done(f"Created {ui.md(new_name)}.")
    with st.form(f"{PAGE}.passwd", clear_on_submit=True):
        st.subheader("Set a password")
        who = st.selectbox("Account", names, key=f"{PAGE}.passwd_name", format_func=reveal_controls)
        pw = st.text_input("New password", type="password", key=f"{PAGE}.passwd_password", autocomplete="new-password")
        if st.form_submit_button("Set password") and _act(acc.set_password, engine, account, who or "", pw or ""):
            _done(f"Password changed for {ui.md(who)}; their sessions ended.")

with right:
    st.subheader("Sessions and access")
    target = st.selectbox("Account", names, key=f"{PAGE}.target", format_func=reveal_controls)
    if st.button("End all their sessions", key=f"{PAGE}.end_sessions", disabled=not target) and _act(
        acc.end_sessions, engine, account, target
    ):
        _done(f"Every session of {ui.md(target)} ended.")
    if target in active:
        move = st.checkbox("Move their open assignments to other annotators", key=f"{PAGE}.reassign")
        if st.button("Deactivate", key=f"{PAGE}.deactivate") and _act(acc.set_active, engine, account, target, False):
            msg = f"Deactivated {ui.md(target)}; their submitted labels stay under their name."
            if move:
                res = reassign_open(engine, account, target)
                msg += f" Moved {res['moved']} open item(s); {len(res['left'])} had nobody eligible."
            _done(msg)
    elif target in inactive:
        if st.button("Reactivate", key=f"{PAGE}.reactivate") and _act(acc.set_active, engine, account, target, True):
            _done(f"Reactivated {ui.md(target)}.")
        if st.button("Move their open assignments to other annotators", key=f"{PAGE}.reassign_now"):
            res = reassign_open(engine, account, target)
            _done(f"Moved {res['moved']} open item(s); {len(res['left'])} had nobody eligible.")

st.subheader("History")
events = acc.account_events(engine, account)
st.dataframe(
    pd.DataFrame(
        [
            {
                "when": e["at"],
                "account": reveal_controls(e["account"]),
                "action": e["action"],
                "by": reveal_controls(e["actor"]),
                "detail": reveal_controls(e["detail"] or ""),
            }
            for e in reversed(events)
        ],
        columns=["when", "account", "action", "by", "detail"],
    ),
    hide_index=True,
    width="stretch",
)
