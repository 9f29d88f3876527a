"""Issue 37 in real headless Chromium against ``streamlit run app.py``: two tabs of one login, a logout in
one ends the other (its next action shows the login page and its save is refused, finding 1); invisible
bidirectional characters are marked in the Label page's request, its "Rendered" and its "Raw" tab
(finding 6)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM
from store import get_engine, init_db, session_scope
from store.models import Annotation
from store.queries.samples import insert_samples

from helpers import candidate_row

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PW = "password-for-anna"
BIDI = "\u202e"


def test_logout_in_one_tab_ends_the_other_and_bidi_is_marked_on_the_label_page(
    migrated_sqlite, tmp_path, app_factory, browser, e2e
):
    url = migrated_sqlite(tmp_path / "store.db")
    eng = init_db(get_engine(url, fresh=True))
    rows = [
        candidate_row(
            id=f"pp-{lab[0]}",
            pair_id="pp-pair",
            category="safety_permission",
            task="qa",
            label=lab,
            request=f"Open invoice{BIDI}fdp.exe please",
            response=f"Sure: run invoice{BIDI}fdp.exe ({lab})",
        )
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    srv = app_factory(url, accounts=[("anna", "annotator", PW)], env={"AUTOMONITOR_SECRET_FILE": str(tmp_path / "s")})
    ann.assign(eng, SYSTEM, k=1, seed=1)
    tab_a = e2e.new_page(browser, 1280, 900)
    try:
        e2e.log_in(tab_a, "anna", PW, url=srv.url, retry=True)
        tab_a.get_by_role("heading", name="Label").wait_for()
        tab_b = tab_a.context.new_page()  # a second tab of the same browser: the same session cookie
        tab_b.goto(srv.url)  # an annotator's Label page is the app's main page
        e2e.wait_app(tab_b)
        tab_b.get_by_role("heading", name="Label").wait_for(timeout=30_000)

        # finding 6: the request block and the response's Raw tab mark the bidi override
        main = tab_b.locator("main")
        rendered = main.locator(".am-md").first.inner_text()  # the Rendered tab (markdown) marks it too
        assert "run invoice⟨U+202E⟩fdp.exe" in rendered, rendered
        tab_b.get_by_role("tab", name="Raw").click()
        e2e.wait_app(tab_b)
        codes = main.locator('[data-testid="stCode"]')
        texts = [codes.nth(i).inner_text() for i in range(codes.count())]
        assert any("Open invoice⟨U+202E⟩fdp.exe" in t for t in texts), texts
        assert any("run invoice⟨U+202E⟩fdp.exe" in t for t in texts), texts
        assert BIDI not in main.inner_text()

        # finding 1: tab B has a label chosen; tab A logs out; tab B's save is refused, it shows the login
        tab_b.locator('[data-testid="stRadio"]').first.get_by_text("Misbehavior", exact=True).click()
        e2e.wait_app(tab_b)
        tab_a.get_by_role("link", name="Log out").click()
        e2e.wait_app(tab_a)
        tab_a.wait_for_selector('input[type="password"]', timeout=30_000)
        tab_b.get_by_role("button", name="Save label").click()
        e2e.wait_app(tab_b)
        tab_b.wait_for_selector('input[type="password"]', timeout=30_000)
        assert tab_b.get_by_role("heading", name="Label").count() == 0
        assert tab_b.get_by_role("link", name="Log out").count() == 0
        with eng.connect() as c:
            assert c.execute(sa.select(sa.func.count()).select_from(Annotation)).scalar() == 0  # nothing saved
        # a reload of tab B does not log in again either (the cookie's session is ended server-side)
        tab_b.reload()
        e2e.wait_app(tab_b)
        tab_b.wait_for_selector('input[type="password"]', timeout=30_000)
    finally:
        tab_a.context.close()
        eng.dispose()
