"""``export`` then ``import`` of the real seed-0 build is lossless: every split's export imports back into a
fresh store, which exports the same rows again. Fresh-user trial 45: the train split's export failed to import
(exit 2, "meta is 78772 bytes as JSON (at most 65536)"): five odcv_bench trajectories that the build had stored
were over the importers' ``meta`` cap."""

from __future__ import annotations

import json
import shutil

import pytest

from automonitor.data.records import MAX_META_BYTES, meta_problem
from helpers import run_cli_in_process

#: (export options, import options) of each split of a built store
SPLITS = {
    "test": (["--split", "test"], ["--split", "test"]),
    "train": (["--split", "train"], ["--split", "train"]),
    "candidates": (["--split", "all", "--status", "candidate"], ["--as-candidates"]),
}


def _rows(path) -> list[dict]:
    return sorted((json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()), key=lambda r: r["sample_id"])


@pytest.mark.parametrize("split", list(SPLITS))
def test_every_split_of_a_built_store_imports_back_unchanged(built_sqlite, empty_sqlite_template, tmp_path, split):
    """The export reads the run's seed-0 store itself (``built_sqlite``: an export writes nothing, as
    ``stats`` in tests/data/test_errata_on_the_build.py); the fresh store is a copy of the run's migrated empty
    store (``empty_sqlite_template``, never written), so the import pays for its rows, not for the migrations."""
    path, _ = built_sqlite
    out_opts, in_opts = SPLITS[split]
    first = tmp_path / "first.jsonl"
    r = run_cli_in_process(["export", str(first), *out_opts], db=f"sqlite:///{path}")
    assert r.returncode == 0, r.stderr
    rows = _rows(first)
    assert rows, f"the built store has no {split} samples"
    shutil.copyfile(empty_sqlite_template, tmp_path / "fresh.db")
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    r = run_cli_in_process(["import", str(first), *in_opts], db=fresh)
    assert r.returncode == 0, r.stderr
    again = tmp_path / "again.jsonl"
    r = run_cli_in_process(["export", str(again), *out_opts], db=fresh)
    assert r.returncode == 0, r.stderr
    assert _rows(again) == rows


def test_the_build_keeps_no_meta_the_importers_refuse(built_sqlite, tmp_path):
    """One limit for both paths: every stored sample's meta passes the importers' check, and the largest
    trajectories (over the old 64 KiB cap) are kept."""
    import sqlalchemy as sa

    path, _ = built_sqlite
    eng = sa.create_engine(f"sqlite:///{path}")
    with eng.connect() as c:
        metas = [json.loads(m) if isinstance(m, str) else m for (m,) in c.execute(sa.text("select meta from sample"))]
    eng.dispose()
    assert metas and [p for m in metas if (p := meta_problem(m or {}))] == []
    sizes = [len(json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode()) for m in metas]
    assert 65_536 < max(sizes) <= MAX_META_BYTES
