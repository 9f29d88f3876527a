"""Logins in the app (Streamlit): the logged-in ``automonitor.annotation.accounts.Account``
(``st.session_state["auth.account"]``), the guards a page calls first (:func:`require_workbench`,
:func:`require_login`; :func:`workbench_page`: the guard with the page's title), and the signed session cookie that keeps a login across reloads."""

from __future__ import annotations

import streamlit as st

from automonitor.views.page_index import Nav
from pages._ui import data as loaders
from pages._ui import nav as navigation

AUTH_KEY = "auth.account"
LOGGED_OUT_KEY = "auth.logged_out"  # set by logout: this session never resumes from the cookie again
COOKIE_KEY = "auth.cookie"  # a pending cookie write ("set", token) | ("clear", "") for the next run
TOKEN_KEY = "auth.token"  # the login-session token of this session (revoked by logout)


def current_account():
    """The logged-in account (``automonitor.annotation.accounts.Account``) or ``None``."""
    return st.session_state.get(AUTH_KEY)


def any_accounts() -> bool:
    """Whether the store has accounts (then the app requires a login). Core only
    (``automonitor.annotation.roster``): every page asks it, and a workbench without accounts then imports neither
    the ORM nor the store's models."""
    from automonitor.annotation.roster import any_accounts as _any

    return _any(loaders.engine())


#: What a labelling or admin page (Label, Agreement, Adjudicate, Accounts) says when the store has no accounts:
#: the app is then a local single-user workbench, which hides these pages from its navigation but still serves
#: them at their URLs with this text (trial 46: /label showed the Overview without a word).
NO_ACCOUNTS = (
    "This page needs accounts (labelling, agreement, adjudication and account management are done by "
    "logged-in people), and this store has none: the app is a local single-user workbench. Create an admin "
    "account on the command line, e.g. `automonitor users add alice --role admin --password-stdin`, then "
    "reload this page and log in."
)


def require_login(message: str, *, admin: bool = False):
    """The logged-in ``automonitor.annotation.accounts.Account``; when the store has no accounts the page shows
    :data:`NO_ACCOUNTS` (why it is empty, and the command that creates one) and stops; when no one is logged in
    (or, with ``admin``, the account is not an admin) it shows ``message`` as an error and stops. Calls
    ``ensure_navigation`` first."""
    from automonitor.annotation.accounts import Account

    navigation.ensure_navigation()
    account = current_account()
    if account is None and not any_accounts():  # a local workbench: the page is reached by its URL only
        st.warning(NO_ACCOUNTS)
        st.stop()
    if not isinstance(account, Account) or (admin and account.role != "admin"):
        st.error(message)
        st.stop()
    return account


def require_workbench() -> None:
    """Stop the page unless the workbench is open to the current session: the store has no accounts
    (local single-user use) or an admin is logged in. Pages call this first, so a page reached by a
    crafted URL is refused even if navigation would have hidden it."""
    navigation.ensure_navigation()
    account = current_account()
    if account is not None and account.role == "admin":
        return
    if account is None and not any_accounts():
        return
    st.error("This page needs an admin account." if account is not None else "Please log in first.")
    st.stop()


def workbench_page(nav: Nav, caption: str | None = None, *, heading: str | None = None) -> None:
    """The head of a workbench page, after its ``PAGE`` / ``NAV`` declaration: the guard
    (:func:`require_workbench`: the page stops unless the workbench is open to this session), then the
    page's title (its navigation title ``nav.title`` unless a ``heading`` is given) and, when given, the
    ``caption`` under it (our own words, rendered as markdown)."""
    require_workbench()
    st.title(heading or nav.title)
    if caption is not None:
        st.caption(caption)


def cookie_token() -> str | None:
    """The session cookie this browser sent with the request, or None (also in a bare AppTest run)."""
    from automonitor.annotation.roster import SESSION_COOKIE

    try:
        token = st.context.cookies.get(SESSION_COOKIE)
    except Exception:  # noqa: BLE001 - no browser request (bare AppTest run): no cookie
        return None
    return token if isinstance(token, str) else None  # a bare AppTest run's context answers a mock object


