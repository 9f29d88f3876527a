"""The HTML report in real Chromium with every network request blocked: the plot renders (plotly.js
unpacked from the file itself) and a monitor named like an XSS payload shows as text, no dialog."""

from __future__ import annotations

import pytest
from report_html_seed import XSS, seed_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_report_renders_offline_and_escapes(tmp_path, page):
    from automonitor import analysis
    from automonitor.views import report_html

    eng = seed_store(f"sqlite:///{tmp_path / 'store.db'}")
    rep = analysis.report(eng, None, "exclude")
    path = tmp_path / "report.html"
    report_html.write(eng, rep, str(path))

    blocked: list[str] = []

    def block(route):
        if route.request.url.startswith("file://") and route.request.url.endswith("report.html"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", block)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-plotted='1']", timeout=30_000)
    # the plane is drawn: an SVG with one path per marker of the runs and the reference points
    assert page.locator("#fig-plane .main-svg").count() >= 1
    assert page.locator("#fig-plane .scatterlayer .trace").count() >= 3
    assert page.locator("#fig-plane .scatterlayer .point").count() >= 3
    assert page.locator("#am-error").inner_text() == ""
    # the payload is text, in the tables, the gallery and the plot's legend; nothing fired
    assert XSS in page.locator("body").inner_text()
    assert page.locator("img").count() == 0
    assert page.dialogs == []
    assert blocked == [] and all(u.startswith("file://") for u in requests), requests
