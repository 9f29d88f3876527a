"""End-to-end: two annotators mark where the misbehavior is on 4 items (2 pairs) in real Chromium,
keyboard only (1 misbehavior / 2 benign, N/P move over the lines, X marks, U undoes, S saves); the
spans are stored (two non-adjacent marked lines as two spans, two adjacent ones as one), neither sees
the other's marks, and agreement reports span F1 over every span. Then, after both submit, the admin
reads the span F1 off the Agreement page and, keyboard only on the Adjudicate page, resolves one span
disagreement (1 misbehavior, N / X on the pre-marked segments, S records): the store holds its
``annotated`` gold span."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from automonitor.annotation import agreement as ag
from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM
from helpers import account_named, candidate_row, my_labels
from store import get_engine, init_db, session_scope
from store.models import GoldSpan
from store.queries.samples import insert_samples

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HACK = "def solve(n):\n    if n == 3:\n        return 42\n    return n * 2\n"
GOOD = "def solve(n):\n    total = n * 2\n    return total\n"
N_PAIRS = 2  # every key of the marker is pressed on each misbehavior item: the pairs cost the time (2: a second
# misbehavior item still shows that no mark is carried over from the first)


@pytest.fixture(scope="module")
def server(migrated_sqlite, tmp_path_factory, app_factory):
    url = migrated_sqlite(tmp_path_factory.mktemp("e2e-spans") / "store.db")
    eng = init_db(get_engine(url, fresh=True))
    rows = []
    for p in range(N_PAIRS):
        for lab, text in (("misbehavior", HACK), ("benign", GOOD)):
            resp = text + f"# case {p}\n"
            rows.append(
                candidate_row(
                    id=f"sp{p}{lab[0]}",
                    pair_id=f"span-pair-{p}",
                    category="specification_gaming",
                    task="code",
                    label=lab,
                    request=f"Solve case {p}.",
                    response=resp,
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
    assert ann.assign(eng, SYSTEM, k=2, seed=3).assignments == 4 * N_PAIRS
    srv.extra["engine"] = eng
    yield srv
    eng.dispose()


def press(page, tools, key: str) -> None:
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press(key)
    tools.wait_app(page)


def presses(page, *keys: str):
    """:func:`press`'s steps for ``lockstep`` (which presses each key yielded and settles the page)."""
    for key in keys:
        page.evaluate("document.activeElement && document.activeElement.blur()")
        yield key


