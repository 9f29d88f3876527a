"""UI-only helpers shared by the app's pages (Streamlit). Not part of the core package.

- ``engine()``: the store engine for ``AUTOMONITOR_DB`` (migrated once per process, ``st.cache_resource``).
- ``version()``: a cheap fingerprint of the store (``automonitor.views.store_version``); every cached
  loader takes it as an argument, so caches are invalidated exactly when a run is created, finishes or
  is imported, or samples are added.
- query-parameter helpers: the selection of a page lives in ``st.query_params`` so a view can be
  shared as a link; widget state lives in ``st.session_state["<page>.<key>"]``.
- ``current_account()``: the logged-in ``automonitor.annotation.accounts.Account`` (``st.session_state["auth.account"]``).
- ``show_html()``: ``st.html`` for HTML built by ``automonitor.views`` (every text piece escaped there).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import streamlit as st

from automonitor import views

AUTH_KEY = "auth.account"
LOGGED_OUT_KEY = "auth.logged_out"  # set by logout: this session never resumes from the cookie again
COOKIE_KEY = "auth.cookie"  # a pending cookie write ("set", token) | ("clear", "") for the next run
TOKEN_KEY = "auth.token"  # the login-session token of this session (revoked by logout)

# Paths of the page files, relative to app.py (used by st.switch_page and st.page_link).
PAGE_OVERVIEW = "pages/overview.py"
PAGE_RUNS = "pages/runs.py"
PAGE_TRADEOFF = "pages/tradeoff.py"
PAGE_DRILLDOWN = "pages/drilldown.py"
PAGE_SAMPLES = "pages/samples.py"
PAGE_LOGIN = "pages/login.py"


# ---------------------------------------------------------------------------------------------------
# Store
# ---------------------------------------------------------------------------------------------------


def db_url() -> str:
    """The store URL (``AUTOMONITOR_DB`` or the default SQLite file)."""
    from store.engine import db_url as _db_url

    return _db_url()


@st.cache_resource(show_spinner=False)
def _engine_for(url: str):
    from store import get_engine, init_db

    return init_db(get_engine(url))


def engine():
    """The (cached, migrated) SQLAlchemy engine of the store."""
    return _engine_for(db_url())


def version() -> tuple:
    """Cheap store fingerprint used as cache key (see ``automonitor.views.store_version``)."""
    return views.store_version(engine())


# ---------------------------------------------------------------------------------------------------
# Cached loaders (keyed by store URL + version; results are plain, picklable data)
# ---------------------------------------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=32)
def load_runs(url: str, ver: tuple):
    """Run history frame (``automonitor.views.runs_frame``)."""
    return views.runs_frame(_engine_for(url))


@st.cache_data(show_spinner=False, max_entries=64)
def load_report(
    url: str, ver: tuple, run_ids: tuple[str, ...] | None = None, invalid: str = "exclude", edition: str | None = None
):
    """The analysis report (:class:`automonitor.analysis.report_schema.Report`, the typed contract JSON + extras)
    over ``run_ids`` (``None`` = every run).

    The pages use the per-slice counts, MR/FAR, Wilson intervals, Pareto front and ROC summaries;
    so the report is computed without evidence grounding and with a small pair bootstrap (neither is
    shown), which halves its cold cost on a paper-sized store."""
    from automonitor import analysis

    return analysis.report(
        _engine_for(url),
        list(run_ids) if run_ids is not None else None,
        invalid=invalid,
        n_boot=100,
        with_grounding=False,
        edition=edition,
    )


@st.cache_data(show_spinner="Scoring evidence against gold spans…", max_entries=8)
def load_localisation(url: str, ver: tuple, invalid: str, category: str | None, task: str | None):
    """Each run's localised hits share in a slice (``automonitor.views.localisation_shares``): needs a
    report with evidence grounding (slower than :func:`load_report`), so only computed on request."""
    from automonitor import analysis

    rep = analysis.report(_engine_for(url), None, invalid=invalid, n_boot=20, with_grounding=True)
    return views.localisation_shares(rep, category, task)


@st.cache_data(show_spinner=False, max_entries=8)
def load_reported():
    """The paper's reported MR/FAR points (``automonitor.analysis.reported_points``)."""
    from automonitor import analysis

    return analysis.reported_points()


