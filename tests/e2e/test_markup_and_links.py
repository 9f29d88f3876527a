"""Names are data and links stay inert, in real Chromium (accounts on):

- a monitor named with HTML, markdown and a bare URL shows as literal text (no bold, no link) in the
  Trade-off hover and legend, the Drill-down header, the Runs details and the Overview;
- a shared drill-down link opened while logged out shows the login form at that URL and, after the
  login, the linked page with its selections (run, sample, comparison run).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from playwright.sync_api import expect

import app_seed
from automonitor import views

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NAME = "<b>x</b> [link](http://example.com) **bold** https://evil.example"
ADMIN = ("ada", "admin", "password-for-ada-1")


@pytest.fixture(scope="module")
def tools(e2e):
    return e2e


@pytest.fixture(scope="module")
def server(migrated_sqlite, tmp_path_factory, app_factory):
    from store import get_engine, init_db

    url = migrated_sqlite(tmp_path_factory.mktemp("e2e-markup") / "store.db")
    eng = init_db(get_engine(url, fresh=True))
    rows = app_seed.make_samples(2, hostile=False)
    app_seed.insert_samples(eng, rows)
    app_seed.add_run(eng, rows, monitor=NAME, template="direct", run_id="rhost", skill=0.8, scores=True)
    app_seed.add_run(
        eng, rows, monitor="rules", template="direct", run_id="rplain", skill=0.6, scores=True, minutes_ago=30
    )
    srv = app_factory(url, accounts=[ADMIN])
    srv.extra["rows"] = rows
    yield srv
    eng.dispose()


def _text(page, scope: str = "main") -> str:
    """Visible text of ``scope``; word joiners (U+2060, invisible, used against autolinks) dropped."""
    return page.locator(scope).inner_text().replace("\u2060", "")


def _open(page, tools, server, path: str) -> None:
    """A fresh login at that URL (the session cookie is dropped first: a reload in the same browser
    would keep the login), then the page."""
    page.context.clear_cookies()
    page.goto(f"{server.url}/{path}")
    page.wait_for_selector('input[type="password"]')
    tools.wait_app(page)
    tools.log_in(page, ADMIN[0], ADMIN[2], retry=True)


def _goto(page, tools, server, path: str) -> None:
    """The page at that URL in the same browser, still logged in (its session cookie)."""
    page.goto(f"{server.url}/{path}")
    tools.wait_app(page)
    expect(page.locator("h1").first).to_be_visible()
    assert page.locator('input[type="password"]').count() == 0


def _no_live_markup(page, scope: str = "body") -> None:
    """No link to the name's URLs and no bold element made of the name's markup anywhere in ``scope``."""
    root = page.locator(scope)
    links = root.locator('a[href*="example.com"], a[href*="evil.example"]')
    assert links.count() == 0, [links.nth(i).evaluate("e => e.parentElement.outerHTML") for i in range(links.count())]
    bold = root.locator("b, strong").all_inner_texts()
    assert "x" not in [t.strip() for t in bold] and "bold" not in [t.strip() for t in bold], bold
    # plotly renders <b> as a bold tspan and <a> as an svg link
    assert page.locator('.js-plotly-plot tspan[style*="bold"]').filter(has_text=re.compile(r"^x$")).count() == 0
    assert page.locator(".js-plotly-plot a").count() == 0
    assert not page.dialogs


def _point(page, run_id: str):
    js = """(rid) => {
      const gd = document.querySelector('.js-plotly-plot');
      const traces = gd._fullData;
      for (let t = 0; t < traces.length; t++) {
        const cd = traces[t].customdata || [];
        for (let i = 0; i < cd.length; i++) {
          if (cd[i] && cd[i][0] === rid) {
            const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
            const box = gd.querySelector('.nsewdrag').getBoundingClientRect();
            return [box.left + xa.l2p(traces[t].x[i]), box.top + ya.l2p(traces[t].y[i])];
          }
        }
      }
      return null; }"""
    xy = page.evaluate(js, run_id)
    assert xy, f"no marker for {run_id}"
    return xy


def test_markup_in_a_monitor_name_shows_as_literal_text_everywhere(browser, server, tools):
    page = tools.new_page(browser)
    try:
        # logged in once, at the first page's URL; the other pages are opened with the session cookie
        _open(page, tools, server, "tradeoff")
        tools.shot(page, "markup-tradeoff-login")
        page.wait_for_selector(".js-plotly-plot .scatterlayer .point")
        # Trade-off: hover of the run's point
        x, y = _point(page, "rhost")
        page.mouse.move(x, y)
        page.wait_for_selector(".js-plotly-plot .hoverlayer .hovertext")
        hover = page.locator(".js-plotly-plot").first.locator(".hoverlayer").text_content()
        assert NAME in hover, hover
        _no_live_markup(page)
        # ROC legend (both runs have scores): the short label (at most 44 characters) is a literal entry
        legend = " ".join(page.locator(".js-plotly-plot .legend").all_text_contents())
        short = views.run_option_label({"run_id": "rhost", "monitor": NAME, "template": "direct"})
        assert short in legend and short.startswith("<b>x</b> [link]"), (short, legend)
        tools.shot(page, "markup-tradeoff")

        # Drill-down header (the run's label) and the comparison column
        sid = next(r["id"] for r in server.extra["rows"] if r["status"] == "gold" and r["split"] == "test")
        _goto(page, tools, server, "drilldown?" + urlencode({"run": "rhost", "sample": sid, "cmp": "rplain"}))
        main = _text(page)
        assert NAME in main, main[:3000]
        _no_live_markup(page, "main")
        tools.shot(page, "markup-drilldown")

        # Runs: the details of the selected run
        _goto(page, tools, server, "runs?run=rhost")
        assert NAME in _text(page)
        _no_live_markup(page, "main")

        # Overview: the runs table (a data grid) and the rest of the page
        _goto(page, tools, server, "overview")
        page.wait_for_selector('[data-testid="stDataFrame"]')
        _no_live_markup(page, "main")
        tools.shot(page, "markup-overview")
    finally:
        page.context.close()


def test_shared_drilldown_link_survives_the_login(browser, server, tools):
    page = tools.new_page(browser)
    try:
        sid = next(r["id"] for r in server.extra["rows"] if r["status"] == "gold" and r["split"] == "test")
        want = {"run": "rplain", "sample": sid, "cmp": "rhost"}
        page.goto(f"{server.url}/drilldown?" + urlencode(want))
        tools.wait_app(page)
        assert "Page not found" not in page.locator("body").inner_text()
        expect(page.get_by_role("heading", name="Log in")).to_be_visible()
        tools.log_in(page, ADMIN[0], ADMIN[2], retry=True)
        page.wait_for_selector("h1")
        url = urlparse(page.url)
        assert url.path.rstrip("/").endswith("/drilldown"), page.url
        assert {k: v[0] for k, v in parse_qs(url.query).items() if k in want} == want, page.url
        expect(page.get_by_role("heading", name="Drill-down")).to_be_visible()
        expect(page.get_by_role("heading", name=f"Sample {sid}")).to_be_visible()
        # the comparison run is selected: its column header (monitor · template · run id) is shown
        assert "rhost" in _text(page) and NAME in _text(page)
        tools.shot(page, "shared-link-after-login")
    finally:
        page.context.close()
