"""Scale: judge jobs against the 200 ms loopback server, each transport as a fraction of the network floor.

Each case ``N:C`` (N samples at concurrency C; default ``3010:64`` and ``20000:256``, the figures of
issue 38) runs in its own child process against tests/servers/openai_fast.py (its own process, fixed
latency). The child fills a store once (SQLite file by default, or a fresh PostgreSQL database with
--db), then, for ``--rounds`` rounds, runs interleaved:

- the **floor**: the same N chat requests sent by a bare ``aiohttp`` loop (a semaphore of C, JSON
  decoded, nothing else): what the network and the machine allow;
- the lean path alone: the same requests sent by ``DirectChat`` (the default transport's client) in a
  bare loop, no runner and no store: its distance to the floor is the transport's own cost;
- a full judge job (``runner.create_run`` + ``execute_run``: prompts, parsing, scoring, the store) with
  each ``--transports`` value of ``--param transport`` (default ``direct``, the lean default path, and
  ``sdk``, the official SDK), each on a fresh copy of the store (no cache hits); the order of the
  transports alternates from round to round;
- with ``--loops asyncio uvloop``: each job once on asyncio's own event loop and once on uvloop (its
  event loop policy set around the job: ``asyncio.run`` in the runner then makes a uvloop loop),
  alternating, and the floor on uvloop too: the same code and store, only the loop differs (uvloop must
  be importable; it is no dependency of the product).

Reported per case and path: median wall time, **fraction of the floor** (the floor's wall time / the
path's, paired within each round, then the median), CPU per request (the child's CPU time / N; the
server runs in another process), resident-memory growth during the job (the kernel's peak resident size,
``VmHWM`` reset by ``/proc/self/clear_refs`` before the job, minus the size before it; where that cannot be
reset, sampled every 20 ms by a thread, whose CPU then counts in the job's: "memory flat" when it stays
about equal across N), and the machine's 1-minute load
average before and after the case (the machine is shared: only these side-by-side ratios are compared).
Goals (issue 38): the default path >= 0.9 of the floor at concurrency 64 and >= 0.85 at 256.

Usage: python benchmarks/bench_scale.py [--cases 3010:64 20000:256 | --sizes N ... --concurrency C]
       [--rounds 3] [--latency 0.2] [--transports direct sdk] [--loops asyncio uvloop]
       [--db postgresql+psycopg://127.0.0.1:5432/test] [--json]
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


def rss_mb(field: str = "VmRSS") -> float:
    """The process's resident size (``field`` ``VmHWM``: its peak since start or the last
    :func:`reset_peak_rss`), MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def reset_peak_rss() -> bool:
    """Reset the kernel's peak resident size of this process (``VmHWM``) to its current size, by writing 5
    to ``/proc/self/clear_refs`` (Linux 4.0+); False where that is not allowed (then a sampler thread
    measures the peak)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return rss_mb("VmHWM") > 0.0


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


def _run_on(coro, loop: str | None) -> None:
    """Run ``coro`` on asyncio's own loop (``loop`` None or ``asyncio``) or on uvloop (``uvloop``)."""
    import asyncio

    if loop == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as r:
            r.run(coro)
    else:
        asyncio.run(coro)


def bare_aiohttp(base: str, bodies: list[dict], concurrency: int, loop: str | None = None) -> tuple[float, float]:
    """The floor: ``bodies`` POSTed by a bare aiohttp loop (semaphore, JSON decode) on asyncio's loop or
    ``loop="uvloop"``; (wall s, CPU s)."""
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
    _run_on(go(), loop)
    return time.perf_counter() - t0, time.process_time() - c0


def bare_direct(base: str, bodies: list[dict], concurrency: int) -> tuple[float, float]:
    """The lean path alone: ``bodies`` sent by :class:`DirectChat` (the default transport's client, answers
    decoded into objects) in a bare loop, no runner, no store; (wall s, CPU s). Its distance to the
    floor is the transport's own cost; the rest of a job's is the runner's."""
    import asyncio

    from automonitor.runs.monitors.openai_backend import DirectChat

    async def go() -> None:
        chat = DirectChat(base, "sk-local", 60.0)
        sem = asyncio.Semaphore(concurrency)

        async def one(body: dict) -> None:
            async with sem:
                await chat.post(body)

        try:
            await asyncio.gather(*(one(b) for b in bodies))
        finally:
            await chat.close()

    t0, c0 = time.perf_counter(), time.process_time()
    asyncio.run(go())
    return time.perf_counter() - t0, time.process_time() - c0


