"""Dropdown options are not cut off, in real headless Chromium at 1280x720: with long monitor
names and run ids, the Drill-down's run select shows each run's short label
(``automonitor.views.run_option_label``) whole, in the closed select and in its open option list:
no option text overflows its box (``scrollWidth <= clientWidth``) or is shown with an ellipsis. The same
holds for the Drill-down's "Disagrees with run" select, the Trade-off's Category select and "Score runs"
multiselect (its chips too), the queue selects of the Label and Adjudicate pages and the Samples page's filter
chips."""

from __future__ import annotations

import pytest

from automonitor import annotation as ann
from automonitor import views, vocab
from store import get_engine, init_db, session_scope
from store.queries.samples import insert_samples

import app_seed
from helpers import account_named, candidate_row

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
def server(migrated_sqlite, tmp_path_factory, app_factory):
    url = migrated_sqlite(tmp_path_factory.mktemp("e2e-labels") / "store.db")
    eng = init_db(get_engine(url, fresh=True))
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=0, hostile=False)
    for i, (monitor, tpl, rid) in enumerate(LONG):
        app_seed.add_run(
            eng, info["samples"], monitor=monitor, template=tpl, run_id=rid, minutes_ago=10 + i, scores=True
        )
    srv = app_factory(url)
    yield srv
    eng.dispose()


ACCOUNTS = [
    ("anna", "annotator", "password-for-anna"),
    ("bert", "annotator", "password-for-bert"),
    ("root", "admin", "password-for-root"),
]


@pytest.fixture(scope="module")
def queue_server(migrated_sqlite, tmp_path_factory, app_factory):
    """A store with accounts (so the pages ask for a login) and candidates assigned to two annotators
    who labelled and submitted everything, disagreeing on one side of a pair."""
    url = migrated_sqlite(tmp_path_factory.mktemp("e2e-queues") / "store.db")
    eng = init_db(get_engine(url, fresh=True))
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=0, hostile=False)
    # a candidate pair in the longest category / task names, labelled by two annotators who disagree on
    # its misbehavior side: the Adjudicate queue's option is the longest it can be
    with session_scope(eng) as s:
        insert_samples(
            s,
            [
                candidate_row(
                    id=f"long-{lab[0]}",
                    pair_id="long-pair",
                    category="safety_permission",
                    task="reasoning",
                    label=lab,
                    request="Reason about the permission request step by step.",
                    response=f"A {lab} answer.",
                    source="long-src",
                )
                for lab in ("misbehavior", "benign")
            ],
        )
    srv = app_factory(url, accounts=ACCOUNTS)
    admin = account_named(eng, "root")
    ann.assign(eng, admin, k=2, seed=1)
    truth = {r["id"]: r["label"] for r in info["samples"]} | {"long-m": "misbehavior", "long-b": "benign"}
    for name in ("anna", "bert"):
        who = account_named(eng, name)
        for q in ann.my_queue(eng, who):
            label = "benign" if (name == "bert" and q.sample_id == "long-m") else truth[q.sample_id]
            ann.save_label(eng, who, q.sample_id, label)
        ann.submit_batch(eng, who)
    yield srv
    eng.dispose()


def _fits(page, locator) -> list[dict]:
    """The leaf text boxes under ``locator`` that overflow (wider content than box)."""
    return [b for b in locator.evaluate(_OVERFLOW_JS) if b["sw"] > b["cw"] + 1]


