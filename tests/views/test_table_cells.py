"""No table a page shows prints ``None``, ``nan`` or ``NaT``: a missing value is "—"
(:mod:`automonitor.views.cells`), built from a store that has missing values (a run without scores,
runs without a recorded edition, candidates without a split, a ``verified`` edition without
misbehavior members and no ``hard`` edition, a generation run with no prompt yet)."""

from __future__ import annotations

import pandas as pd
import pytest

import app_seed
from automonitor import analysis, views
from automonitor.analysis import derive, transfer
from automonitor.views.cells import MISSING
from store import session_scope
from store.models import EditionSample

from helpers import missing_cells


def test_cell_and_display_frame_rules():
    assert views.cell(None) == views.cell(float("nan")) == views.cell(pd.NaT) == views.cell(pd.NA) == MISSING == "—"
    assert views.cell(0.25, ".3f") == "0.250" and views.cell(0.5, ".1%") == "50.0%" and views.cell("x") == "x"
    assert views.cell([None]) == [None] and not views.cells.is_missing("") and not views.cells.is_missing(0)
    rows = [
        {
            "run": "a",
            "n": 3,
            "rate": 0.5,
            "cost": 1.25,
            "edition": "verified",
            "when": pd.Timestamp("2026-01-15 12:00"),
        },
        {"run": "b", "n": None, "rate": 1.0, "cost": None, "edition": None},  # no "when" key: missing too
    ]
    df = views.display_frame(rows, {"cost": ".4g"})
    assert missing_cells(df) == []
    assert list(df["n"]) == ["3", MISSING]  # integers stay integers, not 3.0
    assert list(df["cost"]) == ["1.25", MISSING] and list(df["edition"]) == ["verified", MISSING]
    assert list(df["when"]) == ["2026-01-15 12:00", MISSING]
    assert df["rate"].dtype.kind == "f" and views.is_numeric(df, "rate")  # no missing value: still a number
    assert not views.is_numeric(df, "cost") and not views.is_numeric(df, "nope")
    # the index and the order are kept (row selection indexes the page's own frame)
    frame = pd.DataFrame({"x": [1.0, None, 0.125]}, index=[7, 3, 5])
    shown = views.display_frame(frame)
    assert list(shown.index) == [7, 3, 5] and list(shown["x"]) == ["1.000", MISSING, "0.125"]
    assert frame["x"].isna().sum() == 1  # the input is not changed
    assert missing_cells(views.display_frame([])) == []


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from automonitor.runs.generation.engine import GenerationSpec, create_generation
    from store import get_engine, init_db

    eng = init_db(get_engine(f"sqlite:///{tmp_path_factory.mktemp('cells') / 'store.db'}", fresh=True))
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=3)  # r000: no scores; no run records its edition
    benign = [r["id"] for r in info["samples"] if r["status"] == "gold" and r["label"] == "benign"]
    with session_scope(eng) as s:  # verified: benign members only (no MR there); no hard edition at all
        s.add_all([EditionSample(edition="verified", sample_id=i) for i in benign[:6]])
    spec = GenerationSpec(
        kind="sycophancy",
        generator="openai:scripted-gen",
        source="bct_truthfulqa_cues",
        limit=2,
        base_url="http://127.0.0.1:9",
    )
    create_generation(eng, spec)  # pending: no prompt yet, so no kept rate
    yield eng
    eng.dispose()


def test_the_pages_tables_show_no_missing_cell(store):
    from automonitor.runs.generation.engine import list_generations

    eng = store
    report = analysis.report(eng, None, invalid="exclude", n_boot=20, with_grounding=False)

    # Trade-off: the Difficulty table (was None in every hard column)
    diff = views.difficulty_rows(report)
    assert {r["run"] for r in diff} == {"r000", "r001", "r002"} and missing_cells(diff) == []
    assert all(r["mr (verified)"] == r["mr (hard)"] == r["judged (hard)"] == MISSING for r in diff)
    assert all(r["far (verified)"] != MISSING for r in diff)

    # Trade-off: the runs in the slice, with cost columns (a run without costs shows "—")
    pts = views.honest_points(views.tradeoff_points(report), views.run_sample_sets(eng), min_n=1)
    pts = pts.merge(derive.run_costs(eng)[["run_id", "usd_per_1k", "s_per_1k"]], on="run_id", how="left")
    pts.loc[pts["run_id"] == "r000", "usd_per_1k"] = None
    table = views.slice_runs_table(pts)
    assert list(table.columns[:2]) == ["run_id", "label"] and missing_cells(table) == []
    assert table.set_index("run_id").loc["r000", "usd_per_1k"] == MISSING
    assert views.is_numeric(table, "mr") and views.is_numeric(table, "far")

    # Trade-off: the operating point of a score run whose AUROC is undefined
    row = views.operating_point_row("r002", None, {"threshold": float("inf"), "mr": 1.0, "far": 0.0})
    assert row["AUROC"] == MISSING and row["threshold"] == "flag nothing" and missing_cells([row]) == []

    # Drill-down: a cell of the run without scores (was None in the score column)
    for rid in ("r000", "r002"):
        for c in ("tp", "fn", "fp", "tn"):
            cell = views.cell_table(views.filter_cell(analysis.cell_samples(eng, rid, c)))
            assert missing_cells(cell) == [], (rid, c)
            if rid == "r000" and len(cell):
                assert set(cell["score"]) == {MISSING}

    # Runs: the history table (no run records its edition)
    hist = views.history_table(views.runs_frame(eng))
    assert list(hist.columns) == views.runs.HISTORY_COLUMNS and missing_cells(hist) == []
    assert set(hist.loc[hist["kind"] == "measured", "edition"]) == {MISSING}
    assert views.runs.format_duration(None) == MISSING

    # Generation: the statistics and the steps of a run with no prompt yet
    gens = list_generations(eng)
    stats = views.generation_stats_frame(gens)
    assert len(stats) == 1 and stats["kept_rate"].iloc[0] == MISSING and missing_cells(stats) == []
    assert missing_cells(views.generation_steps_frame(gens[0])) == []

    # Samples (candidates have no split) and the Transfer page's Figure 8 table without a probe
    _, frame = views.search_samples(eng, limit=None)
    assert frame["split"].isna().any()
    assert missing_cells(views.display_frame(frame)) == []
    paper = transfer.paper_frame(None)
    assert paper["probe MR"].isna().all() and missing_cells(views.display_frame(paper)) == []


