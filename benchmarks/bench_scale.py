"""Scale: a 100,000-sample run against the 200 ms loopback server at concurrency 256.

Each size runs in its own child process (fresh store: SQLite file by default, or a fresh PostgreSQL
database with --db): generated pairs are inserted in chunks, a run is created and executed through
the real ``openai`` SDK backend against tests/servers/openai_fast.py (its own process, fixed latency).
Reported per size: wall time of execute_run, achieved vs ideal throughput (ideal = concurrency /
latency; goal >= 0.85), and memory: resident set size before execute_run and its peak during it
(sampled every 20 ms from /proc/self/status), so "memory flat in N" is the peak growth compared across
sizes.

The floor (what the transport alone achieves, the bound on the runner's throughput) is measured in the
same child, against the same server, before the run: the same N chat requests sent by a bare
``aiohttp`` loop (a semaphore of ``concurrency``, JSON decoded, nothing else), and by a bare loop over
the official SDK's ``client.post`` with its default httpx transport and with its
``DefaultAioHttpClient``. Reported: runner throughput / aiohttp floor (goal >= 0.8) and runner / bare
SDK.

Usage: python benchmarks/bench_scale.py [--sizes 10000 100000] [--concurrency 256] [--latency 0.2]
       [--db postgresql+psycopg://127.0.0.1:5432/test] [--no-floor] [--transport aiohttp|httpx|direct]
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


def _bodies(n: int) -> list[dict]:
    """``n`` chat bodies like the runner's (direct template), each with its own user text."""
    from automonitor.runs.prompts import PromptBuilder, load_template
    from servers.data import pair_rows

    b = PromptBuilder(load_template("direct"))
    rows = pair_rows((n + 1) // 2, "test", prefix="floor")[:n]
    out = []
    for r in rows:
        system, user, _ = b.chat_messages(r["request"], r["response"])
        out.append(
            {
                "model": "bench-model",
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                "max_tokens": 16,
                "temperature": 0,
                "seed": 0,
                "logprobs": True,
                "top_logprobs": 5,
            }
        )
    return out


def bare_aiohttp(base: str, bodies: list[dict], concurrency: int) -> tuple[float, float]:
    """The floor: ``bodies`` POSTed by a bare aiohttp loop (semaphore, JSON decode); (wall s, CPU s)."""
    import asyncio

    import aiohttp

    async def go() -> None:
        conn = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=conn, headers={"authorization": "Bearer sk-local"}) as session:
            sem = asyncio.Semaphore(concurrency)

            async def one(body: dict) -> None:
                async with sem:
                    async with session.post(base + "/chat/completions", json=body) as r:
                        await r.json()

            await asyncio.gather(*(one(b) for b in bodies))

    t0, c0 = time.perf_counter(), time.process_time()
    asyncio.run(go())
    return time.perf_counter() - t0, time.process_time() - c0


def bare_sdk(base: str, bodies: list[dict], concurrency: int, aio: bool) -> tuple[float, float]:
    """``bodies`` through the official SDK's ``client.post`` (ChatCompletion parsing) in a bare loop,
    with its default httpx transport or its ``DefaultAioHttpClient`` (``aio``); (wall s, CPU s)."""
    import asyncio

    import openai
    from openai.types.chat import ChatCompletion

    async def go() -> None:
        client = openai.AsyncOpenAI(
            api_key="sk-local",
            base_url=base,
            max_retries=0,
            http_client=openai.DefaultAioHttpClient() if aio else None,
        )
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int, body: dict) -> None:
            async with sem:
                await client.post(
                    "/chat/completions", body=body, cast_to=ChatCompletion, options={"idempotency_key": f"b-{i}"}
                )

        await asyncio.gather(*(one(i, b) for i, b in enumerate(bodies)))
        await client.close()

    t0, c0 = time.perf_counter(), time.process_time()
    asyncio.run(go())
    return time.perf_counter() - t0, time.process_time() - c0


def child(
    n: int, concurrency: int, latency: float, db: str | None, floor: bool = True, transport: str = "aiohttp"
) -> dict:
    from automonitor.runs import runner
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
            floors: dict[str, tuple[float, float]] = {}
            if floor:
                bodies = _bodies(n)
                floors["aiohttp"] = bare_aiohttp(base, bodies, concurrency)
                floors["sdk_httpx"] = bare_sdk(base, bodies, concurrency, aio=False)
                floors["sdk_aiohttp"] = bare_sdk(base, bodies, concurrency, aio=True)
                del bodies
            rid = runner.create_run(
                engine,
                "openai:bench-model",
                "direct",
                base_url=base,
                concurrency=concurrency,
                params={"timeout": 60, "transport": transport},
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
        floor_out = {
            k: {"seconds": round(w, 2), "cpu_s": round(c, 1), "runner_ratio": round(w / dt, 3)}
            for k, (w, c) in floors.items()
        }
        return {
            "transport": transport,
            "floors": floor_out,
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
    ap.add_argument("--no-floor", action="store_true", help="skip the bare aiohttp / SDK floors")
    ap.add_argument(
        "--transport", default="aiohttp", choices=["aiohttp", "httpx", "direct"], help="the runner's SDK transport"
    )
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        print(
            json.dumps(child(a.child, a.concurrency, a.latency, a.db, floor=not a.no_floor, transport=a.transport)),
            flush=True,
        )
        return 0
    results = []
    for n in a.sizes:
        cmd = (
            [
                sys.executable,
                __file__,
                "--child",
                str(n),
                "--concurrency",
                str(a.concurrency),
                "--latency",
                str(a.latency),
                "--transport",
                a.transport,
            ]
            + (["--db", a.db] if a.db else [])
            + (["--no-floor"] if a.no_floor else [])
        )
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
        for k, f in r["floors"].items():
            print(
                f"  floor {k}: {f['seconds']:.1f} s (CPU {f['cpu_s']} s); runner ({r['transport']}) throughput / "
                f"{k} = {f['runner_ratio']:.3f}" + (" (goal >= 0.8)" if k == "aiohttp" else ""),
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