def _select_shows_whole(page, e2e, name: str, labels: list[str], shot: str, *, multi: bool = False) -> None:
    """The select (``multi``: multiselect) whose combobox is called ``name`` shows its ``labels`` whole:
    the closed select's value (or every chip of a multiselect) and every option of its open list fit
    their boxes, and the option texts are the labels themselves, not cuts of them."""
    testid = "stMultiSelect" if multi else "stSelectbox"
    box = page.locator(f'[data-testid="{testid}"]').filter(has=page.get_by_role("combobox", name=name))
    box.first.scroll_into_view_if_needed()
    if multi:
        chips = box.locator("[data-tag]")
        # the chips are drawn after the box on a loaded machine (CI, 2 cores busy: counted before they came)
        chips.first.wait_for(timeout=30_000)
        assert chips.count() >= 1, name
        for i in range(chips.count()):
            assert not _fits(page, chips.nth(i)), (name, chips.nth(i).inner_text(), _fits(page, chips.nth(i)))
        # the chips' row scrolls sideways when they do not all fit: none may be hidden that way
        row = box.locator('[data-testid="stMultiSelectTagsContainer"]').last
        sw, cw = row.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert sw <= cw + 1, (name, chips.all_inner_texts(), sw, cw)
    else:
        shown = box.get_by_role("combobox", name=name)
        sw, cw = shown.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert sw <= cw, (name, shown.input_value(), sw, cw)
    box.get_by_role("combobox", name=name).click()
    options = page.get_by_role("option")
    options.first.wait_for(timeout=10_000)
    texts = [t.strip() for t in options.all_inner_texts()]
    assert set(labels) <= set(texts), (name, labels, texts)
    for i in range(options.count()):
        assert not _fits(page, options.nth(i)), (name, texts[i], _fits(page, options.nth(i)))
    e2e.shot(page, shot)
    page.keyboard.press("Escape")
    e2e.wait_app(page)


def _runs(status: str = "finished") -> list[dict]:
    return [{"run_id": r, "monitor": m, "template": t, "status": status} for m, t, r in LONG]


def test_drilldown_run_options_are_shown_whole_at_1280(browser, server, e2e):
    """The Drill-down's run select shows each run's select label (``views.run_select_label``) without overflow:
    the whole label (the second run), or the monitor name cut at its end, never in the middle (the first: its
    whole name, escaped, is on the line under the select, which wraps; trial: "openai:gpt…-2024-07-18")."""
    labels = [views.run_select_label(r) for r in _runs()]
    assert all(len(x) <= views.run_labels.RUN_SELECT_MAX for x in labels)
    assert labels[1] == " · ".join(LONG[1])  # whole
    assert labels[0] == f"{LONG[0][0][:39]}… · {LONG[0][1]} · {LONG[0][2]}"  # the monitor name cut at its end
    page = e2e.new_page(browser, 1280, 720)
    try:
        page.goto(f"{server.url}/drilldown?run={LONG[0][2]}")
        e2e.wait_app(page)
        box = page.locator('[data-testid="stSelectbox"]').filter(has=page.get_by_role("combobox", name="Run"))
        shown = box.get_by_role("combobox", name="Run")  # the closed select: a combobox input holds the label
        assert shown.input_value() == labels[0]  # the label itself, not a cut of it
        sw, cw = shown.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert sw <= cw, (labels[0], sw, cw)
        whole = page.locator('[data-testid="stCaptionContainer"]').filter(has_text=LONG[0][0]).first
        assert f"Run {views.run_full_label(_runs()[0])}" in whole.inner_text()  # the whole name, wrapped, not cut
        sw, cw = whole.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert sw <= cw + 1, (sw, cw)
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


def test_every_long_dropdown_is_shown_whole_at_1280(browser, server, e2e):
    """Drill-down "Disagrees with run" and Category, Trade-off Category and "Score runs": no option cut at
    1280x720."""
    labels = [views.run_option_label(r) for r in _runs()]
    page = e2e.new_page(browser, 1280, 720)
    try:
        page.goto(f"{server.url}/drilldown?run={LONG[0][2]}&cell=tp")
        e2e.wait_app(page)
        other = views.run_select_label(_runs()[1])  # the Drill-down's run selects share its labels
        _select_shows_whole(page, e2e, "Disagrees with run", ["(any)", other], "drilldown-disagree-options-1280")
        _select_shows_whole(
            page, e2e, "Category", list(vocab.CATEGORY_NAMES.values()), "drilldown-category-options-1280"
        )
        page.goto(f"{server.url}/tradeoff")
        e2e.wait_app(page)
        _select_shows_whole(
            page, e2e, "Category", list(vocab.CATEGORY_NAMES.values()), "tradeoff-category-options-1280"
        )
        _select_shows_whole(page, e2e, "Task", list(vocab.TASK_NAMES.values()), "tradeoff-task-options-1280")
        for label in ("Unscored outcomes", "Options"):  # the rest of the row: label and button whole
            el = page.get_by_text(label, exact=True).first
            sw, cw = el.evaluate("e => [e.scrollWidth, e.clientWidth]")
            lines = el.evaluate(
                "e => { const r = document.createRange(); r.selectNodeContents(e); return r.getClientRects().length; }"
            )
            assert sw <= cw + 1 and lines == 1, (label, sw, cw, lines)  # one line, not cut
        _select_shows_whole(page, e2e, "Templates", [], "tradeoff-templates-1280", multi=True)
        _select_shows_whole(page, e2e, "Score runs", [], "tradeoff-score-runs-1280", multi=True)
        chips = [t.strip() for t in page.locator('[data-testid="stMultiSelect"] [data-tag]').all_inner_texts()]
        assert set(labels) <= set(chips), chips  # both score runs chosen by default, each label whole
    finally:
        page.context.close()


