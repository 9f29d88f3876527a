"""Time the ``hard`` edition and the detector ladder: the full build plan at seed 0 (sources loaded once),
cold (an empty cache home: every analyser, ladder and filter result computed) and warm (the same caches read
back), in wall and CPU seconds of this process, plus the ladder's CPU per detector and what survives.

Usage: ``.venv/bin/python benchmarks/bench_hard.py [--repeat N] [--raw DIR] [--seed S] [--no-cold]``

Goals (issue 36): the build with the ladder < 4 min CPU cold, < 30 s warm on the 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from automonitor.data.build import load_all, plan_build  # noqa: E402


def _timed(raw: Path, seed: int, loaded) -> tuple[float, float, dict]:
    w, c = time.perf_counter(), time.process_time()
    plan = plan_build(raw, seed, loaded=loaded)
    return time.perf_counter() - w, time.process_time() - c, plan.report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--raw", default=os.environ.get("AUTOMONITOR_RAW", str(REPO.parent / "shared" / "raw")))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-cold", action="store_true", help="skip the cold run (use the current cache home)")
    a = ap.parse_args()
    raw = Path(a.raw)
    t0, c0 = time.perf_counter(), time.process_time()
    loaded = load_all(raw)
    print(f"load sources: {time.perf_counter() - t0:.2f} s wall, {time.process_time() - c0:.2f} s CPU")
    with tempfile.TemporaryDirectory(prefix="bench-hard-cache-") as tmp:
        if not a.no_cold:
            os.environ["AUTOMONITOR_CACHE_DIR"] = tmp
            w, c, rep = _timed(raw, a.seed, loaded)
            lad = rep["ladder"]["detectors"]
            print(f"cold plan (gates, selection, ladder, hard): {w:.1f} s wall, {c:.1f} s CPU (goal < 240 s CPU)")
            print("  ladder CPU per detector: " + ", ".join(f"{k} {v['cpu_seconds']}" for k, v in lad.items()))
        walls, cpus = [], []
        for _ in range(a.repeat):
            w, c, rep = _timed(raw, a.seed, loaded)
            walls.append(w)
            cpus.append(c)
        print(
            f"warm plan: median {statistics.median(walls):.1f} s wall, {statistics.median(cpus):.1f} s CPU over "
            f"{a.repeat} (goal < 30 s); ladder cached: {rep['ladder']['cached']}, filter cached: {rep['hard']['cached']}"
        )
    h = rep["hard"]
    print(f"  hard: {h['pairs']} pairs + {h['controls']} controls; readings {h['readings']}")
    print(f"  by source: { {s: v['hard'] for s, v in h['by_source'].items() if v['hard']} }")
    print(f"  awaiting reading: { {s: len(v) for s, v in h['awaiting_reading'].items()} }")
    print(f"  not certified: {h['not_certified'] or 'none'}; tiers: {rep['ladder']['tiers']}")


if __name__ == "__main__":
    main()
