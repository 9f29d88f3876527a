"""AutoMonitor-Bench workbench (Streamlit): ``streamlit run app.py``.

Navigation by role (``st.navigation`` over the page files of ``pages/``, each declaring its title, icon,
order and audience: ``automonitor.views.page_index``):
- the store has accounts and nobody is logged in: only the login page;
- an annotator: the labelling page and a logout;
- an admin: the workbench (overview, runs, trade-off, drill-down, samples) and the annotation admin
  pages (agreement, adjudication), plus labelling and a logout;
- the store has no accounts (local single-user workbench): the workbench pages, with a notice on how
  to create accounts to enable annotation.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from automonitor.analysis.report_cache import gc_paused
from automonitor.views.page_index import account_section, discover
from pages._ui import auth
from pages._ui import nav as navigation

HERE = Path(__file__).resolve().parent

# a local icon: a material-icon page_icon makes every page fetch its favicon from fonts.gstatic.com
st.set_page_config(page_title="AutoMonitor-Bench", page_icon=str(HERE / "assets" / "icon.png"), layout="wide")

#: every page of pages/ with its declared title, icon, order and audience (a page is its file)
PAGES = discover(HERE)


def _pages(*access: str, default: bool = True) -> list:
    return navigation.st_pages([p for p in PAGES if p.nav.access in access], HERE, default=default)


def _logout_page():
    st.title("Log out")
    auth.logout()
    st.rerun()


auth.restore_login()  # a reload or pasted link in the same browser keeps the login (session cookie)
auth.check_login()  # a logout in another tab (or an admin ending the sessions) ends this one too
account = auth.current_account()
has_accounts = auth.any_accounts()
if account is not None and not has_accounts:
    auth.logout()  # the store was emptied or swapped under a running session
    account = None

logout_page = st.Page(_logout_page, title="Log out", icon=":material/logout:", url_path="logout")

if has_accounts and account is None:
    # Every page's URL serves the login form, so that a shared link (e.g. /drilldown?run=..&sample=..)
    # keeps its path and query; after the login the rerun lands on that very page with its selections.
    login = [p for p in PAGES if p.nav.access == "login"]
    router = st.navigation(
        [st.Page(str(HERE / p.path), title=p.nav.title, icon=p.nav.icon, url_path=p.url, default=True) for p in login]
        + [
            st.Page(str(HERE / q.path), title=q.nav.title, icon=q.nav.icon, url_path=p.url)
            for p in PAGES
            if p.nav.access != "login"
            for q in login
        ],
        position="hidden",
    )
elif account is not None and account.role != "admin":
    pages = _pages("annotation")
    if not pages:
        pages = [
            st.Page(
                lambda: st.info("The labelling page is not installed."), title="Label", url_path="label", default=True
            )
        ]
    router = st.navigation({"Annotation": pages, account_section(account.name, account.role): [logout_page]})
elif account is not None:
    router = st.navigation(
        {
            "Workbench": _pages("workbench"),
            "Annotation": _pages("annotation", "admin", default=False),
            account_section(account.name, account.role): [logout_page],
        }
    )
else:
    # the annotation and admin pages stay reachable at their URLs (hidden): they say that they need accounts
    # and how to create one (auth.require_login), instead of the Overview served silently under /label
    needs_accounts = [
        st.Page(str(HERE / p.path), title=p.nav.title, icon=p.nav.icon, url_path=p.url, visibility="hidden")
        for p in PAGES
        if p.nav.access in ("annotation", "admin")
    ]
    router = st.navigation({"Workbench": _pages("workbench") + needs_accounts})
    with st.sidebar:
        st.caption(
            "Local single-user workbench (no accounts). To enable double-blind annotation and logins, "
            "create accounts on the command line, e.g. "
            "`automonitor users add alice --role admin --password-stdin`."
        )

auth.cookie_script()
# the page's run with the cyclic garbage collector paused (reference counting still frees what is acyclic): a
# first run imports ~900 modules and loads the store's predictions, and the collector's automatic passes went
# over that growing heap again and again; Streamlit's full collection after every run (runner.postScriptGC)
# frees the run's cycles; from the second run on, what the first left alive is frozen (navigation.settled_heap);
# routed: the pages know they came through this navigation (ensure_navigation)
with navigation.settled_heap(), navigation.routed(), gc_paused():
    router.run()