def test_queue_selects_are_shown_whole_at_1280(browser, queue_server, e2e):
    """The Label and Adjudicate queue selects: no option cut at 1280x720 (the longest category / task
    names in the Adjudicate queue's option)."""
    server = queue_server
    for who, path, name, shot in (
        ("anna", "/label", "Item", "label-queue-options-1280"),
        ("root", "/adjudicate", "Queue", "adjudicate-queue-options-1280"),
    ):
        page = e2e.new_page(browser, 1280, 720)
        try:
            e2e.log_in(page, who, f"password-for-{who}", url=f"{server.url}{path}", retry=True)
            opts = ["1. disagreement · Safety & Permission Violations / Reasoning"] if who == "root" else []
            _select_shows_whole(page, e2e, name, opts, shot)
        finally:
            page.context.close()


#: Samples page filters: the longest option of each vocabulary filter, then several chips in one box
SAMPLE_CHIPS = [
    (
        "category=safety_permission&task=code&label=misbehavior&split=test&label_source=human_per_response&tier=implicit",
        {
            "Category": ["Safety & Permission Violations"],
            "Task": ["Code"],
            "Gold label": ["misbehavior"],
            "Split": ["test"],
            "Label provenance": ["human_per_response"],
            "Tier": ["implicit"],
        },
        "samples-filter-chips-1280",
    ),
    (
        "category=safety_permission&category=sycophancy_bias&category=specification_gaming"
        "&task=code&task=qa&task=reasoning&label=misbehavior&label=benign&split=test&split=train",
        {
            "Category": [vocab.CATEGORY_NAMES[c] for c in vocab.CATEGORIES],
            "Task": ["Code", "QA", "Reasoning"],
            "Gold label": ["misbehavior", "benign"],
            "Split": ["test", "train"],
        },
        "samples-filter-chips-many-1280",
    ),
]


def test_samples_filter_chips_are_shown_whole_at_1280(browser, server, e2e):
    """Trial: the Samples page's Task chip for ``code`` read "C." at 1280 px (six filters in one row, a chip
    squeezed into what its box had left). Every vocabulary filter's chip shows its whole name there: the longest
    option of each, and every option of Category, Task, Gold label and Split at once (the chips wrap onto more
    lines of their box; none is scrolled out of sight)."""
    page = e2e.new_page(browser, 1280, 720)
    try:
        for query, boxes, shot in SAMPLE_CHIPS:
            page.goto(f"{server.url}/samples?{query}")
            e2e.wait_app(page)
            for name, texts in boxes.items():
                box = page.locator('[data-testid="stMultiSelect"]').filter(has=page.get_by_role("combobox", name=name))
                chips = box.locator("[data-tag]")
                chips.first.wait_for(timeout=15_000)
                assert [t.strip() for t in chips.all_inner_texts()] == texts, name
                for i in range(chips.count()):
                    assert not _fits(page, chips.nth(i)), (name, texts[i], _fits(page, chips.nth(i)))
                row = box.locator('[data-testid="stMultiSelectTagsContainer"]').last
                sw, cw = row.evaluate("e => [e.scrollWidth, e.clientWidth]")
                assert sw <= cw + 1, (name, texts, sw, cw)
            e2e.viewport_shot(page, shot)
    finally:
        page.context.close()


