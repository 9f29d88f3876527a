"""The store writer thread of an execution: group commit with bounded latency, rows stored as given.

A kill can only lose what is queued and not yet committed (the unflushed group); ``test_runner_kill``
kills a real process between groups and resumes it. Here: every queued result is committed within the
writer's interval without a close (what a kill may lose is bounded), a burst is grouped into few
transactions, a committed verdict is never overwritten, and prediction and cache rows read back exactly
as queued (SQLite and PostgreSQL).
"""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, select

from automonitor.runs import runner
from automonitor.runs.monitors import Judgement
from automonitor.runs.runner.writer import ResultWriter
from automonitor.runs.verdicts import cache_entry, judged_prediction
from automonitor.vocab import VERDICT_FIELDS
from servers.data import add_pairs
from store.models import CacheEntry, Prediction, Run


def _rows(pids: list[int], outcome: str = "benign") -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for i, pid in enumerate(pids):
        j = Judgement(
            outcome,  # type: ignore[arg-type]
            score=0.25 + i / 1000,
            raw=f'No {i} \u2014 "quoted"',
            reason="parsed",
            evidence=[f"span {i}"],
            tokens_in=100 + i,
            tokens_out=1,
            cost_usd=1e-6 * i,
            meta={"n": i, "nested": {"a": [1, 2]}},
        )
        row = judged_prediction(pid, f"{pid:064x}", j, attempts=1, latency_ms=12.3456789, history=None)
        out.append((row, cache_entry(f"{pid:064x}", row, j.meta)))
    return out


def _committed(engine, rid: str) -> dict[int, Prediction]:
    with Session(engine) as s:
        preds = s.exec(select(Prediction).where(Prediction.run_id == rid))
        return {int(p.id or 0): p for p in preds if p.outcome is not None}


def test_writer_groups_commits_with_bounded_latency_and_stores_rows_as_queued(engine):
    add_pairs(engine, 30)  # 60 samples
    rid = runner.create_run(engine, "rules", "direct")
    with Session(engine) as s:
        pids = sorted(p.id for p in s.exec(select(Prediction).where(Prediction.run_id == rid)))
    assert len(pids) == 60
    rows = _rows(pids[:50])
    w = ResultWriter(engine, rid)
    w.start()
    try:
        t0 = time.monotonic()
        for row, cache in rows:
            w.put_calls(1)
            w.put(row, cache, 0, False)
        # committed without a close, within the interval and a commit: a kill loses at most this window
        while len(_committed(engine, rid)) < 50 and time.monotonic() - t0 < 5:
            time.sleep(0.01)
        assert len(_committed(engine, rid)) == 50
        assert time.monotonic() - t0 < 2 * w.min_interval + 1.0
        assert w.commits <= 4  # a burst of 100 entries is a few transactions, not 100
        # a result for an already committed prediction never overwrites it
        again = _rows(pids[:1], outcome="misbehavior")[0]
        w.put(again[0], None, 0, False)
    finally:
        w.close()
    assert w.committed == 51
    got = _committed(engine, rid)
    assert set(got) == set(pids[:50])
    for row, _ in rows:
        p = got[row["id"]]
        for f in (*VERDICT_FIELDS, "latency_ms", "cached", "meta"):
            assert getattr(p, f) == row[f], f
    assert got[pids[0]].outcome == "benign"
    with Session(engine) as s:
        assert s.get(Run, rid).api_calls == 50
        cached = {c.key: c for c in s.exec(select(CacheEntry))}
    assert len(cached) == 50
    for _, cache in rows:
        c = cached[cache["key"]]
        for f in (*VERDICT_FIELDS, "meta"):
            assert getattr(c, f) == cache[f], f
        assert c.created_at.replace(tzinfo=None) == cache["created_at"].replace(tzinfo=None)
    # the cache insert ignores keys already present (a concurrent run's), in one statement per column set
    w2 = ResultWriter(engine, rid)
    w2.start()
    w2.put(None, {**rows[0][1], "outcome": "misbehavior"}, 0, False)  # type: ignore[arg-type]
    w2.close()
    with engine.connect() as c:
        assert c.execute(sa.text("select count(*) from cache_entry")).scalar() == 50
        assert (
            c.execute(sa.text("select outcome from cache_entry where key = :k"), {"k": rows[0][1]["key"]}).scalar()
            == "benign"
        )
