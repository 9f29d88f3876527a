"""``scripts/demo_runs.sh fast``, the part of ``make demo`` before the app is served, on a real build of a
small raw dir (the suite's two small sources and one source with a reasoning part): it puts the rules run,
the TF-IDF probe (trained on the spot, also run under the views ``answer`` and ``reasoning``) and three
derived runs in the store, and a second call reuses all of them (no new run, no retraining): steps
and reuse that do not depend on the size of the data."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from automonitor.data.sources import professor_cue

REPO = Path(__file__).resolve().parents[2]


#: the source added to ``small_raw_dir`` (whose two sources have no reasoning part) for the demo's raw dir
#: (its folder there): the fast phase runs the probe under the ``reasoning`` view, refused on a store
#: without a test sample that has it; its MMLU professor-cue pairs (chain of thought, then the answer) are
#: in edition ``paper``
REASONING_SOURCE = professor_cue.NAME


@pytest.fixture
def demo_store(tmp_path, small_raw_dir, raw_dir, empty_sqlite_template) -> tuple[str, Path]:
    """``(url, raw)``: a SQLite store holding the real seed-0 build (:func:`automonitor.data.build.build`,
    without the ``hard`` edition, which the demo does not use) of ``raw``, a raw dir made of
    ``small_raw_dir``'s sources and :data:`REASONING_SOURCE`. The store starts as a copy of the run's migrated
    empty store (``init_db`` then only checks it)."""
    from automonitor.data.build import build
    from store import get_engine, init_db
    from store.engine import engines

    raw = tmp_path / "raw"
    for src in [*small_raw_dir.iterdir(), raw_dir / professor_cue.FOLDER]:
        shutil.copytree(src, raw / src.name)
    shutil.copyfile(empty_sqlite_template, tmp_path / "demo.db")
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    eng = init_db(get_engine(url, fresh=True))
    report = build(eng, raw, 0, hard=False)
    assert report["editions"]["paper"]["by_source"].get(REASONING_SOURCE), report["editions"]["paper"]
    eng.dispose()
    cached = engines.pop(url, None)
    if cached is not None:
        cached.dispose()
    return url, raw


def _demo(db_url: str, art: Path, raw: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "AUTOMONITOR_DB": db_url,
        "AUTOMONITOR_RAW": str(raw),
        "AUTOMONITOR_ARTIFACTS": str(art),
        "AM": str(bin_dir / "automonitor"),
        "PY": sys.executable,
        "PYTHONPATH": str(REPO),
    }
    return subprocess.run(
        ["bash", str(REPO / "scripts" / "demo_runs.sh"), "fast"], env=env, capture_output=True, text=True, timeout=900
    )


def _runs(cli, db_url: str) -> list[dict]:
    res = cli(["runs", "--json"], db=db_url)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    return data["runs"] if isinstance(data, dict) else data


@pytest.mark.slow
def test_demo_fast_phase_fills_the_plane_and_a_second_call_reuses_it(cli, demo_store, tmp_path):
    built_db_url, raw = demo_store
    art = tmp_path / "artifacts"
    first = _demo(built_db_url, art, raw)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "probe: training TF-IDF" in first.stderr
    runs = _runs(cli, built_db_url)
    assert len(runs) >= 5 and all(r["status"] == "finished" for r in runs), runs
    monitors = " ".join(str(r.get("monitor", "")) for r in runs)
    assert "rules" in monitors and "probe:tfidf-lr" in monitors, monitors
    second = _demo(built_db_url, art, raw)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "artefact found" in second.stderr and "probe: training" not in second.stderr
    assert sorted(r["run_id"] for r in _runs(cli, built_db_url)) == sorted(r["run_id"] for r in runs)


def test_demo_transfer_phase_ends_with_a_done_line(tmp_path):
    """The Transfer page asks the user to reload it "when its log says so": the background log must say
    when the transfer phase is over (here on a saved matrix: the phase reuses it, no training)."""
    art = tmp_path / "artifacts"
    (art / "probes").mkdir(parents=True)
    (art / "probes" / "transfer-tfidf.json").write_text("{}")
    env = {
        **os.environ,
        "AUTOMONITOR_DB": f"sqlite:///{tmp_path / 'unused.db'}",
        "AUTOMONITOR_ARTIFACTS": str(art),
        "AM": str(Path(sys.executable).parent / "automonitor"),
        "PY": sys.executable,
        "PYTHONPATH": str(REPO),
    }
    res = subprocess.run(
        ["bash", str(REPO / "scripts" / "demo_runs.sh"), "transfer"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("== [")]
    assert "transfer table: found (reused)" in lines[0]
    assert lines[-1].endswith("transfer phase done (the Transfer page shows the matrix by itself)"), lines
