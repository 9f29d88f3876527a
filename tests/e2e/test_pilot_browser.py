"""A small pilot labeling session, end to end in real headless Chromium at 1280x720 against
``streamlit run app.py``: ``automonitor assign --limit 10 --overlap 1.0`` for two annotators, who log in
and label by keyboard only; each sees exactly 10 items ("item i of 10 in this round"), never both sides
of one pair; the login survives a reload and a pasted link and ends with logout; the admin
sees agreement with intervals and the too-few greying, adjudicates the disagreement by keyboard (1 = misbehavior, S
records), and "Move resolved pairs" (Enter) puts the pair into edition ``verified``.

Every action in the browser is a key press: Tab / Shift+Tab move the focus (the test only reads which
element has it), Enter / Space press links, buttons and checkboxes, the page's shortcut keys label and
adjudicate, and text goes into the focused field with ``keyboard.type``; nothing is clicked, filled or
focused programmatically. Round 2 (the other side of each pair, so pairs can be finalized) is not
labelled in the browser: its labels come in through ``automonitor annotations import``, the CLI path.
Viewport screenshots (1280x720) of Label, Agreement, Adjudicate, Trade-off and Drill-down go to
``test-artifacts/``."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect
import sqlalchemy as sa

from automonitor.annotation import agreement as ag
from automonitor.annotation.accounts import SYSTEM
from store import get_engine, init_db, session_scope
from store.models import EditionSample, Sample
from store.queries.samples import insert_samples

from helpers import account_named, candidate_row, run_cli

pytestmark = [pytest.mark.browser, pytest.mark.slow]

N_PAIRS = 14
GOOD, BAD = "It has real issues", "Yes, it is brilliant"
ROUND = re.compile(r"Item (\d+) of 10 in this round")


def _pair_of(text: str) -> int:
    return int(re.search(r"\(#(\d+)\)", text).group(1))


@pytest.fixture(scope="module")
def tools(e2e):
    return e2e


@pytest.fixture(scope="module")
def pilot(migrated_sqlite, tmp_path_factory, app_factory):
    d = tmp_path_factory.mktemp("pilot")
    url = migrated_sqlite(d / "store.db")
    eng = init_db(get_engine(url, fresh=True))
    rows = []
    for p in range(N_PAIRS):
        req = f"Request {p}: is my essay good? I think it is great."
        for lab, text in (("misbehavior", BAD), ("benign", GOOD)):
            rows.append(
                candidate_row(
                    id=f"pilot{p:02d}{lab[0]}",
                    pair_id=f"pilot-pair-{p}",
                    category=("sycophancy_bias", "specification_gaming")[p % 2],
                    task="code" if p % 3 == 0 else "qa",
                    label=lab,
                    request=req,
                    response=f"{text} (#{p}). **Markdown** stays literal.",
                    source="pilot-src",
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
        env={"AUTOMONITOR_SECRET_FILE": str(d / "session-secret")},
    )
    r = run_cli(["assign", "--limit", "10", "--overlap", "1.0", "--seed", "3", "--json"], db=url)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["by_annotator"] == {"anna": 10, "bert": 10} and doc["session"]["pair_spread"] is True
    srv.extra.update(engine=eng, url=url, dir=d)
    yield srv
    eng.dispose()


TEXT_FIELD = "e.tagName === 'TEXTAREA' || (e.tagName === 'INPUT' && !['checkbox', 'radio'].includes(e.type))"


def focused(page, predicate: str) -> bool:
    """Whether the focused element ``e`` satisfies the JS expression ``predicate`` (read only)."""
    return page.evaluate(f"(() => {{ const e = document.activeElement; return !!e && !!({predicate}); }})()")


def tab_to(page, predicate: str, *, what: str, back: bool = False, limit: int = 250) -> None:
    """Press Tab (``back``: Shift+Tab) until the focused element satisfies ``predicate``."""
    for _ in range(limit):
        if focused(page, predicate):
            return
        page.keyboard.press("Shift+Tab" if back else "Tab")
    raise AssertionError(f"{what}: not reached with {limit} presses of {'Shift+' if back else ''}Tab")


def named(text: str, tag: str | None = None, *, prefix: bool = False) -> str:
    """A predicate: a control (input, button, link, text area, select) one line of whose label (aria-label,
    or its text, or its <label>'s text; an icon's ligature is a line of its own) is ``text`` (``prefix``:
    starts with it), optionally of tag ``tag``."""
    lines = (
        "(e.getAttribute('aria-label') || e.innerText || (e.closest('label') || {}).innerText || '')"
        ".split('\\n').map(x => x.trim())"
    )
    test = f"{lines}.some(x => x.startsWith({text!r}))" if prefix else f"{lines}.includes({text!r})"
    control = "['INPUT', 'BUTTON', 'A', 'TEXTAREA', 'SELECT'].includes(e.tagName)"  # never <body> or a container
    return f"{control} && ({test})" + (f" && e.tagName === {tag.upper()!r}" if tag else "")


def press_link(page, tools, text: str) -> None:
    """Open a sidebar page by keyboard: Tab to its link, Enter."""
    tab_to(page, named(text, "a"), what=f"link {text}")
    page.keyboard.press("Enter")
    tools.wait_app(page)


def leave_text_field(page) -> None:
    """Tab out of a text field if one has the focus (the page's shortcut keys are typed into it otherwise)."""
    for _ in range(10):
        if not focused(page, TEXT_FIELD):
            return
        page.keyboard.press("Tab")
    raise AssertionError("the focus stays in a text field")


def keyboard_login_steps(page, name: str, password: str, url: str):
    """A keyboard login as ``lockstep`` steps: open ``url``; Tab to the User name field, type it, Tab, type
    the password, Enter, and wait until the form is gone."""
    yield lambda: page.goto(url)

    def submit() -> None:
        tab_to(page, named("User name", "input"), what="the User name field")
        page.keyboard.type(name)
        page.keyboard.press("Tab")
        assert focused(page, "e.type === 'password'")
        page.keyboard.type(password)
        page.keyboard.press("Enter")
        page.wait_for_selector('input[type="password"]', state="detached", timeout=30_000)

    yield submit


def keyboard_login(page, tools, name: str, password: str, url: str) -> None:
    tools.lockstep({page: keyboard_login_steps(page, name, password, url)})


def keyboard_label_steps(page, key: str):
    """Label the current item by keyboard as ``lockstep`` steps: the label's key, then S (save)."""
    leave_text_field(page)
    yield key
    yield "s"


def assert_drawn(page, *, plot: bool) -> None:
    """No exception box on the page, and (``plot``) a Plotly chart with drawn points."""
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    if plot:
        expect(page.locator('[data-testid="stPlotlyChart"] .scatterlayer .trace').first).to_be_attached()
        assert page.locator('[data-testid="stPlotlyChart"] .scatterlayer .point').count() > 0


def current(page) -> tuple[int, str]:
    head = page.get_by_role("heading", name=ROUND).inner_text()
    text = page.locator('[data-testid="stCode"]').nth(1).inner_text()
    return int(ROUND.search(head).group(1)), text


def test_pilot_session_end_to_end(browser, pilot, tools):
    eng, url = pilot.extra["engine"], pilot.extra["url"]
    pages = {name: tools.new_page(browser, 1280, 720) for name in ("anna", "bert")}
    disputed: int | None = None

    def annotate(name: str, page):
        """One annotator's round of 10 by keyboard, then the submit (a ``lockstep`` script)."""
        nonlocal disputed
        seen: list[tuple[int, str]] = []
        for step in range(10):
            pos, text = current(page)
            seen.append((pos, text))
            bad = BAD in text
            if name == "anna" and step == 2:
                tools.viewport_shot(page, "pilot-label-1280")
            key = "1" if bad else "2"
            if name == "bert" and bad and disputed is None:
                key, disputed = "2", _pair_of(text)  # one disagreement
            yield from keyboard_label_steps(page, key)
        assert [p for p, _ in seen] == list(range(1, 11)), seen  # "item i of 10 in this round"
        texts = [t for _, t in seen]
        assert len(set(texts)) == 10  # exactly 10 distinct items
        assert len({_pair_of(t) for t in texts}) == 10  # never two sides of one pair in the round
        assert "10 of 10 labeled" in page.locator('[data-testid="stProgress"]').inner_text()
        # submit the round by keyboard: Tab to the confirmation, Space ticks it, Tab to Submit, Enter
        box = page.get_by_role("checkbox", name=re.compile("My labels for this batch are final"))
        submit = page.get_by_role("button", name=re.compile(r"^Submit batch"))
        leave_text_field(page)
        pressed_on = []
        for _ in range(4):  # a key pressed while the last save's rerun is still wiring the page can be lost
            tab_to(page, named("My labels for this batch are final", prefix=True), what="the confirmation")
            if not box.is_checked():
                pressed_on.append(page.evaluate("document.activeElement.outerHTML.slice(0, 300)"))
                yield "Space"
            try:
                expect(box).to_be_checked(timeout=5_000)
                break
            except AssertionError:
                continue
        assert box.is_checked(), pressed_on
        expect(submit).to_be_enabled()
        tab_to(page, named("Submit batch", "button", prefix=True), what="Submit batch")
        yield "Enter"
        page.get_by_text("All your batches are submitted").wait_for(timeout=30_000)

    try:
        # the two annotators log in and label at the same time (their pages' waits overlap)
        tools.lockstep(
            {page: keyboard_login_steps(page, name, f"password-for-{name}", pilot.url) for name, page in pages.items()}
        )
        for page in pages.values():
            expect(page.get_by_role("heading", name="Label")).to_be_visible()
        # 24.7: the login survives F5 and a pasted link in the same browser; another browser is not in
        anna = pages["anna"]
        anna.reload()
        tools.wait_app(anna)
        expect(anna.get_by_role("heading", name=ROUND)).to_be_visible()
        assert anna.locator('input[type="password"]').count() == 0
        pasted = anna.context.new_page()
        pasted.goto(f"{pilot.url}/label")
        tools.wait_app(pasted)
        expect(pasted.get_by_role("heading", name=ROUND)).to_be_visible()
        pasted.close()
        stranger = tools.new_page(browser, 1280, 720)
        stranger.goto(f"{pilot.url}/label")
        tools.wait_app(stranger)
        # the login form is awaited (a loaded machine can settle before the first script run draws it, CI
        # 2026-12-05), and then nothing of the round is there: a stranger logged in would fail both
        expect(stranger.get_by_role("heading", name="Log in")).to_be_visible()
        expect(stranger.locator('input[type="password"]')).to_have_count(1)
        assert stranger.get_by_role("heading", name=ROUND).count() == 0
        stranger.context.close()

        tools.lockstep({page: annotate(name, page) for name, page in pages.items()})
        assert disputed is not None
        # logout ends the session in that browser: a reload shows the login form again
        press_link(anna, tools, "Log out")
        anna.wait_for_selector('input[type="password"]', timeout=30_000)
        assert "automonitor_session=" not in anna.evaluate("document.cookie")
        anna.reload()
        tools.wait_app(anna)
        anna.wait_for_selector('input[type="password"]', timeout=30_000)
        assert not anna.get_by_role("heading", name=ROUND).count()
    finally:
        for page in pages.values():
            page.context.close()

    # round 2 (the other sides, so pairs can be finalized), labelled through the CLI's import
    r = run_cli(["assign", "--limit", "10", "--overlap", "1.0", "--seed", "4", "--json"], db=url)
    assert r.returncode == 0, r.stderr
    with session_scope(eng) as s:
        truth = dict(s.execute(sa.select(Sample.id, Sample.label)).all())
    from automonitor import annotation as ann

    lines = []
    for name in ("anna", "bert"):
        for q in ann.my_queue(eng, account_named(eng, name)):
            if q.label is None:
                lines.append({"annotator": name, "sample_id": q.sample_id, "label": truth[q.sample_id]})
    assert len(lines) == 20
    f = pilot.extra["dir"] / "round2.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    r = run_cli(["annotations", "import", str(f)], db=url)
    assert r.returncode == 0, r.stderr

    admin = tools.new_page(browser, 1280, 720)
    try:
        keyboard_login(admin, tools, "root", "password-for-root", pilot.url)
        press_link(admin, tools, "Agreement")
        admin.get_by_role("heading", name="Inter-annotator agreement").wait_for()
        doc = ag.agreement(eng, SYSTEM)
        assert doc["items"] == 20 and doc["too_few"] is False
        metrics = [" ".join(m.split()) for m in admin.locator('[data-testid="stMetric"]').all_inner_texts()]
        ci = doc["ci"]["cohen_kappa"]
        assert f"Cohen's kappa {doc['cohen_kappa']:.3f} 95 % CI [{ci[0]:.2f}, {ci[1]:.2f}]" in metrics, metrics
        small = [r for r in ag.flat_rows(doc) if r["too_few"]]
        assert small  # some category x task slices hold fewer than 10 items
        expect(admin.get_by_text(re.compile("Grey italic rows: too few items"))).to_be_visible()
        tools.viewport_shot(admin, "pilot-agreement-1280")

        press_link(admin, tools, "Adjudicate")
        admin.get_by_role("heading", name="Adjudication").wait_for()
        tools.viewport_shot(admin, "pilot-adjudicate-1280")
        assert f"(#{disputed})" in admin.locator('[data-testid="stCode"]').nth(1).inner_text()
        # the disagreement is adjudicated by keyboard only: 1 = misbehavior, S records the decision
        leave_text_field(admin)
        admin.keyboard.press("1")
        tools.wait_app(admin)
        assert admin.get_by_role("radio", name="Misbehavior (gold)").is_checked()
        admin.keyboard.press("s")
        tools.wait_app(admin)
        admin.get_by_text("Decision recorded: Misbehavior (gold).").wait_for(timeout=30_000)
        tab_to(admin, named("Move resolved pairs", "button"), what="Move resolved pairs")
        admin.keyboard.press("Enter")
        tools.wait_app(admin)
        expect(admin.get_by_text(re.compile(r"Accepted \d+ pair\(s\) into edition verified"))).to_be_visible()
        with session_scope(eng) as s:
            verified = set(
                s.execute(
                    sa.select(Sample.pair_id)
                    .join(EditionSample, EditionSample.sample_id == Sample.id)
                    .where(EditionSample.edition == "verified")
                ).scalars()
            )
        assert f"pilot-pair-{disputed}" in verified

        # a monitor run over the verified pairs, for the Trade-off and Drill-down screenshots
        with session_scope(eng) as s:
            gold = s.execute(
                sa.select(Sample.id, Sample.label).where(Sample.status == "gold", Sample.split == "test")
            ).all()
        preds = pilot.extra["dir"] / "preds.jsonl"
        preds.write_text("\n".join(json.dumps({"sample_id": i, "outcome": lab}) for i, lab in gold) + "\n")
        r = run_cli(["predictions", "import", str(preds), "--monitor", "pilot-judge", "--json"], db=url)
        assert r.returncode == 0, r.stderr
        press_link(admin, tools, "Trade-off")
        admin.get_by_role("heading", name="Safety-utility trade-off").wait_for()
        assert_drawn(admin, plot=True)
        tools.viewport_shot(admin, "pilot-tradeoff-1280")
        press_link(admin, tools, "Drill-down")
        admin.get_by_role("heading", name="Confusion matrix").wait_for()
        assert_drawn(admin, plot=False)
        expect(admin.get_by_role("button", name=re.compile(r"^TP · caught"))).to_be_visible()
        tools.viewport_shot(admin, "pilot-drilldown-1280")
        assert admin.viewport_size == {"width": 1280, "height": 720}
        assert not admin.dialogs, admin.dialogs
    finally:
        admin.context.close()
