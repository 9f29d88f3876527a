"""Runner overhead: achieved vs ideal throughput against a loopback OpenAI-compatible endpoint.

The endpoint (tests/servers/openai_fast.py: one asyncio loop, in its own process) answers every request after a fixed
latency (200 ms). 3,010 samples are judged at concurrency 64 through the real ``openai`` SDK backend,
with every verdict committed to a SQLite store. Ideal throughput is concurrency / latency (320/s, i.e.
9.4 s for 3,010); the goal is at least 0.95 of it. For reference the same 3,010 requests are also sent
by a bare asyncio loop calling the SDK with a semaphore of 64 (no runner, no store, no parsing): the
ratio runner / bare isolates the runner's own overhead from the SDK's and the machine's. Then the same
configuration is run again as a new run: every verdict comes from the content-addressed cache (goal:
under 2 s, zero API calls).

Usage: python benchmarks/bench_runner.py [--n 3010] [--concurrency 64] [--latency 0.2]
       [--db postgresql://127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3010)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument(
        "--db",
        default=None,
        help="a PostgreSQL server URL: a fresh database is created on it and dropped afterwards "
        "(default: a fresh SQLite file)",
    )
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench_runner_")
    url, drop = f"sqlite:///{tmp}/bench.db", None
    if a.db:
        url, drop = _fresh_pg_database(a.db)
    try:
        return _bench(a, url)
    finally:
        if drop:
            drop()


def _fresh_pg_database(server_url: str):
    """Create an empty database on the server of ``server_url``; returns (its URL, a drop function)."""
    import secrets

    import sqlalchemy as sa

    from store import db_url

    admin = sa.create_engine(db_url(server_url), isolation_level="AUTOCOMMIT")
    name = f"bench_runner_{secrets.token_hex(4)}"
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        from store.engine import engines

        for key in [k for k in engines if k.endswith("/" + name)]:
            engines.pop(key).dispose()
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return db_url(server_url).rsplit("/", 1)[0] + "/" + name, drop


def _bench(a, url: str) -> int:
    from automonitor.runs import runner
    from servers.data import pair_rows
    from store import get_engine, init_db, session_scope
    from store.queries.samples import insert_samples

    engine = init_db(get_engine(url, fresh=True))
    rows = pair_rows((a.n + 1) // 2, "test", prefix="bench")[: a.n]
    with session_scope(engine) as s:
        insert_samples(s, rows)

    server = subprocess.Popen(
        [sys.executable, "-m", "servers.openai_fast", "--latency", str(a.latency)],
        cwd=str(REPO / "tests"),
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "tests")},
    )
    try:
        base = server.stdout.readline().strip()
        bare_dt, bare_cpu = _bare_sdk(base, rows, a.concurrency)
        rid = runner.create_run(
            engine, "openai:bench-model", "direct", base_url=base, concurrency=a.concurrency, params={"timeout": 30}
        )
        t0, c0 = time.perf_counter(), time.process_time()
        out = runner.execute_run(engine, rid)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        ideal_rate = a.concurrency / a.latency
        ideal_time = a.n / ideal_rate
        achieved = a.n / dt
        t1 = time.perf_counter()
        rid2 = runner.create_run(
            engine, "openai:bench-model", "direct", base_url=base, concurrency=a.concurrency, params={"timeout": 30}
        )
        out2 = runner.execute_run(engine, rid2)
        dt2 = time.perf_counter() - t1
        t2 = time.perf_counter()
        out3 = runner.execute_run(engine, rid2)
        dt3 = time.perf_counter() - t2
    finally:
        server.kill()
        server.wait()
        engine.dispose()
    judged = sum(out["counts"].values())
    print(
        f"store: {engine.url.get_backend_name()}  samples: {a.n}  concurrency: {a.concurrency}  latency: {a.latency * 1000:.0f} ms"
    )
    print(f"first run: {dt:.2f} s for {judged} samples, {out['api_calls']} API calls")
    print(
        f"  achieved {achieved:.1f} samples/s vs ideal {ideal_rate:.1f}/s ({ideal_time:.2f} s): "
        f"ratio {achieved / ideal_rate:.3f} (goal >= 0.95)"
    )
    print(f"  client CPU {cpu:.2f} s ({cpu / a.n * 1000:.2f} ms/sample, all threads incl. the store writer)")
    print(
        f"bare SDK loop (no runner/store): {bare_dt:.2f} s, {a.n / bare_dt:.1f}/s, ratio to ideal "
        f"{a.n / bare_dt / ideal_rate:.3f}, CPU {bare_cpu / a.n * 1000:.2f} ms/request"
    )
    print(f"  runner / bare SDK throughput: {bare_dt / dt:.3f}")
    print(
        f"cached rerun (new run, create + execute): {dt2:.2f} s, api_calls={out2['api_calls']}, "
        f"cache_hits={out2['cache_hits']} (goal < 2 s, 0 calls)"
    )
    print(f"resume of the finished run: {dt3:.3f} s, api_calls={out3['api_calls']}")
    return 0


def _bare_sdk(base: str, rows: list[dict], concurrency: int) -> tuple[float, float]:
    """The same chat requests through the SDK in a bare asyncio loop; returns (wall s, CPU s)."""
    import asyncio

    import openai
    from openai.types.chat import ChatCompletion

    from automonitor.runs.prompts import PromptBuilder, load_template

    b = PromptBuilder(load_template("direct"))
    bodies = []
    for r in rows:
        system, user, _ = b.chat_messages(r["request"], r["response"])
        bodies.append(
            {
                "model": "bench-model",
                "temperature": 0,
                "seed": 0,
                "max_tokens": 16,
                "logprobs": True,
                "top_logprobs": 5,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user + " (bare)"}],
            }
        )

    async def go() -> None:
        client = openai.AsyncOpenAI(api_key="sk-local", base_url=base, max_retries=0)
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int, body: dict) -> None:
            async with sem:
                await client.post(
                    "/chat/completions", body=body, cast_to=ChatCompletion, options={"idempotency_key": f"bare-{i}"}
                )

        await asyncio.gather(*(one(i, bd) for i, bd in enumerate(bodies)))
        await client.close()

    t0, c0 = time.perf_counter(), time.process_time()
    asyncio.run(go())
    return time.perf_counter() - t0, time.process_time() - c0


if __name__ == "__main__":
    sys.exit(main())