@st.cache_data(show_spinner=False, max_entries=64)
def load_scores(url: str, ver: tuple, run_id: str):
    """Gold labels and P(misbehavior) scores of one run's scored predictions: frame ``label, score``."""
    from automonitor import analysis

    df = analysis.predictions_frame(_engine_for(url), [run_id])
    df = df[df["score"].notna() & df["label"].isin(["misbehavior", "benign"])]
    return df[["label", "score"]].reset_index(drop=True)


@st.cache_data(show_spinner=False, max_entries=64)
def load_roc(url: str, ver: tuple, run_id: str):
    """ROC curve frame of a score run (``automonitor.analysis.roc_frame``)."""
    from automonitor import analysis

    return analysis.roc_frame(_engine_for(url), run_id)


@st.cache_data(show_spinner=False, max_entries=128)
def load_cell(
    url: str, ver: tuple, run_id: str, cell: str, category: str | None, task: str | None, invalid: str = "exclude"
):
    """The samples of one confusion cell (``automonitor.analysis.cell_samples``)."""
    from automonitor import analysis

    return analysis.cell_samples(_engine_for(url), run_id, cell, category, task, invalid=invalid)


@st.cache_data(show_spinner=False, max_entries=16)
def load_composition(url: str, ver: tuple, split: str | None = "test", edition: str | None = None):
    """Composition long frame (category, task, label, split, n) of the gold samples (``edition``: only
    that edition's test samples)."""
    return views.composition_frame(_engine_for(url), split=split, edition=edition)


@st.cache_data(show_spinner=False, max_entries=16)
def load_counts(url: str, ver: tuple, column: str):
    """Sample counts grouped by ``column`` and status."""
    return views.counts_by(_engine_for(url), column)


@st.cache_data(show_spinner=False, max_entries=16)
def load_sample_sets(url: str, ver: tuple):
    """Which sample set (edition, fingerprint) each run judged (``automonitor.views.run_sample_sets``)."""
    return views.run_sample_sets(_engine_for(url))


@st.cache_data(show_spinner=False, max_entries=16)
def load_score_runs(url: str, ver: tuple, invalid: str = "exclude") -> list[dict]:
    """The runs of the report that give scores: ``[{"run_id", "monitor", "template", "auroc"}]`` (small,
    so a warm page does not unpickle the whole report)."""
    report = load_report(url, ver, None, invalid)
    return [
        {"run_id": e.run_id, "monitor": e.monitor, "template": e.template, "auroc": e.auroc}
        for e in report.runs
        if e.auroc is not None
    ]


@st.cache_data(show_spinner=False, max_entries=8)
def load_audit(url: str, ver: tuple, edition: str) -> dict | None:
    """The audit of ``edition`` (``automonitor.data.audit.cached_audit``; memoised on disk per store
    fingerprint), or ``None`` when the edition cannot be audited."""
    from automonitor.data import audit
    from automonitor.errors import InputError

    try:
        return audit.cached_audit(_engine_for(url), edition)
    except InputError:
        return None


@st.cache_data(show_spinner=False, max_entries=16)
def load_identical_derived(url: str, ver: tuple) -> dict[str, str]:
    """Derived runs that repeat an input's verdicts (``automonitor.views.identical_derived``)."""
    return views.identical_derived(_engine_for(url))


