"""The Transfer page shows the transfer matrix by itself once `make demo`'s background phase saves it, in
real headless Chromium (fresh-user trial: the page asked the user to reload when the log said 'transfer
phase done'). The page looks every few seconds (a ``st.fragment(run_every=...)`` that reruns the page), so
the heatmap appears without a reload, and the notice goes."""

from __future__ import annotations

import json
import os
import time

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _matrix() -> dict:
    cells = [
        {"train": tr, "test": te, "mr": 0.7, "far": 0.2, "auroc": 0.41, "n": 10, "mr_ci": [0.4, 0.9]}
        for tr in ("safety_permission/code", "all")
        for te in ("specification_gaming/code", "all")
    ]
    return {
        "features": "tfidf",
        "threshold": 0.5,
        "slices": ["safety_permission/code", "specification_gaming/code", "all"],
        "train_slices": ["safety_permission/code", "all"],
        "test_slices": ["specification_gaming/code", "all"],
        "cells": cells,
        "baselines": {"all": {"length": 0.5, "tfidf": 0.7}},
        "paper": [],
        "highlight": {"train": "safety_permission/code", "test": "specification_gaming/code"},
    }


def test_the_matrix_appears_without_a_reload_when_the_background_phase_saves_it(
    tmp_path, app_factory, browser, e2e, migrated_sqlite
):
    art = tmp_path / "art"
    log = tmp_path / "demo-llm.log"
    log.write_text("== [3 s] transfer table (Transfer page): one TF-IDF probe per training slice x every test slice\n")
    server = app_factory(migrated_sqlite(tmp_path / "store.db"), env={"AUTOMONITOR_ARTIFACTS": str(art)}, cwd=tmp_path)
    page = e2e.new_page(browser, 1280, 900)
    try:
        page.goto(f"{server.url}/transfer")
        e2e.wait_app(page)
        notice = page.get_by_text("computing the transfer matrix", exact=False)
        expect(notice).to_be_visible(timeout=60_000)  # a first script run on a busy machine
        charts = page.locator('[data-testid="stPlotlyChart"]')
        expect(charts).to_have_count(1, timeout=60_000)  # the paper's Figure 8 only
        (art / "probes").mkdir(parents=True)
        (art / "probes" / "transfer-tfidf.json").write_text(json.dumps(_matrix()))
        log.write_text(log.read_text() + "== [95 s] transfer phase done\n")
        os.utime(log)
        t0 = time.monotonic()
        expect(charts).to_have_count(2, timeout=30_000)  # ours above the paper's, no reload
        assert time.monotonic() - t0 < 30
        expect(notice).to_have_count(0)
        assert not page.dialogs, page.dialogs
    finally:
        page.context.close()
