"""Accounts in real headless Chromium at 1280x720, one app server for the module (a store with two annotator
accounts, ``HOSTILE`` and ``anna``; each test logs in as its own):

- the sidebar's account section title shows the account's name literally: Streamlit renders a navigation section
  title as Markdown, and a name is free text an admin typed (trial50 saw ``**bold** $x^2$ :red[red]`` typeset in
  bold, KaTeX and red on every page);
- logout ends the login session for good: a copy of the session cookie kept from before the logout (another tab,
  a pasted cookie) no longer logs in."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from automonitor.annotation.accounts import SESSION_COOKIE

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HOSTILE = "**bold** $x^2$ <b>html</b> :red[red] _it_"


@pytest.fixture(scope="module")
def server(migrated_sqlite, tmp_path_factory, app_factory):
    d = tmp_path_factory.mktemp("e2e-accounts")
    return app_factory(
        migrated_sqlite(d / "store.db"),
        accounts=[(HOSTILE, "annotator", "password-for-hostile"), ("anna", "annotator", "password-for-anna")],
        env={"AUTOMONITOR_SECRET_FILE": str(d / "session-secret")},
    )


def test_the_account_title_shows_the_name_as_typed(browser, server, e2e):
    page = e2e.new_page(browser, 1280, 720)
    try:
        e2e.log_in(page, HOSTILE, "password-for-hostile", url=server.url, retry=True)
        page.get_by_role("heading", name="Label").wait_for(timeout=30_000)
        header = page.locator('[data-testid="stNavSectionHeader"]', has_text="Account")
        header.first.wait_for(timeout=30_000)
        assert header.count() == 1
        # the whole name, as typed, with the role before it (a long title is cut at the sidebar's width)
        title = header.locator('[data-testid="stMarkdownContainer"]')
        assert title.text_content().strip() == f"Account (annotator): {HOSTILE}"
        for markup in ("strong", "em", ".katex", "b", '[class*="colored"]', "span[style*='color']"):
            assert title.locator(markup).count() == 0, markup
    finally:
        page.context.close()


def test_a_copied_cookie_does_not_log_in_after_logout(browser, server, e2e):
    srv = server
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