def _job(engine, base: str, concurrency: int, transport: str, loop: str | None = None) -> dict:
    """One full judge job on ``engine`` with ``--param transport=transport`` (on uvloop with
    ``loop="uvloop"``): wall s, CPU s, RSS growth."""
    import asyncio
    import gc

    from automonitor.runs import runner

    rid = runner.create_run(
        engine,
        "openai:bench-model",
        "direct",
        base_url=base,
        concurrency=concurrency,
        params={"timeout": 60, "transport": transport},
    )
    gc.collect()
    before = rss_mb()
    peak = [before]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mb())
            time.sleep(0.02)

    # the peak as the kernel keeps it (exact, and no thread of the benchmark's own in the job's CPU: a
    # sampler waking every 20 ms cost 0.025 ms a request at 3,010 x 200 ms, concurrency 64, while the floor
    # and the lean loop had none); a sampler thread only where the peak cannot be reset
    t = None if reset_peak_rss() else threading.Thread(target=sample, daemon=True)
    if t is not None:
        t.start()
    if loop == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        out = runner.execute_run(engine, rid)
    finally:
        asyncio.set_event_loop_policy(None)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    if t is None:
        peak[0] = rss_mb("VmHWM")
    else:
        stop.set()
        t.join()
    return {
        "seconds": dt,
        "cpu_s": cpu,
        "judged": sum(out["counts"].values()) - out["counts"]["error"],
        "api_calls": out["api_calls"],
        "rss_growth_mb": peak[0] - before,
    }


def child(
    n: int,
    concurrency: int,
    latency: float,
    db: str | None,
    rounds: int,
    transports: list[str],
    loops: list[str] | None = None,
) -> dict:
    """Fill a store with ``n`` samples, then ``rounds`` interleaved rounds of the floor and one judge
    job per transport (and per event loop of ``loops``, each on a fresh copy of the store); the
    per-round figures and their medians."""
    import shutil
    import statistics

    from servers.data import pair_rows
    from store import get_engine, init_db, session_scope
    from store.queries.samples import insert_samples

    tmp = tempfile.mkdtemp(prefix="bench_scale_")
    template, drop = f"{tmp}/template.db", None
    url = f"sqlite:///{template}"
    if db:
        from bench_runner import _fresh_pg_database

        url, drop = _fresh_pg_database(db)
    engine = init_db(get_engine(url, fresh=True))
    server = None
    load_before = os.getloadavg()
    try:
        pairs = (n + 1) // 2
        for off in range(0, pairs, 5000):
            rows = pair_rows(min(5000, pairs - off), "test", offset=off, prefix="scale")
            with session_scope(engine) as s:
                insert_samples(s, rows)
        if not db:
            engine.dispose()
        server = subprocess.Popen(
            [sys.executable, "-m", "servers.openai_fast", "--latency", str(latency)],
            cwd=str(REPO / "tests"),
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO / "tests")},
        )
        assert server.stdout is not None
        base = server.stdout.readline().strip()
        bodies = _bodies(n)
        per_round: list[dict] = []
        jobs = [(tr, lp) for tr in transports for lp in (loops or [None])]
        for k in range(rounds):
            order = jobs if k % 2 == 0 else list(reversed(jobs))
            fw, fc = bare_aiohttp(base, bodies, concurrency)
            r: dict = {"floor": {"seconds": fw, "cpu_s": fc}, "load_1m": os.getloadavg()[0]}
            if loops and "uvloop" in loops:
                uw, uc = bare_aiohttp(base, bodies, concurrency, "uvloop")
                r["floor_uvloop"] = {"seconds": uw, "cpu_s": uc}
            dw, dc = bare_direct(base, bodies, concurrency)
            r["lean_loop"] = {"seconds": dw, "cpu_s": dc}
            for tr, lp in order:
                name = tr if lp is None else f"{tr} on {lp}"
                if db:  # PostgreSQL: the same database, its cache emptied (no job reads another's answers)
                    import sqlalchemy as sa

                    with engine.begin() as c:
                        c.execute(sa.text("DELETE FROM cache_entry"))
                    eng = engine
                else:  # SQLite: a fresh copy of the filled store
                    path = f"{tmp}/{tr}-{lp}-{k}.db"
                    shutil.copyfile(template, path)
                    eng = init_db(get_engine(f"sqlite:///{path}", fresh=True))
                try:
                    r[name] = _job(eng, base, concurrency, tr, lp)
                finally:
                    if not db:
                        eng.dispose()
                        os.unlink(path)
            per_round.append(r)
        del bodies
    finally:
        if server is not None:
            server.kill()
            server.wait()
        engine.dispose()
        if drop:
            drop()
        shutil.rmtree(tmp, ignore_errors=True)
    med = statistics.median
    paths: dict[str, dict] = {
        "floor: bare aiohttp loop": {
            "seconds": round(med(r["floor"]["seconds"] for r in per_round), 2),
            "fraction_of_floor": 1.0,
            "cpu_ms_per_request": round(1000 * med(r["floor"]["cpu_s"] for r in per_round) / n, 3),
            "rss_growth_mb": None,
        }
    }
    if loops and "uvloop" in loops:
        paths["floor on uvloop"] = {
            "seconds": round(med(r["floor_uvloop"]["seconds"] for r in per_round), 2),
            "fraction_of_floor": round(med(r["floor"]["seconds"] / r["floor_uvloop"]["seconds"] for r in per_round), 3),
            "cpu_ms_per_request": round(1000 * med(r["floor_uvloop"]["cpu_s"] for r in per_round) / n, 3),
            "rss_growth_mb": None,
        }
    paths["DirectChat loop (lean path alone, no runner)"] = {
        "seconds": round(med(r["lean_loop"]["seconds"] for r in per_round), 2),
        "fraction_of_floor": round(med(r["floor"]["seconds"] / r["lean_loop"]["seconds"] for r in per_round), 3),
        "cpu_ms_per_request": round(1000 * med(r["lean_loop"]["cpu_s"] for r in per_round) / n, 3),
        "rss_growth_mb": None,
    }
    for tr, lp in jobs:
        name = tr if lp is None else f"{tr} on {lp}"
        paths[name] = {
            "seconds": round(med(r[name]["seconds"] for r in per_round), 2),
            "fraction_of_floor": round(med(r["floor"]["seconds"] / r[name]["seconds"] for r in per_round), 3),
            "cpu_ms_per_request": round(1000 * med(r[name]["cpu_s"] for r in per_round) / n, 3),
            "cpu_ms_per_request_rounds": [round(1000 * r[name]["cpu_s"] / n, 3) for r in per_round],
            "rss_growth_mb": round(max(r[name]["rss_growth_mb"] for r in per_round), 1),
            "judged": min(r[name]["judged"] for r in per_round),
            "api_calls": max(r[name]["api_calls"] for r in per_round),
        }
    return {
        "n": n,
        "concurrency": concurrency,
        "latency_s": latency,
        "ideal_s": round(n * latency / concurrency, 2),
        "store": "postgresql" if db else "sqlite",
        "rounds": rounds,
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "paths": paths,
        "per_round": per_round,
    }


