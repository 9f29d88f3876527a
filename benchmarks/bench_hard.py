"""Time the ``hard`` edition: the full build plan at seed 0 (sources loaded once) and the adversarial
filter inside it (``report["hard"]["seconds"]``), plus what survives.

Usage: ``.venv/bin/python benchmarks/bench_hard.py [--repeat N] [--raw DIR] [--seed S]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from automonitor.data.build import load_all, plan_build  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--raw", default=os.environ.get("AUTOMONITOR_RAW", str(REPO.parent / "shared" / "raw")))
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    raw = Path(a.raw)
    t0 = time.perf_counter()
    loaded = load_all(raw)
    print(f"load sources: {time.perf_counter() - t0:.2f} s")
    plans, filt = [], []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        plan = plan_build(raw, a.seed, loaded=loaded)
        plans.append(time.perf_counter() - t0)
        filt.append(plan.report["hard"]["seconds"])
    h = plan.report["hard"]
    print(f"plan (gates, selection, hard): median {statistics.median(plans):.2f} s wall over {a.repeat}")
    print(f"  of which the hard filter: median {statistics.median(filt):.2f} s ({h['rounds']} rounds)")
    print(f"  hard: {h['pairs']} pairs + {h['controls']} controls; removed by {h['removed_by_feature']}")
    print(f"  not achievable: {', '.join(h['not_achievable']) or 'none'}")


if __name__ == "__main__":
    main()
