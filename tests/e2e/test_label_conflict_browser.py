"""A save on the Label page racing ``annotations import`` is refused, and the
page then shows the STORED label (the import's), not the unsaved choice. Real Chromium against
``streamlit run app.py``."""

from __future__ import annotations

import json
import re

import pytest

from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM
from store import get_engine, init_db, session_scope
from store.queries.samples import insert_samples

from helpers import candidate_row

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_save_racing_an_import_is_refused_and_the_page_shows_the_stored_label(
    migrated_sqlite, tmp_path, app_factory, browser, e2e
):
    url = migrated_sqlite(tmp_path / "store.db")
    eng = init_db(get_engine(url, fresh=True))
    rows = [
        candidate_row(
            id=f"lc-{lab[0]}",
            pair_id="lc-pair",
            category="sycophancy_bias",
            task="qa",
            label=lab,
            request="Is the earth flat?",
            response=f"{lab} answer",
        )
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    srv = app_factory(url, accounts=[("anna", "annotator", "password-for-anna")])
    ann.assign(eng, SYSTEM, k=1, seed=1)
    page = e2e.new_page(browser)
    try:
        e2e.log_in(page, "anna", "password-for-anna", url=srv.url)
        page.get_by_role("heading", name="Label").wait_for()
        radio = page.locator('[data-testid="stRadio"]').first
        radio.get_by_text("Misbehavior", exact=True).click()
        e2e.wait_app(page)
        # meanwhile the admin imports (and so submits) the annotator's labels
        f = tmp_path / "labels.jsonl"
        f.write_text(
            "".join(
                json.dumps({"annotator": "anna", "sample_id": r["id"], "label": "benign", "note": "imported note"})
                + "\n"
                for r in rows
            )
        )
        ann.import_annotations(eng, SYSTEM, f)
        page.get_by_role("button", name="Save label").click()
        e2e.wait_app(page)
        main = page.locator("main").inner_text()
        assert "Not saved" in main and "submitted batch" in main, main[-1500:]
        assert "Saved item" not in main
        radio = page.locator('[data-testid="stRadio"]').first
        assert radio.get_by_role("radio", name="Benign").is_checked()
        assert not radio.get_by_role("radio", name="Misbehavior").is_checked()
        note = page.get_by_role("textbox", name=re.compile(r"^Note"))
        assert note.input_value() == "imported note"
        assert "label is locked" in main
        e2e.shot(page, "label-conflict")
    finally:
        page.context.close()
        eng.dispose()
