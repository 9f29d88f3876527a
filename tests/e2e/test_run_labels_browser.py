"""Run options are not cut off, in real headless Chromium at 1280x720: with long monitor
names and run ids, the Drill-down's run select shows each run's short label
(``automonitor.views.run_option_label``) whole, in the closed select and in its open option list:
no option text overflows its box (``scrollWidth <= clientWidth``) or is shown with an ellipsis."""

from __future__ import annotations

import pytest

from automonitor import views
from store import get_engine, init_db

import app_seed

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LONG = [
    ("openai:gpt-4o-mini-2024-07-18-with-a-very-long-deployment-name", "evidence", "run_20261208_101010_abc123"),
    ("anthropic:claude-3-5-haiku-20241022", "direct", "run_20261208_111111_ffee00"),
]

_OVERFLOW_JS = """(el) => {
  const boxes = [el, ...el.querySelectorAll('*')].filter(e => e.childElementCount === 0 && e.textContent.trim());
  return boxes.map(e => ({text: e.textContent.trim(), sw: e.scrollWidth, cw: e.clientWidth,
                          ell: getComputedStyle(e).textOverflow}));
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory, app_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('e2e-labels') / 'store.db'}"
    eng = init_db(get_engine(url, fresh=True))
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=0, hostile=False)
    for i, (monitor, tpl, rid) in enumerate(LONG):
        app_seed.add_run(eng, info["samples"], monitor=monitor, template=tpl, run_id=rid, minutes_ago=10 + i)
    srv = app_factory(url)
    yield srv
    eng.dispose()


def _fits(page, locator) -> list[dict]:
    """The leaf text boxes under ``locator`` that overflow (wider content than box)."""
    return [b for b in locator.evaluate(_OVERFLOW_JS) if b["sw"] > b["cw"] + 1]


def test_drilldown_run_options_are_shown_whole_at_1280(browser, server, e2e):
    labels = [
        views.run_option_label({"run_id": r, "monitor": m, "template": t, "status": "finished"}) for m, t, r in LONG
    ]
    assert all(len(x) <= views.RUN_LABEL_MAX for x in labels)
    page = e2e.new_page(browser, 1280, 720)
    try:
        page.goto(f"{server.url}/drilldown?run={LONG[0][2]}")
        e2e.wait_app(page)
        box = page.locator('[data-testid="stSelectbox"]').filter(has=page.get_by_role("combobox", name="Run"))
        shown = box.get_by_role("combobox", name="Run")  # the closed select: a combobox input holds the label
        assert shown.input_value() == labels[0]  # the label itself, not a cut of it
        sw, cw = shown.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert sw <= cw, (labels[0], sw, cw)
        e2e.shot(page, "drilldown-run-select-1280")
        box.get_by_role("button", name="Open").click()
        options = page.get_by_role("option")
        options.first.wait_for(timeout=10_000)
        texts = [t.strip() for t in options.all_inner_texts()]
        assert set(labels) <= set(texts), texts
        for i in range(options.count()):
            assert not _fits(page, options.nth(i)), (texts[i], _fits(page, options.nth(i)))
        e2e.shot(page, "drilldown-run-options-1280")
        page.keyboard.press("Escape")
    finally:
        page.context.close()
