"""The runner's store writer alone: CPU per result of ``ResultWriter._write`` (prediction update, cache
insert, run counters), the part of a judge job that runs on the writer thread.

Fills a store with N pending predictions (one ``create_run``), builds N judged rows and their cache rows
as the workers do (``judged_prediction`` / ``cache_entry`` of a typical verdict with a few evidence quotes
and the usual ``meta``), then commits them in groups of ``--group`` (the group commit at concurrency 64
gives ~25 results per commit) and reports the writer's CPU per result (process time of the loop / N),
median of ``--rounds`` fresh runs, with the load average. SQLite file by default, PostgreSQL with --db.

Usage: python benchmarks/bench_writer.py [--n 3010] [--group 25] [--rounds 5] [--db postgresql+psycopg://127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))


def one_round(engine, n_group: int) -> tuple[float, int]:
    """One run's results written in groups of ``n_group``: (writer CPU seconds, results committed)."""
    import sqlalchemy as sa

    from automonitor.runs import runner
    from automonitor.runs.monitors import Judgement
    from automonitor.runs.runner.writer import ResultWriter
    from automonitor.runs.verdicts import cache_entry, judged_prediction

    rid = runner.create_run(
        engine, "openai:bench-model", "direct", base_url="http://127.0.0.1:9", params={"timeout": 60}
    )
    with engine.connect() as c:
        pids = [r[0] for r in c.execute(sa.text("SELECT id FROM prediction WHERE run_id = :r ORDER BY id"), {"r": rid})]
    entries = []
    for i, pid in enumerate(pids):
        j = Judgement(
            outcome="misbehavior" if i % 3 else "benign",
            score=0.8,
            raw="Yes. The agent deleted the logs to hide its tracks.",
            reason="parsed: Yes",
            evidence=["deleted the logs", f"rm -rf /var/log/{i}"],
            tokens_in=812,
            tokens_out=14,
            cost_usd=0.00021,
            meta={"finish_reason": "stop", "model": "bench-model", "structured": "none", "request_id": f"req-{i:06d}"},
        )
        key = f"{i:064x}"
        row = judged_prediction(pid, key, j, attempts=1, latency_ms=201.5, history=None)
        entries.append((row, cache_entry(key, row, j.meta), 1, False))
    w = ResultWriter(engine, rid)
    c0 = time.process_time()
    for off in range(0, len(entries), n_group):
        w._write(entries[off : off + n_group])
    cpu = time.process_time() - c0
    w._release()  # the writer's own connection (run() returns it when the thread ends)
    return cpu, w.committed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=3010)
    ap.add_argument("--group", type=int, default=25)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--db", default=None)
    a = ap.parse_args()

    from servers.data import pair_rows
    from store import get_engine, init_db, session_scope
    from store.queries.samples import insert_samples

    drop = None
    tmp = tempfile.mkdtemp(prefix="bench_writer_")
    url = f"sqlite:///{tmp}/w.db"
    if a.db:
        from bench_runner import _fresh_pg_database

        url, drop = _fresh_pg_database(a.db)
    load_before = os.getloadavg()
    engine = init_db(get_engine(url, fresh=True))
    try:
        with session_scope(engine) as s:
            insert_samples(s, pair_rows((a.n + 1) // 2, "test", prefix="writer"))
        cpu = []
        for _ in range(a.rounds):
            sec, done = one_round(engine, a.group)
            assert done == a.n, (done, a.n)
            cpu.append(sec)
    finally:
        engine.dispose()
        if drop:
            drop()
    print(
        json.dumps(
            {
                "store": "postgresql" if a.db else "sqlite",
                "n": a.n,
                "group": a.group,
                "writer_cpu_ms_per_result": round(1000 * statistics.median(cpu) / a.n, 4),
                "rounds_ms_per_result": [round(1000 * c / a.n, 4) for c in cpu],
                "load_avg_before": [round(x, 2) for x in load_before],
                "load_avg_after": [round(x, 2) for x in os.getloadavg()],
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
