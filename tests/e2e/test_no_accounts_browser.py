"""Trial 46 (U3) in real Chromium against ``streamlit run app.py`` on a store without accounts: /label,
/agreement, /adjudicate and /accounts say that they need accounts and how to create one (they showed the
Overview without a word), and the sidebar still lists only the workbench pages."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from store import get_engine, init_db

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_accounts_pages_say_why_without_accounts(migrated_sqlite, browser, tmp_path, app_factory, e2e):
    url = migrated_sqlite(tmp_path / "none.db")
    init_db(get_engine(url, fresh=True)).dispose()
    srv = app_factory(url)
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
