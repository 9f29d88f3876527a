"""Scale: a 100,000-sample run against the 200 ms loopback server at concurrency 256 (issue 15).

Each size runs in its own child process (fresh store: SQLite file by default, or a fresh PostgreSQL
database with --db): generated pairs are inserted in chunks, a run is created and executed through
the real ``openai`` SDK backend against tests/servers/openai_fast.py (its own process, fixed latency).
Reported per size: wall time of execute_run, achieved vs ideal throughput (ideal = concurrency /
latency; goal >= 0.85), and memory: resident set size before execute_run and its peak during it
(sampled every 20 ms from /proc/self/status), so "memory flat in N" is the peak growth compared across
sizes.

Usage: python benchmarks/bench_scale.py [--sizes 10000 100000] [--concurrency 256] [--latency 0.2]
       [--db postgresql+psycopg://127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def child(n: int, concurrency: int, latency: float, db: str | None) -> dict:
    from automonitor import runner
    from servers.data import pair_rows
    from store import get_engine, init_db, session_scope
    from store.queries.samples import insert_samples

    tmp = tempfile.mkdtemp(prefix="bench_scale_")
    url, drop = f"sqlite:///{tmp}/scale.db", None
    if db:
        from bench_runner import _fresh_pg_database

        url, drop = _fresh_pg_database(db)
    engine = init_db(get_engine(url, fresh=True))
    try:
        pairs = (n + 1) // 2
        for off in range(0, pairs, 5000):
            rows = pair_rows(min(5000, pairs - off), "test", offset=off, prefix="scale")
            with session_scope(engine) as s:
                insert_samples(s, rows)
        server = subprocess.Popen(
            [sys.executable, "-m", "servers.openai_fast", "--latency", str(latency)],
            cwd=str(REPO / "tests"),
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO / "tests")},
        )
        try:
            base = server.stdout.readline().strip()
            rid = runner.create_run(
                engine, "openai:bench-model", "direct", base_url=base, concurrency=concurrency, params={"timeout": 60}
            )
            import gc

            gc.collect()
            before = rss_mb()
            peak = [before]
            stop = threading.Event()

            def sample() -> None:
                while not stop.is_set():
                    peak[0] = max(peak[0], rss_mb())
                    time.sleep(0.02)

            t = threading.Thread(target=sample, daemon=True)
            t.start()
            t0, c0 = time.perf_counter(), time.process_time()
            out = runner.execute_run(engine, rid)
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            stop.set()
            t.join()
        finally:
            server.kill()
            server.wait()
        ideal = concurrency / latency
        return {
            "n": n,
            "store": engine.url.get_backend_name(),
            "seconds": round(dt, 2),
            "load_avg_1m": os.getloadavg()[0],
            "judged": sum(out["counts"].values()),
            "api_calls": out["api_calls"],
            "achieved_per_s": round(n / dt, 1),
            "ideal_per_s": ideal,
            "ratio": round(n / dt / ideal, 3),
            "cpu_s": round(cpu, 1),
            "rss_before_mb": round(before, 1),
            "rss_peak_mb": round(peak[0], 1),
            "rss_growth_mb": round(peak[0] - before, 1),
        }
    finally:
        engine.dispose()
        if drop:
            drop()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--db", default=None)
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        print(json.dumps(child(a.child, a.concurrency, a.latency, a.db)), flush=True)
        return 0
    results = []
    for n in a.sizes:
        cmd = [
            sys.executable,
            __file__,
            "--child",
            str(n),
            "--concurrency",
            str(a.concurrency),
            "--latency",
            str(a.latency),
        ] + (["--db", a.db] if a.db else [])
        p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        if p.returncode != 0:
            print(p.stderr, file=sys.stderr)
            return 1
        r = json.loads(p.stdout.strip().splitlines()[-1])
        results.append(r)
        print(
            f"{r['store']} n={r['n']:>7}: {r['seconds']:.1f} s, {r['achieved_per_s']:.0f}/s vs ideal "
            f"{r['ideal_per_s']:.0f}/s -> ratio {r['ratio']:.3f} (goal >= 0.85); CPU {r['cpu_s']} s; "
            f"RSS {r['rss_before_mb']:.0f} MB before, peak {r['rss_peak_mb']:.0f} MB "
            f"(growth {r['rss_growth_mb']:.0f} MB); api_calls {r['api_calls']}; machine load {r['load_avg_1m']:.1f}",
            flush=True,
        )
    if len(results) > 1:
        g = [r["rss_growth_mb"] for r in results]
        print(
            f"memory growth during execution across sizes {[r['n'] for r in results]}: {g} MB "
            f"(flat in N when these are about equal)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