@st.cache_data(show_spinner=False, max_entries=32)
def load_tradeoff(
    url: str,
    ver: tuple,
    invalid: str,
    category: str | None,
    task: str | None,
    templates: tuple[str, ...],
    min_n: int,
    archived: tuple[str, ...],
    show_archived: bool,
    edition: str | None,
    show_paper: bool,
    include_incomplete: bool = False,
    show_duplicates: bool = False,
):
    """Trade-off points (``automonitor.views.honest_points`` over the report's slice): ``(raw points,
    drawn points, Pareto front ids, reported points or None, hidden points)``, cached per store version and
    selection; the hidden points are the derived runs this view leaves out as copies of an input (rows
    with ``duplicate_of``; empty when ``show_duplicates``).
    (The figure itself is built per run: a cached plotly figure lost its click selection events.)"""
    report = load_report(url, ver, None, invalid)
    raw = views.tradeoff_points(report, category, task, list(templates))
    if "kind" in raw:
        raw = raw[~raw["kind"].isin(["generation"])]
    runs = load_runs(url, ver)
    statuses = dict(zip(runs["run_id"], runs["status"])) if len(runs) and "status" in runs else {}

    def points(with_duplicates: bool):
        pts = views.honest_points(
            raw,
            load_sample_sets(url, ver),
            min_n=min_n,
            archived=archived,
            show_archived=show_archived,
            statuses=statuses,
            include_incomplete=include_incomplete,
            duplicates=load_identical_derived(url, ver),
            show_duplicates=with_duplicates,
        )
        return pts[pts["edition"] == edition].reset_index(drop=True) if edition else pts

    pts = points(show_duplicates)
    every = pts if show_duplicates else points(True)
    hidden = every.iloc[0:0]
    if not show_duplicates and len(every) and "duplicate_of" in every:
        hidden = every[every["duplicate_of"].fillna("").astype(bool)]
    reported = views.reported_for(load_reported(), category, task, list(templates)) if show_paper else None
    front = list(pts.loc[pts["on_front"], "run_id"]) if len(pts) else []
    return raw, pts, front, reported, hidden


# ---------------------------------------------------------------------------------------------------
# Query parameters <-> widget state
# ---------------------------------------------------------------------------------------------------


def qp(key: str, default: str | None = None) -> str | None:
    """One query parameter (last value) or ``default``."""
    v = st.query_params.get(key)
    return v if v not in (None, "") else default


def qp_list(key: str) -> list[str]:
    """A repeated query parameter as a list (``?cat=a&cat=b``); empty when absent."""
    return [v for v in st.query_params.get_all(key) if v != ""]


def set_qp(**params: Any) -> None:
    """Set query parameters; ``None`` or an empty list removes a key; lists become repeated keys.

    Only writes when a value changes (each write updates the browser URL)."""
    for k, v in params.items():
        cur = st.query_params.get_all(k)
        if v is None or (isinstance(v, (list, tuple)) and not v) or v == "":
            if cur:
                del st.query_params[k]
            continue
        new = [str(x) for x in v] if isinstance(v, (list, tuple)) else [str(v)]
        if cur != new:
            st.query_params[k] = new if len(new) > 1 else new[0]


def seed_state(
    page: str,
    key: str,
    default: Any,
    *,
    valid: Iterable[Any] | None = None,
    multi: bool = False,
    cast: Callable[[str], Any] | None = None,
) -> str:
    """Initialise ``st.session_state["<page>.<key>"]`` from the URL (query param ``key``) and return
    that session-state key, for use as a widget ``key``.

    The URL wins when it carries a value that differs from the last value this helper synced (a shared
    link, a link from another page, or browser navigation); otherwise the widget keeps its state. When
    the URL carries nothing and the widget state is gone (the page was reopened from the sidebar), the
    value last synced by :func:`sync_qp` comes back.
    Values not in ``valid`` are dropped (a forged link cannot inject an unknown option)."""
    skey = f"{page}.{key}"
    mark = f"{skey}.__url"
    raw = qp_list(key) if multi else qp(key)
    restored = False
    if not raw and skey not in st.session_state:
        # the page is opened again (e.g. from the sidebar, which drops the query string, and Streamlit
        # dropped the widget's state while another page ran): restore the selection last synced to
        # the URL; the page's sync_qp then writes it back into the URL
        kept = st.session_state.get(mark)
        if kept not in (None, "", []):
            seq = kept if isinstance(kept, (list, tuple)) else [kept]
            raw = [str(x) for x in seq] if multi else str(seq[0])
            restored = True
    if raw:
        vals = raw if multi else [raw]
        if cast is not None:
            parsed = []
            for v in vals:
                try:
                    parsed.append(cast(v))
                except (TypeError, ValueError):
                    pass
            vals = parsed
        if valid is not None:
            allowed = list(valid)
            vals = [v for v in vals if v in allowed]
        value = vals if multi else (vals[0] if vals else None)
        if value not in (None, []) and (restored or st.session_state.get(mark) != value):
            st.session_state[skey] = value
            if not restored:
                st.session_state[mark] = value
            return skey
    if skey not in st.session_state:
        st.session_state[skey] = default
    return skey


