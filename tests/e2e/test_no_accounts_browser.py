"""Trial 46 (U3) in real Chromium against ``streamlit run app.py`` on a store without accounts: /label,
/agreement, /adjudicate and /accounts say that they need accounts and how to create one (they showed the
Overview without a word), and the sidebar still lists only the workbench pages."""

from __future__ import annotations

import pytest

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
            main = page.locator('[data-testid="stMain"]').inner_text()
            assert "needs accounts" in main and "automonitor users add" in main, (path, main[:300])
            assert page.locator('[data-testid="stException"]').count() == 0
            nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
            assert "Overview" in nav and not any(t in nav for t in ("Label", "Agreement", "Adjudicate", "Accounts"))
    finally:
        page.context.close()
