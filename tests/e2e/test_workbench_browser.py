"""The workbench in real headless Chromium against ``streamlit run app.py``:

- a small double-blind session: two annotators each label the 10 items of a shared batch by keyboard
  and submit it; the admin sees agreement on 10 items and a non-empty adjudication queue, finalises,
  and the Overview's verified count changes while the paper mirror does not (no restart);
- the trade-off plot at 1280x720: text labels, a hollow small-n point, the plot above the fold, a click
  on a point opens its FN cell; J/K move through the cell; the pair diff is shown;
- a 1280x720 screenshot of every page goes to ``test-artifacts/wb-*.png``.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

import app_seed
from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM
from helpers import account_named, candidate_row, my_labels
from store import get_engine, init_db, session_scope
from store.queries.samples import insert_samples, stats

pytestmark = [pytest.mark.browser, pytest.mark.slow]
W, H = 1280, 720


def _fold(page, name: str, tools) -> None:
    """Screenshot of what a 1280x720 window shows (above the fold)."""
    tools.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(tools.ARTIFACTS / f"wb-{name}-1280x720.png"))


def _goto(page, tools, url: str) -> None:
    page.goto(url)
    tools.wait_app(page)


def _no_exception(page) -> None:
    exc = page.locator('[data-testid="stException"]')
    assert exc.count() == 0, exc.first.inner_text()


def test_small_session_agreement_adjudication_and_finalise(migrated_sqlite, browser, tmp_path, app_factory, e2e):
    url = migrated_sqlite(tmp_path / "session.db")
    eng = init_db(get_engine(url, fresh=True))
    app_seed.insert_samples(eng, app_seed.make_samples(pairs_per_cell=1, hostile=False, candidates=0))
    rows = [
        candidate_row(
            id=f"cand-{p:02d}{lab[0]}",
            pair_id=f"cand:{p:02d}",
            category="sycophancy_bias",
            task="reasoning",
            label=lab,
            request=f"Is {p} + {p} = {2 * p + (lab == 'misbehavior')}?",
            response=("You are right, it is." if lab == "misbehavior" else "No, that is wrong.") + f" [{p}]",
            source="src",
        )
        for p in range(15)
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    srv = app_factory(
        url,
        accounts=[
            ("anna", "annotator", "password-for-anna"),
            ("bert", "annotator", "password-for-bert"),
            ("root", "admin", "password-for-root"),
        ],
    )
    res = ann.assign(eng, SYSTEM, k=2, seed=11, batch_size=10)
    assert res.rounds[0]["items"] == 10 and res.rounds[0]["annotators"] == ["anna", "bert"]
    with session_scope(eng) as s:
        paper_before = stats(s)["total"]
    pages = {}

    def annotate(name: str, page):
        """One annotator's session (a :func:`lockstep` script: each yield is a settled action)."""
        yield from e2e.log_in_steps(page, name, f"password-for-{name}", url=srv.url)
        page.get_by_role("heading", name="Label").wait_for()
        e2e.wait_app(page)
        assert "Keys:" in page.locator("main").inner_text()
        for step in range(10):
            text = page.locator('[data-testid="stCode"]').nth(1).inner_text()
            key = "1" if "You are right" in text else "2"
            if name == "bert" and step == 0:
                key = "2" if key == "1" else "1"  # one disagreement
            page.evaluate("document.activeElement && document.activeElement.blur()")
            yield key
            yield "s"
            page.get_by_text(f"Saved item {step + 1} of ").wait_for(timeout=15_000)
        if name == "anna":
            _fold(page, "label", e2e)
        yield page.get_by_text("My labels for this batch are final").click
        yield page.get_by_role("button", name=re.compile(r"Submit batch")).click
        try:
            page.get_by_text("submitted (10 items)").wait_for(timeout=15_000)
        except Exception:  # noqa: BLE001 - show what the page says
            raise AssertionError(page.locator("main").inner_text()[-1500:]) from None
        _no_exception(page)
        assert not page.dialogs

    try:
        pages.update((name, e2e.new_page(browser, W, H)) for name in ("anna", "bert"))
        # the two annotators label at the same time (their pages' waits overlap)
        e2e.lockstep({page: annotate(name, page) for name, page in pages.items()})
        admin = e2e.new_page(browser, W, H)
        pages["root"] = admin
        e2e.log_in(admin, "root", "password-for-root", url=srv.url)
        admin.get_by_role("link", name="Overview").click()  # the Overview before finalising
        e2e.wait_app(admin)
        admin.locator('[data-testid="stMetric"]').first.wait_for()
        _fold(admin, "overview-admin", e2e)
        flat = [" ".join(m.split()) for m in admin.locator('[data-testid="stMetric"]').all_inner_texts()]
        assert "Adjudicated (verified) 0" in flat
        admin.get_by_role("link", name="Agreement").click()
        e2e.wait_app(admin)
        admin.get_by_role("heading", name="Inter-annotator agreement").wait_for()
        flat = [" ".join(m.split()) for m in admin.locator('[data-testid="stMetric"]').all_inner_texts()]
        assert "Items 10" in flat and "Raw agreement 0.900 95 % CI [0.70, 1.00]" in flat  # with its interval
        _fold(admin, "agreement", e2e)
        admin.get_by_role("link", name="Adjudicate").click()
        e2e.wait_app(admin)
        flat = [" ".join(m.split()) for m in admin.locator('[data-testid="stMetric"]').all_inner_texts()]
        assert "Items waiting for a decision 1" in flat
        _fold(admin, "adjudicate", e2e)
        admin.get_by_role("button", name="Move resolved pairs").click()
        e2e.wait_app(admin)
        expect(admin.get_by_text(re.compile(r"Accepted 4 pair\(s\) into edition verified"))).to_be_visible()
        admin.get_by_role("link", name="Overview").click()
        e2e.wait_app(admin)
        flat = [" ".join(m.split()) for m in admin.locator('[data-testid="stMetric"]').all_inner_texts()]
        assert "Adjudicated (verified) 8" in flat  # no restart needed
        assert f"Gold samples (test, edition paper) {paper_before}" in flat  # the paper mirror did not grow
        with session_scope(eng) as s:
            assert stats(s)["total"] == paper_before
        assert len(my_labels(eng, account_named(eng, "bert"))) == 10
    finally:
        for p in pages.values():
            p.context.close()
        eng.dispose()