def follow_options(skey: str, options: Sequence[Any]) -> None:
    """Keep a multiselect's state valid when its options change between reruns: values no longer
    offered are dropped, and a selection of *all* previous options grows to all current options
    (so a new run's template or a new score run shows up by default)."""
    opts_key = f"{skey}.__options"
    options = list(options)
    prev = st.session_state.get(opts_key)
    cur = st.session_state.get(skey)
    if isinstance(cur, list):
        if prev is not None and prev != options and set(cur) == set(prev):
            st.session_state[skey] = options
        elif any(v not in options for v in cur):
            st.session_state[skey] = [v for v in cur if v in options]
    st.session_state[opts_key] = options


def sync_qp(page: str, **keys: Any) -> None:
    """Write the given widget values to the URL and remember them as synced (see ``seed_state``)."""
    for key, value in keys.items():
        st.session_state[f"{page}.{key}.__url"] = value
    set_qp(**keys)


# ---------------------------------------------------------------------------------------------------
# Accounts
# ---------------------------------------------------------------------------------------------------


def current_account():
    """The logged-in account (``automonitor.annotation.accounts.Account``) or ``None``."""
    return st.session_state.get(AUTH_KEY)


def any_accounts() -> bool:
    """Whether the store has accounts (then the app requires a login)."""
    try:
        from automonitor.annotation.accounts import any_accounts as _any
    except ImportError:  # pragma: no cover - accounts module not installed
        return False
    return _any(engine())


_NAV_DECLARED = "_am_navigation_declared"  # session key: ensure_navigation reran once
_ROUTE = threading.local()  # ``on`` while app.py's navigation runs a page in this script thread


@contextlib.contextmanager
def routed() -> Iterator[None]:
    """``app.py`` runs the selected page inside this block: :func:`ensure_navigation` then knows the page
    came through the app's role-based navigation."""
    _ROUTE.on = True
    try:
        yield
    finally:
        _ROUTE.on = False


def ensure_navigation() -> None:
    """Make sure this script run went through ``app.py``'s ``st.navigation``.

    A ``pages/`` folder beside the entry script puts a fresh Streamlit server in its legacy multipage mode
    until some session has run ``app.py``: a first request for e.g. ``/runs`` runs ``pages/runs.py``
    directly, bypassing the app's role-based navigation. Pages call this first: a page that was not run
    by ``app.py`` (:func:`routed`) declares the pages with ``st.navigation`` (which ends the legacy mode for
    the process, as Streamlit documents: with ``st.navigation`` the ``pages/`` directory is disregarded) and
    reruns with ``st.rerun``, so the same URL is served through ``app.py``. Public API only."""
    if getattr(_ROUTE, "on", False):
        return
    here = Path(__file__).resolve().parent
    st.navigation([st.Page(str(p)) for p in sorted(here.glob("[!_]*.py"))], position="hidden")
    # once per session: the rerun goes through app.py on a server; a script run that is still not routed
    # after it (an AppTest of one page file) renders the page as it is, instead of rerunning forever
    if st.session_state.get(_NAV_DECLARED):
        return
    st.session_state[_NAV_DECLARED] = True
    st.rerun()


def require_login(message: str, *, admin: bool = False):
    """The logged-in ``automonitor.annotation.accounts.Account``; when there is none (or, with ``admin``, it is not
    an admin) the page shows ``message`` as an error and stops. Calls ``ensure_navigation`` first."""
    from automonitor.annotation.accounts import Account

    ensure_navigation()
    account = current_account()
    if not isinstance(account, Account) or (admin and account.role != "admin"):
        st.error(message)
        st.stop()
    return account