def logout() -> None:
    """End the login session and forget the logged-in account and every page's state: the session's
    token (the one this session logged in or resumed with, and the cookie this browser sent) is revoked
    in the store (``automonitor.annotation.accounts.end_session``), so no kept copy of the cookie logs
    in again; the cookie is cleared in this browser on the next run (``cookie_script``) and this
    Streamlit session no longer resumes from a cookie."""
    from automonitor.annotation.accounts import end_session

    tokens = {st.session_state.get(TOKEN_KEY), cookie_token()}
    for token in tokens:
        if token:
            end_session(loaders.engine(), token)
    forget_login()


def forget_login() -> None:
    """Forget the logged-in account and every page's state in this Streamlit session (no store write):
    the cookie is cleared on the next run and this session no longer resumes from a cookie."""
    for k in list(st.session_state.keys()):
        del st.session_state[k]
    st.session_state[LOGGED_OUT_KEY] = True
    st.session_state[COOKIE_KEY] = ("clear", "")


def check_login() -> None:
    """Every rerun: drop the logged-in account when its sessions were ended meanwhile (a logout in
    another tab, a password change, a deactivation, an admin's "end sessions"), so this tab shows the
    login page at its next action (``automonitor.annotation.accounts.login_alive``). The core refuses
    such a stale login's writes by itself too."""
    account = current_account()
    if account is None:
        return
    from automonitor.annotation.accounts import login_alive

    if not login_alive(loaders.engine(), account):
        forget_login()


def restore_login() -> None:
    """Log the session in from the browser's signed session cookie
    (``automonitor.annotation.accounts.resume_session``), so a login survives a reload (F5) and a pasted link in
    the same browser. Nothing happens when an account is already logged in, after a logout in this
    session, or when the cookie is missing, forged, expired, revoked by a logout or its account changed.
    Without a cookie nothing is imported for it (``automonitor.annotation.accounts``: argon2, the ORM)."""
    if current_account() is not None or st.session_state.get(LOGGED_OUT_KEY):
        return
    token = cookie_token()
    if not token:
        return
    from automonitor.annotation.accounts import resume_session

    account = resume_session(loaders.engine(), token)
    if account is not None:
        st.session_state[AUTH_KEY] = account
        st.session_state[TOKEN_KEY] = token


def remember_login(account) -> None:
    """After a successful login: keep ``account`` in the session and have the next run write a signed,
    expiring session cookie (``automonitor.annotation.accounts.issue_session``) into this browser."""
    from automonitor.annotation.accounts import issue_session

    token = issue_session(loaders.engine(), account)
    st.session_state[AUTH_KEY] = account
    st.session_state[TOKEN_KEY] = token
    st.session_state.pop(LOGGED_OUT_KEY, None)
    st.session_state[COOKIE_KEY] = ("set", token)


def cookie_script() -> None:
    """Write or clear the session cookie in the browser when a login or logout asked for it
    (``SameSite=Strict``, path ``/``, max-age = the session lifetime). The token is checked to be
    URL-safe text before it is put into the script."""
    pending = st.session_state.pop(COOKIE_KEY, None)
    if pending is None:
        return
    import re

    from automonitor.annotation.accounts import SESSION_COOKIE, session_max_age

    action, token = pending
    if action == "set" and re.fullmatch(r"[A-Za-z0-9_.\-]+", token or ""):
        value = f"{SESSION_COOKIE}={token}; path=/; max-age={int(session_max_age())}; SameSite=Strict"
    else:
        value = f"{SESSION_COOKIE}=; path=/; max-age=0; SameSite=Strict"
    st.html(f"<script>document.cookie = {value!r};</script>", unsafe_allow_javascript=True)
