"""The Trade-off plane in real Chromium (trial 46): on the demo store's runs at the page's size, every drawn
label is nearest its own point (U1: "thresholds ..." was drawn under rules-v1's marker), and the points a
monitor's dotted view line joins take the hover and the click, as their runs (U2: the line's "monitor views"
hover covered the reasoning-view point and a click opened nothing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "views"))
from test_plane_label_attribution import DEMO, demo_points  # noqa: E402

from automonitor import views  # noqa: E402

pytestmark = [pytest.mark.browser]

_CLICKS = """<script>
var d = document.getElementById('plane'); window.clicks = [];
d.on('plotly_click', function (e) { window.clicks.push(e.points.map(p => [p.data.name, p.customdata ? p.customdata[0] : null])); });
</script></body>"""


def _open(page, tmp_path, width: int = 820, plot_px: tuple[float, float] | None = None):
    fig = views.tradeoff_figure(demo_points(), height=400, plot_px=plot_px)  # pages/tradeoff.py's height
    # the template a CLI process gives the figure (the HTML report's): once a worker has imported Streamlit
    # (tests/app), plotly's default template is Streamlit's, under which plotly.js took the hover but no click
    fig.update_layout(width=width, template="plotly")
    html = fig.to_html(include_plotlyjs=True, div_id="plane").replace("</body>", _CLICKS)
    path = tmp_path / "plane.html"
    path.write_text(html, encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector("#plane .scatterlayer .point")
    ax = page.evaluate(
        "(() => { const l = document.getElementById('plane')._fullLayout;"
        " return [l.xaxis._offset, l.xaxis._length, l.xaxis.range, l.yaxis._offset, l.yaxis._length, l.yaxis.range] })()"
    )
    box = page.locator("#plane").bounding_box()

    def at(x: float, y: float) -> tuple[float, float]:
        xo, xl, xr, yo, yl, yr = ax
        return box["x"] + xo + (x - xr[0]) / (xr[1] - xr[0]) * xl, box["y"] + yo + (yr[1] - y) / (yr[1] - yr[0]) * yl

    at.plot = (ax[1], ax[4])  # the plot area as drawn (px)
    at.hover_only = views.hover_only_labels(fig)  # labels left out for want of room
    return at


def _dist(b: dict, x: float, y: float) -> float:
    dx = max(b["x"] - x, 0.0, x - (b["x"] + b["width"]))
    dy = max(b["y"] - y, 0.0, y - (b["y"] + b["height"]))
    return float((dx * dx + dy * dy) ** 0.5)


@pytest.mark.parametrize("width", [700, 820, 1100, 1280])
def test_every_drawn_label_is_nearest_its_own_point(browser, tmp_path, width):
    """Laid out as the Trade-off page lays it out: for the plot area the browser draws (measured on a first
    drawing, as pages/_ui/plot_size.py measures it)."""
    page = browser.new_page(viewport={"width": width + 40, "height": 460})
    try:
        drawn_at = _open(page, tmp_path, width).plot
        at = _open(page, tmp_path, width, plot_px=drawn_at)
        assert at.plot == drawn_at
        points = {label: at(x, y) for _, _, x, y, label, _ in DEMO}
        texts = page.evaluate(
            "Array.from(document.querySelectorAll('#plane .scatterlayer .textpoint text')).map(t => {"
            " const r = t.getBoundingClientRect(); return [t.textContent, r.x, r.y, r.width, r.height] })"
        )
        drawn = {}
        for text, x, y, w, h in texts:
            if text:
                label = next(lb for lb in points if lb.replace(" ", "") == text.replace(" ", ""))  # lines joined
                drawn[label] = dict(x=x, y=y, width=w, height=h)
        assert len(points) - len(drawn) == at.hover_only  # each label drawn, or counted as in the hover only
        if width >= 820:  # room for all seven (at 700 px the front's "tfidf-lr direct" has none)
            assert set(drawn) == set(points)
        for label, b in drawn.items():
            own = _dist(b, *points[label])
            nearest = min(_dist(b, *p) for other, p in points.items() if other != label)
            assert own < nearest, (label, own, nearest)
    finally:
        page.close()


def test_the_view_line_leaves_hover_and_click_to_the_points(browser, tmp_path):
    page = browser.new_page(viewport={"width": 860, "height": 460})
    try:
        at = _open(page, tmp_path)
        for run, x, y in (("r5", 0.481, 0.471), ("r4", 0.339, 0.329)):  # the reasoning and answer views
            page.mouse.move(at(x, y)[0] - 40, at(x, y)[1] + 40)  # from off the point, as a reader's pointer comes
            page.mouse.move(*at(x, y), steps=4)
            hover = "document.querySelector('#plane .hoverlayer').textContent"
            page.wait_for_function(f"{hover}.length > 0")
            text = page.evaluate(hover)
            assert f"run {run}" in text and "monitor views" not in text, text
            page.mouse.click(*at(x, y))
            page.wait_for_function("window.clicks.length > 0")
            assert page.evaluate("window.clicks.pop()") == [["runs: direct", run]]
    finally:
        page.close()
