"""AppTest: no table on the workbench pages shows ``None``/``nan`` for a missing value ("—" instead),
on a store with missing values: a run without scores, runs without a recorded edition, candidates
without a split, a ``verified`` edition without misbehavior members and no ``hard`` one (the
Trade-off Difficulty table), a generation run with no prompt yet."""

from __future__ import annotations

import pytest

import app_seed
from store import session_scope
from store.models import EditionSample

from apptest_support import StoreEnv, app, ok, open_store
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
        yield {"engine": eng, "r000_tp": str(tp["sample_id"].iloc[0])}
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