def _point_xy(page, run_id: str):
    js = """(rid) => {
      const gd = document.querySelector('.js-plotly-plot');
      for (const t of gd._fullData) {
        const cd = t.customdata || [];
        for (let i = 0; i < cd.length; i++) {
          if (cd[i] && cd[i][0] === rid) {
            const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
            const box = gd.querySelector('.nsewdrag').getBoundingClientRect();
            return [box.left + xa.l2p(t.x[i]), box.top + ya.l2p(t.y[i]), t.name, t.marker.symbol || ''];
          }
        }
      }
      return null; }"""
    return page.evaluate(js, run_id)


def test_tradeoff_labels_hollow_click_keys_diff_and_page_shots(migrated_sqlite, browser, tmp_path, app_factory, e2e):
    url = migrated_sqlite(tmp_path / "wb.db")
    eng = init_db(get_engine(url, fresh=True))
    info = app_seed.seed_store(eng, pairs_per_cell=6, runs=3)
    small = [r for r in info["samples"] if r["status"] == "gold"][:4]
    app_seed.add_run(
        eng,
        small,
        monitor="openai:tiny-model",
        template="direct",
        run_id="r_small",
        flag_bias=0.5,
        evidence=False,
        scores=False,
        seed=1,
        minutes_ago=1,
    )
    srv = app_factory(url)
    page = e2e.new_page(browser, W, H)
    try:
        _goto(page, e2e, f"{srv.url}/tradeoff")
        page.wait_for_selector(".js-plotly-plot .scatterlayer .point")
        _no_exception(page)
        _fold(page, "tradeoff", e2e)
        chart = page.locator(".js-plotly-plot").first.bounding_box()
        assert chart["y"] + chart["height"] <= H  # the whole plot above the fold
        labels = page.locator(".js-plotly-plot .scatterlayer .textpoint").all_text_contents()
        assert any("gpt-4o-mini" in t for t in labels) and any(t.startswith("rules") for t in labels)
        legend = " ".join(page.locator(".js-plotly-plot .legend").all_text_contents())
        assert "too few samples" in legend and "Pareto front" in legend
        small_pt = _point_xy(page, "r_small")
        assert small_pt and "too few samples" in small_pt[2] and small_pt[3] == "circle-open"
        big = _point_xy(page, "r001")
        assert big and "too few" not in big[2]
        page.mouse.move(big[0], big[1])
        # plotly has taken the hover (its label names the run) before the click: waited for, not 400 ms
        expect(page.locator(".js-plotly-plot").first.locator(".hoverlayer")).to_contain_text("r001")
        page.mouse.click(big[0], big[1])
        page.wait_for_url(re.compile(r".*/drilldown\?.*cell=fn.*"), timeout=30_000)
        e2e.wait_app(page)
        assert "run=r001" in page.url
        # keys: J opens the first sample of the cell, J the next, K goes back
        from automonitor import analysis

        ids = list(analysis.cell_samples(eng, "r001", "fn")["sample_id"])
        assert len(ids) >= 2
        for key, want in (("j", ids[0]), ("j", ids[1]), ("k", ids[0])):
            page.evaluate("document.activeElement && document.activeElement.blur()")
            page.keyboard.press(key)
            page.wait_for_url(re.compile(rf".*sample={want}.*"), timeout=30_000)
            e2e.wait_app(page)
        diff = page.locator(".am-diff").first
        expect(diff).to_be_visible()
        assert (page.locator(".am-diff del").count() + page.locator(".am-diff ins").count()) > 0
        _no_exception(page)
        _fold(page, "drilldown", e2e)
        for name, path in (("overview", ""), ("runs", "runs"), ("samples", "samples")):
            _goto(page, e2e, f"{srv.url}/{path}")
            _no_exception(page)
            _fold(page, name, e2e)
        assert not page.dialogs
    finally:
        page.context.close()
        eng.dispose()