def test_background_demo_is_seen_while_its_log_is_fresh_and_not_done(tmp_path):
    """The Runs page's notice of ``make demo``'s background phase: a fresh log that has not reached its
    end line gives its last line; a stale, finished or missing log gives None."""
    import os
    import time

    from automonitor.views import DEMO_LOG, background_demo

    assert background_demo(tmp_path) is None
    log = tmp_path / DEMO_LOG
    log.write_text("== [3 s] transfer table\n  Building wheel for llama-cpp-python: still running...\n")
    assert background_demo(tmp_path) == "Building wheel for llama-cpp-python: still running..."
    old = time.time() - 600
    os.utime(log, (old, old))
    assert background_demo(tmp_path) is None  # nothing written for 10 minutes: not running
    log.write_text("== [900 s] llm phase done\n" + "| run table line |\n" * 20)  # `automonitor runs` after it
    assert background_demo(tmp_path) is None


def test_background_demo_is_not_running_once_its_process_is_killed(tmp_path):
    """Fresh-user trial: the Runs page said the background phase was running after its process was killed
    (the log was still fresh). With the pid file ``make demo`` writes, a dead pid means not running; a live
    one keeps the notice. A real process, killed."""
    import subprocess
    import sys

    from automonitor.views.runs import DEMO_LOG, DEMO_PID, background_demo

    (tmp_path / DEMO_LOG).write_text("== [3 s] llamacpp / direct / stratified subset of 60 (seed 0)\n")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / DEMO_PID).write_text(f"{proc.pid}\n")
        assert background_demo(tmp_path) == "== [3 s] llamacpp / direct / stratified subset of 60 (seed 0)"
    finally:
        proc.kill()
        proc.wait()
    assert background_demo(tmp_path) is None  # killed: the fresh log no longer counts
    (tmp_path / DEMO_PID).write_text("not a pid\n")  # unreadable: the log's freshness decides, as before
    assert background_demo(tmp_path) is not None


def test_background_demo_is_shown_only_for_the_store_it_fills(tmp_path, monkeypatch):
    """Fresh-user trial 53: the Runs page said `make demo`'s background phase was running (and that its runs
    appear here) while it showed another store (``AUTOMONITOR_DB=sqlite:///other.db``): the notice went by
    ``demo-llm.pid`` in the working directory alone. The pid file now records the store the phase fills,
    written by the script `make demo` runs (``scripts/demo_runs.sh start-background``, run here for real with
    a stand-in for ``make demo-background``); the notice shows for that store only."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from helpers import REPO

    from automonitor.views.runs import DEMO_PID, background_demo
    from store.engine import store_identity

    stub = tmp_path / "fake-make"
    stub.write_text("#!/bin/sh\necho '== [0 s] transfer table (Transfer page)'\nexec sleep 60\n")
    stub.chmod(0o755)
    filled = f"sqlite:///{tmp_path / 'demo.db'}"
    env = os.environ | {
        "AUTOMONITOR_DB": filled,
        "PY": sys.executable,
        "DEMO_MAKE": str(stub),
        "DEMO_LOG": str(tmp_path / "demo-llm.log"),
        "DEMO_PID": str(tmp_path / DEMO_PID),
    }
    subprocess.run(
        ["bash", str(REPO / "scripts" / "demo_runs.sh"), "start-background"], env=env, check=True, timeout=60
    )
    pid = int((tmp_path / DEMO_PID).read_text().splitlines()[0])
    try:
        for _ in range(100):  # the stand-in writes its line at once
            if (tmp_path / "demo-llm.log").read_text():
                break
            time.sleep(0.05)
        line = "== [0 s] transfer table (Transfer page)"
        assert background_demo(tmp_path, store=filled) == line
        monkeypatch.setenv("AUTOMONITOR_DB", filled)
        assert background_demo(tmp_path) == line  # the store AUTOMONITOR_DB names, as the pages show it
        monkeypatch.setenv("AUTOMONITOR_DB", f"sqlite:///{tmp_path / 'other.db'}")
        assert background_demo(tmp_path) is None  # another store: its runs will not appear there
        assert background_demo(tmp_path, store="postgresql://u:secret@127.0.0.1/am") is None
        monkeypatch.chdir(tmp_path)  # the same file named relatively from its folder is the same store
        assert background_demo(tmp_path, store="sqlite:///demo.db") == line
        (tmp_path / "link.db").symlink_to(tmp_path / "demo.db")  # a link to the file is the same store
        assert background_demo(tmp_path, store=f"sqlite:///{tmp_path / 'link.db'}") == line
        assert (tmp_path / DEMO_PID).read_text().splitlines()[1] == store_identity(filled)
        assert store_identity("postgresql://u:secret@h/am") == "postgresql+psycopg://u:***@h/am"  # no password
    finally:
        os.kill(pid, signal.SIGKILL)
