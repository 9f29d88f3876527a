"""Page state survives switching pages from the sidebar, in real headless Chromium: a
Samples search and the Drill-down's selected run come back (in the widgets and in the URL) when the
page is opened again from the sidebar, not only with the browser's Back button."""

from __future__ import annotations

import re

import pytest

from store import get_engine, init_db

import app_seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(migrated_sqlite, tmp_path_factory, app_factory):
    url = migrated_sqlite(tmp_path_factory.mktemp("e2e-state") / "store.db")
    eng = init_db(get_engine(url, fresh=True))
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=2, hostile=False)
    srv = app_factory(url)
    srv.extra["run_ids"] = info["run_ids"]
    yield srv
    eng.dispose()


def _sidebar(page, e2e, name: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=name).click()
    e2e.wait_app(page)


def test_samples_search_and_drilldown_run_come_back_from_the_sidebar(browser, server, e2e):
    page = e2e.new_page(browser, 1280, 720)
    try:
        page.goto(f"{server.url}/samples")
        e2e.wait_app(page)
        box = page.get_by_role("textbox", name=re.compile("^Search request"))
        box.fill("pair")
        box.press("Enter")
        e2e.wait_app(page)
        page.wait_for_url(re.compile(r"[?&]q=pair"))
        _sidebar(page, e2e, "Runs")
        assert "q=pair" not in page.url
        _sidebar(page, e2e, "Samples")
        page.wait_for_url(re.compile(r"[?&]q=pair"), timeout=20_000)
        assert page.get_by_role("textbox", name=re.compile("^Search request")).input_value() == "pair"

        second = server.extra["run_ids"][1]
        page.goto(f"{server.url}/drilldown?run={second}")
        e2e.wait_app(page)
        _sidebar(page, e2e, "Overview")
        _sidebar(page, e2e, "Drill-down")
        page.wait_for_url(re.compile(rf"[?&]run={re.escape(second)}"), timeout=20_000)
        e2e.shot(page, "page-state-drilldown-1280")
    finally:
        page.context.close()
