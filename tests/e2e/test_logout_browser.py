"""Logout ends the login session for good, in real headless Chromium at 1280x720: a copy of the
session cookie kept from before the logout (another tab, a pasted cookie) no longer logs in."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from automonitor.annotation.accounts import SESSION_COOKIE

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_copied_cookie_does_not_log_in_after_logout(browser, app_factory, e2e, tmp_path, migrated_sqlite):
    srv = app_factory(
        migrated_sqlite(tmp_path / "store.db"),
        accounts=[("anna", "annotator", "password-for-anna")],
        env={"AUTOMONITOR_SECRET_FILE": str(tmp_path / "session-secret")},
    )
    page = e2e.new_page(browser, 1280, 720)
    fresh = None
    try:
        e2e.log_in(page, "anna", "password-for-anna", url=srv.url, retry=True)
        page.get_by_role("heading", name="Label").wait_for()
        copied = [c for c in page.context.cookies() if c["name"] == SESSION_COOKIE]
        assert len(copied) == 1 and copied[0]["value"]
        # the copy logs in while the session lives (so the refusal below is the logout's doing)
        probe = browser.new_context(viewport={"width": 1280, "height": 720})
        probe.add_cookies(copied)
        p = probe.new_page()
        p.goto(f"{srv.url}/label")
        e2e.wait_app(p)
        p.get_by_role("heading", name="Label").wait_for(timeout=30_000)
        probe.close()

        page.get_by_role("link", name="Log out").click()
        e2e.wait_app(page)
        page.wait_for_selector('input[type="password"]', timeout=30_000)

        fresh = browser.new_context(viewport={"width": 1280, "height": 720})
        fresh.add_cookies(copied)
        other = fresh.new_page()
        other.goto(f"{srv.url}/label")
        e2e.wait_app(other)
        other.reload()
        e2e.wait_app(other)
        other.wait_for_selector('input[type="password"]', timeout=30_000)
        expect(other.get_by_role("heading", name="Log in")).to_be_visible()
        assert other.get_by_role("heading", name="Label").count() == 0
        assert other.get_by_role("link", name="Log out").count() == 0
    finally:
        page.context.close()
        if fresh is not None:
            fresh.close()
