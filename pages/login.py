"""Log in: name and password checked by ``automonitor.annotation.accounts.authenticate`` (argon2, throttled).

``app.py`` serves this form at every page's URL while nobody is logged in, so a shared link keeps its
path and query parameters: the rerun after a successful login shows the linked page with its selections.
"""

from __future__ import annotations

from pages._ui import nav as navigation

navigation.ensure_navigation()  # first, before the imports below: see _nav.ensure_navigation

import streamlit as st

from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import data as loaders

PAGE = "login"
NAV = Nav(title="Log in", icon=":material/login:", order=0, access="login")

st.title("AutoMonitor-Bench")
st.subheader("Log in")

with st.form(f"{PAGE}.form", clear_on_submit=False):
    name = st.text_input("User name", key=f"{PAGE}.name", autocomplete="username")
    password = st.text_input("Password", type="password", key=f"{PAGE}.password", autocomplete="current-password")
    submitted = st.form_submit_button("Log in", type="primary")

if submitted:
    from automonitor.annotation.accounts import LoginThrottled, authenticate

    try:
        # throttled per account name and per client address (recorded in the store)
        account = authenticate(loaders.engine(), name or "", password or "", client=st.context.ip_address)
        throttled = None
    except LoginThrottled as exc:
        account, throttled = None, exc
    # the password never stays in the session
    st.session_state.pop(f"{PAGE}.password", None)
    if throttled is not None:
        st.error(f"Too many failed logins: try again in {int(throttled.retry_after + 0.999)} seconds.")
    elif account is None:
        st.error("Unknown user or wrong password.")
    else:
        auth.remember_login(account)  # a signed, expiring session cookie: the login survives a reload
        st.session_state.pop(f"{PAGE}.name", None)
        st.rerun()
