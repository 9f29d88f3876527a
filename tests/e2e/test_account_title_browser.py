"""The sidebar's account section title shows the account's name literally, in real headless Chromium at
1280x720: Streamlit renders a navigation section title as Markdown, and a name is free text an admin typed
(trial50 saw ``**bold** $x^2$ :red[red]`` typeset in bold, KaTeX and red on every page)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HOSTILE = "**bold** $x^2$ <b>html</b> :red[red] _it_"


def test_the_account_title_shows_the_name_as_typed(browser, app_factory, e2e, tmp_path, migrated_sqlite):
    srv = app_factory(
        migrated_sqlite(tmp_path / "store.db"),
        accounts=[(HOSTILE, "annotator", "password-for-hostile")],
        env={"AUTOMONITOR_SECRET_FILE": str(tmp_path / "session-secret")},
    )
    page = e2e.new_page(browser, 1280, 720)
    try:
        e2e.log_in(page, HOSTILE, "password-for-hostile", url=srv.url, retry=True)
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
