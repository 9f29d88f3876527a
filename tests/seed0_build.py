"""The suite's one cold seed-0 build (``built_sqlite`` in tests/conftest.py), importable and runnable.

``python tests/seed0_build.py RUN_DIR RAW_DIR`` builds it in a process of its own: the suite starts that
in the background as soon as a collected test needs the build (``conftest.pytest_collection_modifyitems``),
so the ~60-85 s of CPU of the cold plan and audit overlap the other tests instead of holding up the worker
whose test asks first. Whoever comes first builds, under the run's file lock; the other finds it done.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

#: the hard link to the seed-0 build's plan cache entry, in the run's directory (``keep_seed0_plan``)
SEED0_PLAN = "built-seed0.plan.json"
#: the editions whose audit the seed-0 build keeps in its store (``build(..., audits=...)``)
SEED0_AUDITS = ("paper", "verified", "hard")


def sqlite_copy(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite store (the backup API: WAL contents included)."""
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    a.close()
    b.close()


def dispose_engine(url: str, eng) -> None:
    """Dispose of ``eng`` and of the engine cached for ``url`` (``store.engine.engines``), if any."""
    from store.engine import engines

    eng.dispose()
    cached = engines.pop(url, None)
    if cached is not None:
        cached.dispose()


def build_seed0(run: Path, raw_dir: Path) -> None:
    """Build the raw sources with seed 0 into ``run/built-seed0.db`` (SQLite, the real
    :func:`automonitor.data.build.build` with the audits of :data:`SEED0_AUDITS` kept, as ``automonitor build
    --edition E`` keeps paper's and E's) and
    write its report to ``run/built-seed0.json`` (JSON), unless that report exists: under the file lock
    ``run/built-seed0.lock``, so any number of processes may call it and one builds. The plan cache entry
    the build wrote is kept for the run (:func:`keep_seed0_plan`). Uses the plan and analyser cache of
    ``$AUTOMONITOR_CACHE_DIR``."""
    from filelock import FileLock

    from automonitor.data.build import build
    from store import get_engine, init_db

    db, rep = run / "built-seed0.db", run / "built-seed0.json"
    with FileLock(str(run / "built-seed0.lock")):
        if rep.exists():
            return
        tmp = run / "built-seed0.tmp.db"
        tmp.unlink(missing_ok=True)  # left by a build that was stopped half-way
        url = f"sqlite:///{tmp}"
        eng = init_db(get_engine(url, fresh=True))
        # the store keeps the paper audit, as `automonitor build` does, and verified's and hard's, as `build --edition
        # verified` (hard) does: the docs' audit tables (tests/data/test_readme_tables.py) and the hard edition's test
        # (tests/data/test_hard.py) read them instead of computing them on a worker
        report = build(eng, raw_dir, 0, audits=SEED0_AUDITS)
        dispose_engine(url, eng)
        sqlite_copy(tmp, db)
        tmp.unlink()
        keep_seed0_plan(run, raw_dir)
        rep.write_text(json.dumps(report, default=str))


def keep_seed0_plan(run: Path, raw_dir: Path) -> None:
    """Keep the plan cache entry of the seed-0 build for the whole run: a hard link to it in the run's
    directory (:data:`SEED0_PLAN`), and its cache path beside it. The cache keeps only the
    :data:`~automonitor.data.build.plan_cache.KEEP` most recently used entries, and the suite's many builds of
    other raw dirs and seeds would evict it; ``conftest._restore_seed0_plan`` puts it back."""
    from automonitor.data.build.plan_cache import plan_cache_dir, plan_key
    from automonitor.data.errata import load_errata

    key = plan_key(raw_dir, 0, external_test=(set(), set()), errata=load_errata(None), hard=True)
    entry = plan_cache_dir() / f"{key}.json"
    if entry.is_file():  # (not written: an unwritable cache directory, or a plan that does not read back equal)
        kept = run / SEED0_PLAN
        kept.unlink(missing_ok=True)
        os.link(entry, kept)
        (run / (SEED0_PLAN + ".path")).write_text(str(entry))


if __name__ == "__main__":
    build_seed0(Path(sys.argv[1]), Path(sys.argv[2]))