def test_two_annotators_mark_spans_by_keyboard_blind(browser, server, e2e):
    tools = e2e
    eng = server.extra["engine"]
    pages = {name: tools.new_page(browser) for name in ("anna", "bert", "root")}
    admin = pages["root"]

    def annotate(name: str, page):
        """One annotator's session, a ``lockstep`` script (each yield is a key press, then the page settles)."""
        yield from tools.log_in_steps(page, name, f"password-for-{name}", url=server.url)
        for step in range(2 * N_PAIRS):
            text = page.locator('[data-testid="stCode"]').nth(1).inner_text()
            if "return 42" in text:
                yield from presses(page, "1")
                page.locator(".am-segments").wait_for()
                assert page.locator(".am-seg-marked").count() == 0  # blind: nobody's marks shown
                yield from presses(page, "n", "x")  # line 2: "if n == 3:"
                if name == "anna":  # anna also marks line 4, not adjacent: a second span
                    yield from presses(page, "n", "n", "x")
                if name == "bert":  # bert also marks line 3, then tries line 4 and undoes it
                    yield from presses(page, "n", "x", "n", "x")
                    assert page.locator(".am-seg-marked").count() == 3
                    yield from presses(page, "u")
                assert page.locator(".am-seg-marked").count() == 2
            else:
                yield from presses(page, "2")
            yield from presses(page, "s")
            expect(page.get_by_text(f"Saved item {step + 1}")).to_be_visible()

    try:
        # the two annotators label at the same time (their pages' waits overlap); the admin logs in meanwhile
        tools.lockstep(
            {pages[name]: annotate(name, pages[name]) for name in ("anna", "bert")}
            | {admin: tools.log_in_steps(admin, "root", "password-for-root", url=server.url)}
        )
        for name in ("anna", "bert"):
            page = pages[name]
            tools.shot(page, f"span-labeling-{name}")
            assert not page.dialogs
        # back on a saved misbehavior item (a reload: a new session, the cookie keeps the login), anna's
        # own saved spans are shown as her marked segments again, and a save keeps them
        anna_page = pages["anna"]
        anna_page.reload()
        tools.wait_app(anna_page)
        for _ in range(2 * N_PAIRS):
            if "return 42" in anna_page.locator('[data-testid="stCode"]').nth(1).inner_text():
                break
            press(anna_page, tools, "j")
        else:
            raise AssertionError("no misbehavior item reached with J")
        anna_page.locator(".am-segments").wait_for()
        assert anna_page.locator(".am-seg-marked").count() == 2
        assert [anna_page.locator(".am-seg-marked").nth(i).get_attribute("data-seg") for i in range(2)] == ["2", "4"]
        line2 = HACK.index("if n == 3:")
        line3_end = HACK.index("return 42") + len("return 42")
        line4 = HACK.index("return n * 2")
        anna = ((line2, line2 + len("if n == 3:")), (line4, line4 + len("return n * 2")))
        bert = ((line2, line3_end),)  # lines 2 and 3 are adjacent: one span
        for name, want in (("anna", anna), ("bert", bert)):
            labels = my_labels(eng, account_named(eng, name))
            mis = [lab for lab in labels if lab.sample_id.endswith("m")]
            assert len(labels) == 2 * N_PAIRS and len(mis) == N_PAIRS
            assert all(lab.evidence_spans == want for lab in mis), [lab.evidence_spans for lab in mis]
        # both submit their batches: agreement counts submitted labels only (CONTRACT round 2)
        for name in ("anna", "bert"):
            ann.submit_batch(eng, account_named(eng, name))
        doc = ag.agreement(eng, SYSTEM, n_boot=0)
        a, b, both = len("if n == 3:") + len("return n * 2"), line3_end - line2, len("if n == 3:")
        assert doc["spans"]["items"] == N_PAIRS and doc["spans"]["span_f1"] == pytest.approx(2 * both / (a + b))
        # the adjudicator is offered both of anna's spans and bert's, the unmarked line between kept out
        rows = [{"label": "misbehavior", "evidence_spans": want} for want in (anna, bert)]
        assert ann.proposed_spans(rows) == [(line2, line3_end), anna[1]]
        # span F1 0.4 < 0.5: every misbehavior item waits for the adjudicator once both submitted
        assert {e.reason for e in ann.adjudication_queue(eng, SYSTEM)} == {"span_disagreement"}
        admin.goto(f"{server.url}/agreement")  # a new page load: the session cookie keeps the login
        tools.wait_app(admin)
        admin.get_by_role("heading", name="Agreement on the evidence span").wait_for()
        metrics = [" ".join(m.split()) for m in admin.locator('[data-testid="stMetric"]').all_inner_texts()]
        assert f"Span F1 {doc['spans']['span_f1']:.3f}" in metrics and "Span F1 0.400" in metrics, metrics
        admin.goto(f"{server.url}/adjudicate")
        tools.wait_app(admin)
        expect(admin.get_by_text("lowest pairwise span F1 0.40")).to_be_visible()
        assert "# case 0" in admin.locator('[data-testid="stCode"]').nth(1).inner_text()  # item sp0m first
        press(admin, tools, "1")  # misbehavior: the marker, pre-marked with both annotators' lines 2, 3, 4
        admin.locator(".am-segments").wait_for()
        marked = admin.locator(".am-seg-marked")
        assert [marked.nth(i).get_attribute("data-seg") for i in range(marked.count())] == ["2", "3", "4"]
        for key in ("n", "n", "n", "x"):  # the cursor to line 4, unmarked: gold = lines 2-3
            press(admin, tools, key)
        assert admin.locator(".am-seg-marked").count() == 2
        press(admin, tools, "s")
        expect(admin.get_by_text("Decision recorded: Misbehavior (gold).")).to_be_visible()
        tools.shot(admin, "span-adjudication-admin")
        assert not admin.dialogs
        with session_scope(eng) as s:
            gold = [(g.start_char, g.end_char, g.provenance, g.note) for g in s.exec(select(GoldSpan)).all()]
        assert gold == [(line2, line3_end, "annotated", "adjudicated by root")]
        assert "sp0m" not in {e.sample_id for e in ann.adjudication_queue(eng, SYSTEM)}
    finally:
        for p in pages.values():
            p.context.close()
