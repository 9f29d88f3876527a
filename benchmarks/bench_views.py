"""Benchmark: render every monitor view (``full``, ``answer``, ``reasoning``, ``actions``) of every test sample
and control of a built store, as ``run --view`` does for each sample (:func:`automonitor.data.monitor_views.views_of`),
plus the silent-slice rule on every misbehavior sample.

The samples are read once (not timed); each repeat renders them all. Goal: under 5 s for the whole seed-0
test set. Prints samples, characters, the views found per source, wall and CPU seconds.

Usage: ``AUTOMONITOR_DB=sqlite:///automonitor.db .venv/bin/python benchmarks/bench_views.py [--repeat 3]``
(the store of ``automonitor build --seed 0``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import automonitor.data.sources  # noqa: E402,F401  (registers every source)
from automonitor.data.monitor_views import is_silent, views_of  # noqa: E402
from store import get_engine  # noqa: E402
from store.models import Sample  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    engine = get_engine(os.environ.get("AUTOMONITOR_DB", "sqlite:///automonitor.db"))
    with engine.connect() as c:
        rows = c.execute(
            sa.select(Sample.id, Sample.source, Sample.response, Sample.meta, Sample.label).where(
                Sample.split.in_(("test", "controls")), Sample.status == "gold"
            )
        ).all()
    chars = sum(len(r[2]) for r in rows)
    walls, cpus = [], []
    found: dict[str, Counter] = defaultdict(Counter)
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        for sid, src, resp, meta, label in rows:
            vs = views_of(resp, source=src or "", meta=meta)
            is_silent(src or "", resp, meta, label)
            if not walls:
                found[src].update(list(vs))
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    print(f"samples {len(rows):,}, characters {chars:,}")
    for src in sorted(found):
        print(f"  {src:36s} " + " ".join(f"{v}={n}" for v, n in found[src].items()))
    print(
        f"render all views + silent rule: wall median {statistics.median(walls):.2f} s "
        f"(min {min(walls):.2f}), cpu median {statistics.median(cpus):.2f} s; goal < 5 s; load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
