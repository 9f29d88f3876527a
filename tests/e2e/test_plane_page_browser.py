"""The Trade-off page's plane in real Chromium at 700, 820, 1100 and 1280 px wide (trial 47): its labels are laid
out for the plot area the browser really draws (pages/_ui/plot_size.py measures it and the page reruns with it;
the layout had assumed 640 px where the page draws ~742 px at 1280x720, and left out a label that had room), and
every drawn label is nearer its own point than any other, clear of the other labels, markers and the Pareto
line; where a label is left out, the page says that it is in the hover only. Resizing the window lays the labels
out again for the new plot area."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from automonitor import views
from store import get_engine, init_db

import app_seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHART = ".st-key-tradeoff-chart .js-plotly-plot"

#: The plane as drawn: the plot area, the size the labels were laid out for (layout.meta), every marker's
#: screen position, every drawn label's box with its own point, the Pareto line's points and the number of
#: labelled points drawn without their text.
_PLANE_JS = """() => {
  const gd = document.querySelector('%s');
  if (!gd || !gd._fullLayout || !gd._fullLayout.xaxis) return null;
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.querySelector('.nsewdrag').getBoundingClientRect();
  const at = (x, y) => [box.left + xa.l2p(x), box.top + ya.l2p(y)];
  const points = [], labels = [], front = [];
  gd.querySelectorAll('.scatterlayer .trace').forEach(tr => {
    tr.querySelectorAll('.points .point').forEach(p => { const d = p.__data__; points.push(at(d.x, d.y)); });
    tr.querySelectorAll('.text .textpoint').forEach(g => {
      const t = g.querySelector('text');
      if (!t || !t.textContent) return;
      const d = g.__data__, r = t.getBoundingClientRect();
      labels.push({text: t.textContent, own: at(d.x, d.y), x: r.x, y: r.y, w: r.width, h: r.height});
    });
  });
  gd._fullData.filter(t => t.name && t.name.startsWith('Pareto front')).forEach(t => {
    front.push(t.x.map((x, i) => at(x, t.y[i])));
  });
  const hoverOnly = gd._fullData.filter(t => t.mode && t.mode.includes('text') && t.text)
    .reduce((n, t) => n + t.text.filter(s => s === '').length, 0);
  return {plot: [xa._length, ya._length], laid: (gd.layout.meta || {}).%s, points, labels, front, hoverOnly,
          area: [box.left, box.top, box.right, box.bottom]};
}""" % (CHART, views.figures.LAID_OUT_META)


@pytest.fixture(scope="module")
def server(migrated_sqlite, tmp_path_factory, app_factory):
    url = migrated_sqlite(tmp_path_factory.mktemp("e2e-plane") / "store.db")
    eng = init_db(get_engine(url, fresh=True))
    app_seed.seed_store(eng, pairs_per_cell=3, runs=5, hostile=False)
    srv = app_factory(url)
    yield srv
    eng.dispose()


@pytest.fixture(scope="module", autouse=True)
def _tools(e2e):
    global new_page, wait_app, shot, RUNS_JS
    new_page, wait_app, shot, RUNS_JS = e2e.new_page, e2e.wait_app, e2e.viewport_shot, e2e.RUNS_JS


def _laid_out_for_the_drawn_plot(page) -> dict:
    """Wait until the chart's labels were laid out for the plot area it is drawn at (the measure's rerun), then
    return the plane (:data:`_PLANE_JS`)."""
    page.wait_for_function(
        f"(() => {{ const p = ({_PLANE_JS})(); return p && p.laid && Math.abs(p.laid[0] - p.plot[0]) <= 1.5"
        " && Math.abs(p.laid[1] - p.plot[1]) <= 1.5 })()",
        timeout=60_000,
    )
    wait_app(page)
    plane = page.evaluate(_PLANE_JS)
    assert abs(plane["laid"][0] - plane["plot"][0]) <= 1.5, plane["laid"]
    return plane


def _dist(b: dict, x: float, y: float) -> float:
    dx = max(b["x"] - x, 0.0, x - (b["x"] + b["w"]))
    dy = max(b["y"] - y, 0.0, y - (b["y"] + b["h"]))
    return float((dx * dx + dy * dy) ** 0.5)


def _crosses(b: dict, p: list[float], q: list[float]) -> bool:
    """Whether the axis-parallel segment p-q (1 px either side: the line's width 2) passes through box ``b``."""
    x0, x1, y0, y1 = min(p[0], q[0]) - 1, max(p[0], q[0]) + 1, min(p[1], q[1]) - 1, max(p[1], q[1]) + 1
    return x0 < b["x"] + b["w"] and b["x"] < x1 and y0 < b["y"] + b["h"] and b["y"] < y1


def _faults(plane: dict) -> list[str]:
    bad = []
    labels = plane["labels"]
    for i, b in enumerate(labels):
        own = _dist(b, *b["own"])
        others = [p for p in plane["points"] if abs(p[0] - b["own"][0]) > 0.5 or abs(p[1] - b["own"][1]) > 0.5]
        nearest = min((_dist(b, *p) for p in others), default=1e9)
        if not own < nearest:
            bad.append(f"{b['text']}: own point {own:.1f} px, another {nearest:.1f} px")
        if nearest < 5.5:  # half a marker (size 11): the label covers another marker
            bad.append(f"{b['text']} covers another marker")
        for o in labels[i + 1 :]:
            if (
                b["x"] < o["x"] + o["w"]
                and o["x"] < b["x"] + b["w"]
                and b["y"] < o["y"] + o["h"]
                and o["y"] < b["y"] + b["h"]
            ):
                bad.append(f"{b['text']} overlaps {o['text']}")
        for line in plane["front"]:
            if any(_crosses(b, p, q) for p, q in zip(line, line[1:])):
                bad.append(f"{b['text']} crosses the Pareto line")
        left, top, right, bottom = plane["area"]
        if b["x"] < left - 1 or b["x"] + b["w"] > right + 1 or b["y"] < top - 1 or b["y"] + b["h"] > bottom + 1:
            bad.append(f"{b['text']} leaves the plot")
    return bad


@pytest.mark.parametrize("width", [700, 820, 1100, 1280])
def test_the_labels_are_laid_out_for_the_plot_the_page_draws(browser, server, width):
    page = new_page(browser, width=width, height=720)
    try:
        page.goto(f"{server.url}/tradeoff?min_n=1&paper=1")
        wait_app(page)
        plane = _laid_out_for_the_drawn_plot(page)
        shot(page, f"tradeoff-plane-{width}")
        assert plane["labels"], plane
        assert _faults(plane) == [], width
        note = page.get_by_text("hover over a point to read its name")
        if plane["hoverOnly"]:
            expect(note).to_be_visible()
        else:
            expect(note).to_have_count(0)
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        page.context.close()


def test_a_resized_window_lays_the_labels_out_again(browser, server):
    page = new_page(browser, width=1280, height=720)
    try:
        page.goto(f"{server.url}/tradeoff?min_n=1&paper=1")
        wait_app(page)
        wide = _laid_out_for_the_drawn_plot(page)
        page.set_viewport_size({"width": 900, "height": 720})
        page.wait_for_function(
            f"(() => {{ const p = ({_PLANE_JS})(); return p && p.plot[0] < {wide['plot'][0] - 20} }})()", timeout=60_000
        )
        narrow = _laid_out_for_the_drawn_plot(page)
        assert narrow["laid"][0] < wide["laid"][0] - 20, (wide["laid"], narrow["laid"])
        assert _faults(narrow) == []
    finally:
        page.context.close()


def test_a_returning_browser_lays_the_labels_out_on_the_first_run(browser, server):
    """The browser keeps the last plot area measured (a cookie): a new session in it at the same window size lays
    the labels out for the drawn plot on its first run, and the measure asks for no second run."""
    page = new_page(browser, width=1100, height=720)
    ctx = page.context
    try:
        page.goto(f"{server.url}/tradeoff?min_n=1&paper=1")
        wait_app(page)
        first = _laid_out_for_the_drawn_plot(page)
        kept = [c for c in ctx.cookies() if c["name"].startswith("am_plot_")]
        assert [c["value"] for c in kept] == ["%dx%d" % tuple(round(v) for v in first["plot"])], kept
        again = ctx.new_page()  # a new tab: a new session of the same browser
        again.add_init_script(RUNS_JS)
        again.goto(f"{server.url}/tradeoff?min_n=1&paper=1")
        wait_app(again)
        plane = _laid_out_for_the_drawn_plot(again)
        again.wait_for_timeout(2000)  # the measure checks every 1.5 s: a rerun it asked for would have started
        wait_app(again)
        assert again.evaluate("() => window.__amRuns") == 1
        assert plane["laid"] == first["laid"] and _faults(plane) == []
    finally:
        ctx.close()


#: records, in every page of a context, when the Trade-off page's loading status line and the plane's first run
#: marker were first in the document (``performance.now()`` ms), from a mutation observer added before the page's
#: own scripts
_FIRST_SEEN_JS = """(() => {
  if (window.top !== window) return;
  window.__amSeen = {};
  const note = () => {
    const seen = window.__amSeen, t = performance.now();
    if (seen.status === undefined && document.body && document.body.textContent.includes(%r)) seen.status = t;
    if (seen.plane === undefined && document.querySelector('.js-plotly-plot .scatterlayer .point')) seen.plane = t;
  };
  const watch = () => new MutationObserver(note).observe(document.documentElement,
    {subtree: true, childList: true, characterData: true});
  if (document.documentElement) watch(); else document.addEventListener('DOMContentLoaded', watch);
})()"""


#: the status line's words (pages/tradeoff.py's LOADING, as the reader sees them)
LOADING = "Loading the runs and their report for the plane…"


def test_a_cold_first_load_says_it_is_loading_before_the_plane(browser, server, app_factory):
    """A fresh server's first load of the page imports and computes for seconds before the plane (issue 38): the
    page says at once that it is loading (a status line under the title), before the plane is drawn, and the
    line is gone once it is."""
    fresh = app_factory(server.db_url)  # a freshly started server: the page's first run is cold
    page = new_page(browser, width=1280, height=720)
    try:
        page.context.add_init_script(_FIRST_SEEN_JS % LOADING)
        page.goto(f"{fresh.url}/tradeoff")
        page.wait_for_selector(".js-plotly-plot .scatterlayer .point", timeout=120_000)
        wait_app(page, timeout=120_000)
        seen = page.evaluate("() => window.__amSeen")
        assert "status" in seen, seen  # the line was drawn
        assert seen["status"] < seen["plane"], seen  # before the plane
        expect(page.get_by_text(LOADING)).to_have_count(0)  # and taken away once the plane is drawn
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        page.context.close()