def require_workbench() -> None:
    """Stop the page unless the workbench is open to the current session: the store has no accounts
    (local single-user use) or an admin is logged in. Pages call this first, so a page reached by a
    crafted URL is refused even if navigation would have hidden it."""
    ensure_navigation()
    account = current_account()
    if account is not None and getattr(account, "role", None) == "admin":
        return
    if account is None and not any_accounts():
        return
    st.error("This page needs an admin account." if account is not None else "Please log in first.")
    st.stop()


def _cookie_token() -> str | None:
    """The session cookie this browser sent with the request, or None (also in a bare AppTest run)."""
    from automonitor.annotation.accounts import SESSION_COOKIE

    try:
        return st.context.cookies.get(SESSION_COOKIE)
    except Exception:  # noqa: BLE001 - no browser request (bare AppTest run): no cookie
        return None


def logout() -> None:
    """End the login session and forget the logged-in account and every page's state: the session's
    token (the one this session logged in or resumed with, and the cookie this browser sent) is revoked
    in the store (``automonitor.annotation.accounts.end_session``), so no kept copy of the cookie logs
    in again; the cookie is cleared in this browser on the next run (``cookie_script``) and this
    Streamlit session no longer resumes from a cookie."""
    from automonitor.annotation.accounts import end_session

    tokens = {st.session_state.get(TOKEN_KEY), _cookie_token()}
    for token in tokens:
        if token:
            end_session(engine(), token)
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
    from automonitor.annotation.accounts import login_alive

    account = current_account()
    if account is not None and not login_alive(engine(), account):
        forget_login()


def restore_login() -> None:
    """Log the session in from the browser's signed session cookie
    (``automonitor.annotation.accounts.resume_session``), so a login survives a reload (F5) and a pasted link in
    the same browser. Nothing happens when an account is already logged in, after a logout in this
    session, or when the cookie is missing, forged, expired, revoked by a logout or its account changed."""
    from automonitor.annotation.accounts import resume_session

    if current_account() is not None or st.session_state.get(LOGGED_OUT_KEY):
        return
    token = _cookie_token()
    account = resume_session(engine(), token) if token else None
    if account is not None:
        st.session_state[AUTH_KEY] = account
        st.session_state[TOKEN_KEY] = token


def remember_login(account) -> None:
    """After a successful login: keep ``account`` in the session and have the next run write a signed,
    expiring session cookie (``automonitor.annotation.accounts.issue_session``) into this browser."""
    from automonitor.annotation.accounts import issue_session

    token = issue_session(engine(), account)
    st.session_state[AUTH_KEY] = account
    st.session_state[TOKEN_KEY] = token
    st.session_state.pop(LOGGED_OUT_KEY, None)
    st.session_state[COOKIE_KEY] = ("set", token)


def cookie_script() -> None:
    """Write or clear the session cookie in the browser when a login or logout asked for it
    (``SameSite=Strict``, path ``/``, max-age = the session lifetime). The token is checked to be
    URL-safe text before it is put into the script."""
    import re

    from automonitor.annotation.accounts import SESSION_COOKIE, session_max_age

    pending = st.session_state.pop(COOKIE_KEY, None)
    if pending is None:
        return
    action, token = pending
    if action == "set" and re.fullmatch(r"[A-Za-z0-9_.\-]+", token or ""):
        value = f"{SESSION_COOKIE}={token}; path=/; max-age={int(session_max_age())}; SameSite=Strict"
    else:
        value = f"{SESSION_COOKIE}=; path=/; max-age=0; SameSite=Strict"
    st.html(f"<script>document.cookie = {value!r};</script>", unsafe_allow_javascript=True)


# ---------------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------------


def md(text) -> str:
    """A data value made inert for markdown (``automonitor.views.md_escape``): names, notes, errors."""
    return views.md_escape(text)


def show_html(markup: str) -> None:
    """Render HTML built by ``automonitor.views`` (all text pieces escaped there). ``st.html`` does no
    markdown processing, so markdown tricks in model-written text stay literal."""
    st.html(markup)