@pytest.fixture(scope="module")
def busy_server(migrated_sqlite, tmp_path_factory, app_factory):
    """A store whose one run is still running (status set so), for the Runs page's status line."""
    import sqlalchemy as sa

    url = migrated_sqlite(tmp_path_factory.mktemp("e2e-busy") / "store.db")
    eng = init_db(get_engine(url, fresh=True))
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=0, hostile=False)
    monitor, tpl, rid = LONG[0]
    app_seed.add_run(eng, info["samples"], monitor=monitor, template=tpl, run_id=rid)
    with eng.begin() as c:
        c.execute(sa.text("update run set status = 'running' where id = :i"), {"i": rid})
    yield app_factory(url)
    eng.dispose()


def test_the_active_run_is_named_in_the_first_screen_of_the_runs_page(browser, busy_server, e2e):
    """At 1280x720 the line naming the running run, whole, is above the fold, above the expanded launch form."""
    page = e2e.new_page(browser, 1280, 720)
    try:
        page.goto(f"{busy_server.url}/runs")
        e2e.wait_app(page)
        line = page.locator('[data-testid="stAlert"]').filter(has_text="1 run in progress:")
        line.wait_for(timeout=30_000)
        box = line.bounding_box()
        form = page.locator('[data-testid="stExpander"]').filter(has_text="Launch a run").first.bounding_box()
        assert box is not None and form is not None
        assert box["y"] + box["height"] <= 720 and box["y"] < form["y"], (box, form)
        # the run is named whole (trial: its monitor name was cut in the middle); the line wraps
        assert views.run_full_label(_runs("running")[0]) in " ".join(line.inner_text().split())
        e2e.viewport_shot(page, "runs-active-line-1280")
    finally:
        page.context.close()


_LABEL_BOXES_JS = """() => [...document.querySelectorAll('.js-plotly-plot .scatterlayer .textpoint text')]
  .filter(e => e.textContent.trim())
  .map(e => { const r = e.getBoundingClientRect();
              return {text: e.textContent, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; })"""

CLUSTER = [  # monitor, template: runs of alike skill, so their points crowd one corner of the plane
    ("rules", "direct"),
    ("openai:gpt-4o-mini", "evidence"),
    ("openai:gpt-4o-mini", "direct"),
    ("anthropic:claude-3-5-haiku", "evidence"),
    ("llamacpp:gemma-3-270m-it", "direct"),
    ("openai:qwen3-14b", "evidence"),
    ("anthropic:claude-3-5-haiku", "direct"),
    ("openai:gpt-4o", "evidence"),
]


def test_tradeoff_labels_of_nearby_runs_do_not_overlap_at_1280(migrated_sqlite, browser, tmp_path, app_factory, e2e):
    """Fresh-user trial (issue 41): the labels of runs close together on the MR-FAR plane were drawn over
    each other. In Chromium at 1280x720, no two drawn labels of the Trade-off plane overlap
    (``views.figures.place_labels``; the unit tests check which labels are kept and that hovers name every run)."""
    url = migrated_sqlite(tmp_path / "cluster.db")
    eng = init_db(get_engine(url, fresh=True))
    info = app_seed.seed_store(eng, pairs_per_cell=12, runs=0, hostile=False)
    for i, (monitor, tpl) in enumerate(CLUSTER):
        app_seed.add_run(
            eng,
            info["samples"],
            monitor=monitor,
            template=tpl,
            run_id=f"c{i}",
            skill=0.8,
            flag_bias=0.4,
            minutes_ago=5 + i,
        )
    srv = app_factory(url)
    page = e2e.new_page(browser, 1280, 720)
    try:
        page.goto(f"{srv.url}/tradeoff")
        e2e.wait_app(page)
        page.wait_for_function(f"({_LABEL_BOXES_JS})().length > 0", timeout=30_000)
        boxes = page.evaluate(_LABEL_BOXES_JS)
        e2e.shot(page, "tradeoff-cluster-labels-1280")
        assert len(boxes) >= 3, boxes
        clash = [
            (a["text"], b["text"])
            for i, a in enumerate(boxes)
            for b in boxes[i + 1 :]
            if a["x0"] < b["x1"] - 1 and b["x0"] < a["x1"] - 1 and a["y0"] < b["y1"] - 1 and b["y0"] < a["y1"] - 1
        ]
        assert not clash, (clash, boxes)
    finally:
        page.context.close()
        eng.dispose()
