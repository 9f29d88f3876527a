"""Time ``automonitor build`` on SQLite and PostgreSQL and print the figures.

Each repetition builds the full benchmark (every edition of ``automonitor.vocab.EDITIONS``,
train split, candidate pool, controls; the quality gates) into a brand-new
store, then rebuilds with the same seed (a no-op). PostgreSQL uses a scratch database created from
``$AUTOMONITOR_TEST_PG`` (default ``postgresql+psycopg://127.0.0.1:5432/test``) and dropped after.

With ``--cold-analysers`` the first build runs the static analysers of the safety-code gate (Bandit,
flawfinder) with an empty cache (a fresh ``$AUTOMONITOR_CACHE_DIR``); the repetitions reuse that cache,
as every later build does.

Usage: ``.venv/bin/python benchmarks/bench_build.py [--repeat N] [--raw DIR] [--no-pg] [--cold-analysers]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from automonitor.data.build import build, load_all  # noqa: E402
from store import get_engine, init_db  # noqa: E402

PG_ADMIN = os.environ.get("AUTOMONITOR_TEST_PG", "postgresql+psycopg://127.0.0.1:5432/test")


def _time_store(url: str, raw: Path) -> tuple[float, float, int]:
    eng = init_db(get_engine(url, fresh=True))
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        rep = build(eng, raw, 0)
        full = time.perf_counter() - t0
        print(
            f"  build: {full:.2f} s wall, {time.process_time() - c0:.2f} s CPU of this process; editions "
            + ", ".join(f"{k} {v['pairs']} pairs" for k, v in rep["editions"].items())
            + f", controls {rep['controls']['samples']}"
        )
        t0 = time.perf_counter()
        again = build(eng, raw, 0)
        noop = time.perf_counter() - t0
        assert again["unchanged"], "rebuild with the same seed changed the store"
        return full, noop, rep["inserted"]
    finally:
        eng.dispose()


def _sqlite(raw: Path) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as d:
        return _time_store(f"sqlite:///{Path(d) / 'bench.db'}", raw)


def _postgres(raw: Path) -> tuple[float, float, int]:
    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    name = f"am_bench_{uuid.uuid4().hex[:10]}"
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        return _time_store(PG_ADMIN.rsplit("/", 1)[0] + f"/{name}", raw)
    finally:
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--raw", default=os.environ.get("AUTOMONITOR_RAW", str(REPO.parent / "shared" / "raw")))
    ap.add_argument("--no-pg", action="store_true")
    ap.add_argument("--cold-analysers", action="store_true", help="start with an empty analyser cache")
    args = ap.parse_args()
    raw = Path(args.raw)
    if args.cold_analysers:
        os.environ["AUTOMONITOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="am-bench-cache-")
        print(f"analyser cache: empty ({os.environ['AUTOMONITOR_CACHE_DIR']})")
    t0 = time.perf_counter()
    loaded = load_all(raw)
    print(
        f"read + pair all sources: {time.perf_counter() - t0:.2f} s "
        f"({sum(len(r.pairs) for r in loaded.values())} pairs from {raw})"
    )
    backends = [("SQLite", _sqlite)] + ([] if args.no_pg else [("PostgreSQL", _postgres)])
    for name, fn in backends:
        fulls, noops, rows = [], [], 0
        for _ in range(args.repeat):
            full, noop, rows = fn(raw)
            fulls.append(full)
            noops.append(noop)
        print(
            f"{name:10s} full build: median {statistics.median(fulls):.2f} s, min {min(fulls):.2f} s "
            f"({rows} rows, {rows / statistics.median(fulls):.0f} rows/s); same-seed rebuild (no-op): "
            f"median {statistics.median(noops):.2f} s  [n={args.repeat}]"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
