"""End-to-end annotation in real headless Chromium against ``streamlit run app.py``: two annotators
log in in two browser contexts and label the same items (one by keyboard: 1/2 pick the label, S saves), hostile response text stays inert, then the admin sees their agreement, with the same
figures as ``automonitor agreement --json``."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from automonitor.annotation import agreement as ag
from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM
from store import get_engine, init_db, session_scope
from store.queries.samples import insert_samples

from helpers import account_named, candidate_row, my_labels

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HOSTILE = "Done <script>alert('xss-label')</script><img src=x onerror=alert('xss-img')> I skipped the tests."
BENIGN = "I fixed the comparison so the tests pass for the right reason."


@pytest.fixture(scope="module")
def tools(e2e):
    return e2e


@pytest.fixture(scope="module")
def server(migrated_sqlite, tmp_path_factory, app_factory):
    url = migrated_sqlite(tmp_path_factory.mktemp("e2e-ann") / "store.db")
    eng = init_db(get_engine(url, fresh=True))
    rows = []
    for p in range(2):
        req = f"Make the failing test {p} pass."
        for lab, text in (("misbehavior", HOSTILE), ("benign", BENIGN)):
            resp = f"{text} (#{p})"
            rows.append(
                candidate_row(
                    id=f"hidden-id-{p}{lab[0]}",
                    pair_id=f"e2e-pair-{p}",
                    category="specification_gaming",
                    task="code",
                    label=lab,
                    request=req,
                    response=resp,
                    source="e2e-src",
                )
            )
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
    res = ann.assign(eng, SYSTEM, k=2, seed=5)
    assert res.assignments == 8
    srv.extra["engine"] = eng
    yield srv
    eng.dispose()


def label_steps(page, label: str, *, evidence: str | None = None, keyboard: bool = False):
    """Label the current item as :func:`lockstep` steps: by mouse (radio + "Save label") or by keyboard
    (1/2/3 picks the label, S saves and moves on). Enter in the evidence field commits the quote."""
    if evidence:
        box = page.get_by_role("textbox", name=re.compile(r"^Evidence"))

        def commit() -> None:
            box.fill(evidence)
            box.press("Enter")

        yield commit
    if keyboard:
        page.evaluate("document.activeElement && document.activeElement.blur()")
        yield {"Misbehavior": "1", "Benign": "2", "Unsure": "3"}[label]
        yield "s"
    else:
        yield page.locator('[data-testid="stRadio"]').first.get_by_text(label, exact=True).click
        yield page.get_by_role("button", name="Save label").click


def response_text(page) -> str:
    return page.locator('[data-testid="stCode"]').nth(1).inner_text()


def test_two_annotators_label_in_two_contexts_and_the_admin_sees_agreement(browser, server, tools):
    eng = server.extra["engine"]
    pages = {name: tools.new_page(browser) for name in ("anna", "bert", "root")}

    def annotate(name: str, page):
        """One annotator's session, a ``lockstep`` script (each yield is an action, then the pages settle)."""
        yield from tools.log_in_steps(page, name, f"password-for-{name}", url=server.url)
        expect(page.get_by_role("heading", name="Label")).to_be_visible()
        nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
        assert "Label" in nav and "Agreement" not in nav and "Adjudicate" not in nav
        body = page.locator("main").inner_text()
        assert "e2e-src" not in body and "e2e-pair" not in body and "misbehavior (" not in body
        html = page.content()  # not even in attributes or CSS classes
        assert "hidden-id" not in html and "e2e-pair" not in html and "e2e-src" not in html
        for step in range(4):
            text = response_text(page)
            bad = "skipped the tests" in text
            if bad:
                assert "<script>alert('xss-label')</script>" in text  # literal, inert
            label = "Misbehavior" if bad else "Benign"
            if name == "bert" and bad and "(#0)" in text:
                label = "Benign"  # one disagreement
            if name == "anna" and bad:
                yield from label_steps(page, label, evidence="I skipped the tests", keyboard=True)
            else:
                yield from label_steps(page, label)
            expect(page.get_by_text(f"Saved item {step + 1}")).to_be_visible()

    try:
        # the two annotators log in and label item by item at the same time (their pages' waits overlap),
        # and the admin logs in meanwhile
        admin = pages["root"]
        tools.lockstep(
            {
                pages["anna"]: annotate("anna", pages["anna"]),
                pages["bert"]: annotate("bert", pages["bert"]),
                admin: tools.log_in_steps(admin, "root", "password-for-root", url=server.url),
            }
        )
        for name in ("anna", "bert"):
            page = pages[name]
            assert "4 of 4 labeled" in page.locator('[data-testid="stProgress"]').inner_text()
            tools.shot(page, f"annotation-{name}-done")
            assert not page.dialogs, page.dialogs
        labels = {lab.sample_id: lab for lab in my_labels(eng, account_named(eng, "anna"))}
        assert len(labels) == 4
        bad_ids = [sid for sid in labels if sid.endswith("m")]
        assert all(labels[s].evidence_text == "I skipped the tests" for s in bad_ids)
        assert all(labels[s].seconds_spent is not None for s in labels)

        for name in ("anna", "bert"):  # agreement counts submitted labels only (CONTRACT round 2): both submit
            ann.submit_batch(eng, account_named(eng, name))
        admin.get_by_role("link", name="Agreement").click()
        tools.wait_app(admin)
        admin.get_by_role("heading", name="Inter-annotator agreement").wait_for()
        doc = ag.agreement(eng, SYSTEM)  # what `automonitor agreement --json` prints
        assert doc["items"] == 4 and doc["percent_agreement"] == pytest.approx(0.75)
        metrics = admin.locator('[data-testid="stMetric"]').all_inner_texts()
        flat = [" ".join(m.split()) for m in metrics]
        assert "Items 4" in flat
        # four items: fewer than the minimum of 10, so each headline figure says "too few items"
        assert f"Raw agreement {doc['percent_agreement']:.3f} too few items" in flat
        assert f"Cohen's kappa {doc['cohen_kappa']:.3f} too few items" in flat
        assert f"Krippendorff's alpha {doc['krippendorff_alpha']:.3f} too few items" in flat
        main = admin.locator("main").inner_text()
        assert "anna" in main and "bert" in main  # confusion matrix and time per annotator
        tools.shot(admin, "annotation-admin-agreement")
        assert not admin.dialogs
    finally:
        for page in pages.values():
            page.context.close()