def _case(text: str) -> tuple[int, int]:
    n, _, c = text.partition(":")
    return int(n), int(c or 256)


def main() -> int:
    """Run every case in its own child process and print one table per case (``--json``: one JSON
    document with every case)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="+", default=["3010:64", "20000:256"], help="N:CONCURRENCY (default: issue 38's)")
    ap.add_argument("--sizes", type=int, nargs="+", default=None, help="sizes N run at --concurrency (older form)")
    ap.add_argument("--concurrency", type=int, default=256, help="with --sizes")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--db", default=None)
    ap.add_argument(
        "--transports",
        nargs="+",
        default=["direct", "sdk"],
        choices=["direct", "sdk", "aiohttp", "httpx"],
        help="values of --param transport measured (default: the lean default and the SDK)",
    )
    ap.add_argument(
        "--loops",
        nargs="+",
        default=None,
        choices=["asyncio", "uvloop"],
        help="run each job on these event loops, interleaved (default: the runner's own choice, once)",
    )
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the tables")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        n, c = _case(a.child)
        print(json.dumps(child(n, c, a.latency, a.db, a.rounds, a.transports, a.loops)), flush=True)
        return 0
    results = []
    cases = [f"{n}:{a.concurrency}" for n in a.sizes] if a.sizes else a.cases
    for case in cases:
        n, c = _case(case)
        cmd = (
            [
                sys.executable,
                __file__,
                "--child",
                f"{n}:{c}",
                "--rounds",
                str(a.rounds),
                "--latency",
                str(a.latency),
                "--transports",
                *a.transports,
            ]
            + (["--db", a.db] if a.db else [])
            + (["--loops", *a.loops] if a.loops else [])
        )
        # the repository first, then whatever PYTHONPATH adds (e.g. a directory holding uvloop)
        path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
        p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path})
        if p.returncode != 0:
            print(p.stderr, file=sys.stderr)
            return 1
        r = json.loads(p.stdout.strip().splitlines()[-1])
        results.append(r)
        if a.json:
            continue
        lb, la = r["load_avg_before"], r["load_avg_after"]
        print(
            f"{r['store']} n={n} concurrency={c} latency={a.latency}s (ideal {r['ideal_s']} s), "
            f"{r['rounds']} interleaved rounds, medians; load average {lb[0]}/{lb[1]}/{lb[2]} before, "
            f"{la[0]}/{la[1]}/{la[2]} after",
            flush=True,
        )
        print("| path | wall s | fraction of the floor | CPU ms / request | RSS growth MB |")
        print("|---|---:|---:|---:|---:|")
        for name, f in r["paths"].items():
            tr, _, lp = name.partition(" on ")
            label = (
                (f"job, `transport={tr}`" + (" (default)" if tr == "direct" else "") + (f" on {lp}" if lp else ""))
                if tr in a.transports
                else name
            )
            growth = "-" if f["rss_growth_mb"] is None else f"{f['rss_growth_mb']:.0f}"
            print(
                f"| {label} | {f['seconds']:.2f} | {f['fraction_of_floor']:.3f} | {f['cpu_ms_per_request']:.3f} | {growth} |",
                flush=True,
            )
    if a.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