def response_view(text: str | None) -> None:
    """A model-written response in two tabs: **Rendered** (its markdown rendered safely by
    ``automonitor.views.markdown_html``: raw HTML escaped, links and images left as text) and **Raw**
    (the verbatim text in an escaped ``st.code`` block, with a copy button; evidence is copied from
    there; invisible bidirectional and zero-width characters marked, :func:`code_block`). Bare source code (:func:`automonitor.views.looks_like_code`) opens on **Raw**: markdown
    would fold its lines and indentation. The tabs are keyed by the text, so each item opens on its own
    default tab (unkeyed, the browser kept the previous item's tab)."""
    key = "response_tabs." + hashlib.sha256((text or "").encode()).hexdigest()[:16]
    default = "Raw" if views.looks_like_code(text) else "Rendered"
    rendered, raw = st.tabs(["Rendered", "Raw"], default=default, key=key)
    with rendered:
        show_html(views.markdown_html(text))
    with raw:
        code_block(text)


def code_block(text: str | None) -> None:
    """Model- or user-written text verbatim in an ``st.code`` block (escaped by Streamlit, with a copy
    button), its invisible bidirectional and zero-width characters shown as ``⟨U+XXXX⟩`` markers by the
    one escaper (``automonitor.escaping.reveal_invisible``), as every other view shows them: a
    "Trojan Source" text cannot read differently here than it is."""
    from automonitor.escaping import reveal_invisible

    st.code(reveal_invisible(text or ""), language=None, wrap_lines=True)


def background_demo_notice(what: str) -> bool:
    """Say that ``make demo``'s background phase is running (its last log line, escaped) when it is, as
    the Runs and Transfer pages do; ``what`` names what this page waits for. Returns whether it runs."""
    bg = views.background_demo()
    if bg is None:
        return False
    st.info(
        f"`make demo`'s background phase is running (transfer table, then the local judge's install "
        f"and its runs; log: `{views.DEMO_LOG}`). {what} Last log line: {views.md_escape(bg)}",
        icon=":material/hourglass_top:",
    )
    return True


def empty_store_notice(what: str = "data") -> None:
    """The standard hint shown by a page when the store holds nothing to show yet."""
    st.info(
        f"No {what} in the store yet. Build the benchmark with `automonitor build` (or import pairs "
        "with `automonitor import FILE`), then launch a run on the **Runs** page."
    )


def pick(options: Sequence[Any], value: Any, default: int = 0) -> int:
    """Index of ``value`` in ``options`` (``default`` when absent) for ``index=`` arguments."""
    try:
        return list(options).index(value)
    except ValueError:
        return default


if __name__ == "__main__":  # opened as a page by Streamlit's legacy pages/ directory mode
    ensure_navigation()


def queue_nav(page: str, key: str, options: Sequence[Any], format_func, label: str, *, collapsed: bool = False) -> None:
    """The item navigation of a work queue (Label, Adjudicate): "← Previous" (shortcut K), a select of
    ``options`` bound to session key ``key``, "Next →" (shortcut J); the buttons step through
    ``options`` from the selected one and are disabled at the ends."""
    opts = list(options)

    def step(delta: int) -> None:
        cur = st.session_state.get(key)
        here = opts.index(cur) if cur in opts else 0
        st.session_state[key] = opts[max(0, min(len(opts) - 1, here + delta))]

    cur = st.session_state.get(key)
    at = opts.index(cur) if cur in opts else 0
    nav = st.columns([1, 4, 1], vertical_alignment="bottom")
    nav[0].button(
        "← Previous", key=f"{page}.prev", on_click=step, args=(-1,), shortcut="K", disabled=at == 0, width="stretch"
    )
    nav[1].selectbox(
        label, opts, format_func=format_func, key=key, label_visibility="collapsed" if collapsed else "visible"
    )
    nav[2].button(
        "Next →",
        key=f"{page}.next",
        on_click=step,
        args=(1,),
        shortcut="J",
        disabled=at >= len(opts) - 1,
        width="stretch",
    )


def metric_columns(n: int, per_row: int = 3) -> list:
    """``n`` columns for ``st.metric`` tiles, ``per_row`` to a row: at 1280 px five or six tiles in one
    row cut their labels and interval chips ("95 % CI [-0.32, 0.…")."""
    cols: list = []
    while len(cols) < n:
        cols.extend(st.columns(per_row))
    return cols[:n]
