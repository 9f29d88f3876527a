"""A fresh app server on an empty store (no accounts, no data) in real headless Chromium at 1280x720, one server
for the module:

- the first load lists only pages in the sidebar (issue 39). A ``pages/`` folder beside ``app.py`` puts Streamlit
  in its legacy multipage mode until the first script run reaches ``app.py``'s ``st.navigation``: that run first
  lists every ``.py`` file directly under ``pages/`` in the sidebar. The helper modules there (``_auth.py``,
  ``_data.py``, ...) showed as pages "auth", "data", ... for seconds on a slow first load, and clicking one said
  "Page not found"; they now live in ``pages/_ui/``. A recorder installed before the app's scripts notes every
  sidebar link ever drawn. This test runs first, on the server's first load (a server some other test loaded
  first is not used: a new one is started);
- trial 46 (U3): /label, /agreement, /adjudicate and /accounts say that they need accounts and how to create one
  (they showed the Overview without a word), and the sidebar still lists only the workbench pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from automonitor.views.page_index import discover
from store import get_engine, init_db

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]

#: every text a sidebar navigation link ever had on this page (a set on window, filled on each DOM change)
_MENU_JS = """(() => {
  if (window.top !== window) return;
  window.__amMenu = new Set();
  const note = () => document.querySelectorAll('[data-testid="stSidebarNav"] a').forEach(a => {
    const label = a.querySelector('[data-testid="stMarkdownContainer"]') || a;  // not the icon's name
    window.__amMenu.add(label.textContent.trim());
  });
  const watch = () => new MutationObserver(note).observe(document.documentElement,
    {subtree: true, childList: true, characterData: true});
  if (document.documentElement) watch(); else document.addEventListener('DOMContentLoaded', watch);
})()"""


def _empty_server(migrated_sqlite, path: Path, app_factory):
    url = migrated_sqlite(path)
    init_db(get_engine(url, fresh=True)).dispose()
    srv = app_factory(url)
    srv.extra["loaded"] = False  # whether a browser has loaded a page of it yet
    return srv


@pytest.fixture(scope="module")
def server(migrated_sqlite, tmp_path_factory, app_factory):
    """A server on an empty migrated store without accounts (``extra["loaded"]``: a page was loaded)."""
    return _empty_server(migrated_sqlite, tmp_path_factory.mktemp("e2e-fresh") / "fresh.db", app_factory)


def test_the_first_load_lists_only_pages(migrated_sqlite, browser, tmp_path, app_factory, e2e, server):
    srv = server
    if srv.extra["loaded"]:  # run after another test of the module: a fresh server of its own
        srv = _empty_server(migrated_sqlite, tmp_path / "fresh.db", app_factory)
    srv.extra["loaded"] = True
    page = e2e.new_page(browser, 1280, 720)  # a fresh server: its first session runs the legacy pages/ mode first
    try:
        page.context.add_init_script(_MENU_JS)
        page.goto(srv.url)
        e2e.wait_app(page)
        seen = set(page.evaluate("() => [...window.__amMenu]"))
        pages = discover(REPO)
        # a page's navigation title, or the name the legacy menu gives its file (the file's name), or the entry
        # script's ("app")
        allowed = {p.nav.title for p in pages} | {p.url for p in pages} | {"app"}
        assert "Overview" in seen, seen
        assert seen <= allowed, sorted(seen - allowed)
    finally:
        page.context.close()


def test_accounts_pages_say_why_without_accounts(browser, server, e2e):
    srv = server
    srv.extra["loaded"] = True
    page = e2e.new_page(browser, 1280, 720)
    try:
        for path in ("label", "agreement", "adjudicate", "accounts"):
            page.goto(f"{srv.url}/{path}")
            e2e.wait_app(page)
            # the first load of a fresh server makes two script runs, the page drawn by the second, and
            # the gap between them (190-800 ms at load 8-12) can outlast wait_app's quiet: waited for
            main = page.locator('[data-testid="stMain"]')
            expect(main).to_contain_text("needs accounts")
            expect(main).to_contain_text("automonitor users add")
            assert page.locator('[data-testid="stException"]').count() == 0
            nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
            assert "Overview" in nav and not any(t in nav for t in ("Label", "Agreement", "Adjudicate", "Accounts"))
    finally:
        page.context.close()
