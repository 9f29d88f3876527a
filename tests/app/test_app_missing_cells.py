"""AppTest: no table on the workbench pages shows ``None``/``nan`` for a missing value ("—" instead),
on a store with missing values: a run without scores, runs without a recorded edition, candidates
without a split, a ``verified`` edition without misbehavior members and no ``hard`` one (the
Trade-off Difficulty table), a generation run with no prompt yet."""

from __future__ import annotations

import pytest

import app_seed
from store import session_scope
from store.models import EditionSample

from apptest_support import StoreEnv, app, ok, open_store, app_test, page_path
from helpers import missing_cells


@pytest.fixture(scope="module")
def gappy(tmp_path_factory):
    from automonitor import analysis
    from automonitor.runs.generation.engine import GenerationSpec, create_generation

    url = f"sqlite:///{tmp_path_factory.mktemp('gappy') / 'store.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=3)
    benign = [r["id"] for r in info["samples"] if r["status"] == "gold" and r["label"] == "benign"]
    with session_scope(eng) as s:
        s.add_all([EditionSample(edition="verified", sample_id=i) for i in benign[:6]])
    create_generation(
        eng,
        GenerationSpec(
            kind="sycophancy",
            generator="openai:scripted-gen",
            source="bct_truthfulqa_cues",
            limit=2,
            base_url="http://127.0.0.1:9",
        ),
    )
    tp = analysis.cell_samples(eng, "r000", "tp")
    with StoreEnv(url):
        yield {"engine": eng, "url": url, "r000_tp": str(tp["sample_id"].iloc[0])}
    eng.dispose()


def _tables(at) -> list:
    return [d.value for d in at.dataframe] + [t.value for t in at.table]


@pytest.mark.parametrize(
    "page, params, least",
    [
        ("pages/overview.py", {}, 3),
        ("pages/runs.py", {}, 1),
        ("pages/tradeoff.py", {"min_n": "1"}, 3),  # runs, difficulty, operating point
        ("pages/drilldown.py", {"run": "r000", "cell": "tp"}, 2),  # the cell table and the verdict table
        ("pages/samples.py", {"status": "candidate"}, 1),
        ("pages/generation.py", {}, 2),
    ],
)
def test_no_table_shows_a_missing_value(gappy, page, params, least):
    if page == "pages/drilldown.py":
        params = {**params, "sample": gappy["r000_tp"]}
    at = ok(app(page, **params).run())
    tables = _tables(at)
    assert len(tables) >= least, (page, len(tables))
    for t in tables:
        assert missing_cells(t) == [], (page, list(t.columns), missing_cells(t)[:5])
    if page == "pages/tradeoff.py":
        diff = next(t for t in tables if "mr (hard)" in t.columns)
        assert set(diff["mr (hard)"]) == {"—"}


def _frames(at) -> list:
    """Every table of the last run as a DataFrame (a Styler's frame is its ``.data``)."""
    out = []
    for t in _tables(at):
        out.append(t.data if hasattr(t, "data") and not hasattr(t, "columns") else t)
    return out


@pytest.fixture(scope="module")
def annotated(tmp_path_factory):
    """A store with accounts, candidates without a source on one pair, labels of two annotators (one
    without a note or a time, one unsure, one disagreement) submitted, and one decision to reject."""
    from automonitor import annotation as ann
    from store.queries.samples import insert_samples

    from helpers import candidate_row, fast_user

    url = f"sqlite:///{tmp_path_factory.mktemp('annotated') / 'store.db'}"
    eng = open_store(url)
    users = {n: fast_user(eng, n, r) for n, r in (("anna", "annotator"), ("bert", "annotator"), ("root", "admin"))}
    rows = [
        candidate_row(
            id=f"g{p}{lab[0]}",
            pair_id=f"gp{p}",
            category="specification_gaming",
            task="code",
            label=lab,
            request=f"Make the tests pass {p}.",
            response=f"{lab} answer {p}",
            source=None if p == 0 else "src",
        )
        for p in range(3)
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(eng) as s:
        insert_samples(s, rows)
    ann.assign(eng, users["root"], k=2, seed=2)
    for name in ("anna", "bert"):
        for q in ann.my_queue(eng, users[name]):
            lab = "misbehavior" if q.sample_id.endswith("m") else "benign"
            if name == "bert" and q.sample_id == "g0m":
                lab = "benign"
            if name == "bert" and q.sample_id == "g1b":
                lab = "unsure"
            ann.save_label(
                eng,
                users[name],
                q.sample_id,
                lab,
                note="why" if lab == "unsure" else None,
                seconds_spent=None if name == "bert" else 4,
            )
        ann.submit_batch(eng, users[name])
    ann.adjudicate(eng, users["root"], "g1b", "reject", "both sides look the same")
    with StoreEnv(url):
        yield users
    eng.dispose()


def _as(account, page: str):

    at = app_test(120)
    at.session_state["auth.account"] = account
    at.run()
    at.switch_page(page_path(page))
    return ok(at.run())


@pytest.mark.parametrize("page, least", [("pages/agreement.py", 3), ("pages/adjudicate.py", 2)])
def test_no_annotation_table_shows_a_missing_value(annotated, page, least):
    """Agreement and Adjudicate (an admin's session): no table cell reads None / nan."""
    at = _as(annotated["root"], page)
    if page == "pages/adjudicate.py":
        at.toggle(key="adjudicate.decided").set_value(True)
        ok(at.run())
    frames = _frames(at)
    assert len(frames) >= least, (page, len(frames))
    for t in frames:
        assert missing_cells(t) == [], (page, list(t.columns), missing_cells(t)[:5])


def test_health_and_transfer_tables_show_no_missing_value(gappy, tmp_path, monkeypatch):
    """Benchmark health (slices without trainable baselines) and Transfer (a saved matrix with cells
    the paper does not report): no table cell reads None / nan."""
    import json

    from test_app_transfer import saved_transfer

    monkeypatch.setenv("AUTOMONITOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AUTOMONITOR_DB", gappy["url"])  # this module's other store may be the one set
    at = ok(app("pages/health.py").run())
    frames = _frames(at)
    assert frames, "the health page draws its slices table"
    for t in frames:
        assert missing_cells(t) == [], ("health", list(t.columns), missing_cells(t)[:5])
    monkeypatch.setenv("AUTOMONITOR_ARTIFACTS", str(tmp_path / "art"))
    d = tmp_path / "art" / "probes"
    d.mkdir(parents=True)
    (d / "transfer-tfidf.json").write_text(json.dumps(saved_transfer()))
    at = ok(app("pages/transfer.py").run())
    frames = _frames(at)
    assert len(frames) == 2, len(frames)
    for t in frames:
        assert missing_cells(t) == [], ("transfer", list(t.columns), missing_cells(t)[:5])
