"""AutoMonitor-Bench workbench (Streamlit): ``streamlit run app.py``.

Navigation by role (``st.navigation``, one page file per view in ``pages/``):
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

from pages import _common as ui

HERE = Path(__file__).resolve().parent

# a local icon: a material-icon page_icon makes every page fetch its favicon from fonts.gstatic.com
st.set_page_config(page_title="AutoMonitor-Bench", page_icon=str(HERE / "assets" / "icon.png"), layout="wide")


def _page(path: str, title: str, icon: str, url: str, default: bool = False):
    return st.Page(path, title=title, icon=icon, url_path=url, default=default)


def _logout_page():
    st.title("Log out")
    ui.logout()
    st.rerun()


#: The Overview's URL. The default page is served at the root, never at its own ``url_path``: Streamlit
#: would answer a direct ``/overview`` with "Page not found" before falling back to the default page. So
#: the default page gets an internal path and a hidden page serves the Overview at ``/overview``.
OVERVIEW_URL = "overview"


def _workbench_pages() -> list:
    return [
        _page(ui.PAGE_OVERVIEW, "Overview", ":material/dashboard:", "overview-home", default=True),
        _page(ui.PAGE_RUNS, "Runs", ":material/play_circle:", "runs"),
        _page(ui.PAGE_TRADEOFF, "Trade-off", ":material/scatter_plot:", "tradeoff"),
        _page(ui.PAGE_DRILLDOWN, "Drill-down", ":material/zoom_in:", "drilldown"),
        _page(ui.PAGE_SAMPLES, "Samples", ":material/table_rows:", "samples"),
        _page("pages/health.py", "Benchmark health", ":material/health_and_safety:", "health"),
        _page("pages/transfer.py", "Transfer", ":material/grid_on:", "transfer"),
        _page("pages/generation.py", "Generation", ":material/auto_awesome:", "generation"),
        st.Page(
            ui.PAGE_OVERVIEW, title="Overview", icon=":material/dashboard:", url_path=OVERVIEW_URL, visibility="hidden"
        ),
    ]


def _annotation_pages(admin: bool) -> list:
    # Written by the annotation work; only listed when present.
    spec = [("pages/label.py", "Label", ":material/label:", "label")]
    if admin:
        spec += [
            ("pages/agreement.py", "Agreement", ":material/handshake:", "agreement"),
            ("pages/adjudicate.py", "Adjudicate", ":material/gavel:", "adjudicate"),
            ("pages/accounts.py", "Accounts", ":material/manage_accounts:", "accounts"),
        ]
    return [_page(p, t, i, u, default=(not admin and u == "label")) for p, t, i, u in spec if (HERE / p).is_file()]


ui.restore_login()  # a reload or pasted link in the same browser keeps the login (session cookie)
ui.check_login()  # a logout in another tab (or an admin ending the sessions) ends this one too
account = ui.current_account()
has_accounts = ui.any_accounts()
if account is not None and not has_accounts:
    ui.logout()  # the store was emptied or swapped under a running session
    account = None

logout_page = st.Page(_logout_page, title="Log out", icon=":material/logout:", url_path="logout")

if has_accounts and account is None:
    # Every page's URL serves the login form, so that a shared link (e.g. /drilldown?run=..&sample=..)
    # keeps its path and query; after the login the rerun lands on that very page with its selections.
    linked = list(dict.fromkeys(p.url_path for p in _workbench_pages() + _annotation_pages(admin=True) if p.url_path))
    nav = st.navigation(
        [_page(ui.PAGE_LOGIN, "Log in", ":material/login:", "login", default=True)]
        + [_page(ui.PAGE_LOGIN, "Log in", ":material/login:", u) for u in linked],
        position="hidden",
    )
elif account is not None and account.role != "admin":
    pages = _annotation_pages(admin=False)
    if not pages:
        pages = [
            st.Page(
                lambda: st.info("The labelling page is not installed."), title="Label", url_path="label", default=True
            )
        ]
    nav = st.navigation({"Annotation": pages, f"Account: {account.name}": [logout_page]})
elif account is not None:
    nav = st.navigation(
        {
            "Workbench": _workbench_pages(),
            "Annotation": _annotation_pages(admin=True),
            f"Account: {account.name} (admin)": [logout_page],
        }
    )
else:
    nav = st.navigation({"Workbench": _workbench_pages()})
    with st.sidebar:
        st.caption(
            "Local single-user workbench (no accounts). To enable double-blind annotation and logins, "
            "create accounts on the command line, e.g. "
            "`automonitor users add alice --role admin --password-stdin`."
        )

ui.cookie_script()
with ui.routed():  # the pages know they came through this navigation (ui.ensure_navigation)
    nav.run()
