"""The first load of a fresh app server in real Chromium lists only pages in the sidebar (issue 39).

A ``pages/`` folder beside ``app.py`` puts Streamlit in its legacy multipage mode until the first script run
reaches ``app.py``'s ``st.navigation``: that run first lists every ``.py`` file directly under ``pages/`` in the
sidebar. The helper modules there (``_auth.py``, ``_data.py``, ...) showed as pages "auth", "data", ... for
seconds on a slow first load, and clicking one said "Page not found"; they now live in ``pages/_ui/``. A
recorder installed before the app's scripts notes every sidebar link ever drawn."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_the_first_load_lists_only_pages(migrated_sqlite, browser, tmp_path, app_factory, e2e):
    url = migrated_sqlite(tmp_path / "fresh.db")
    init_db(get_engine(url, fresh=True)).dispose()
    srv = app_factory(url)  # a fresh server: its first session runs the legacy pages/ mode first
    page = e2e.new_page(browser, 1280, 720)
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
