"""The store writer thread of an execution: group commit with bounded latency, rows stored as given.

A kill can only lose what is queued and not yet committed (the unflushed group); ``test_runner_kill``
kills a real process between groups and resumes it. Here: every queued result is committed within the
writer's interval without a close (what a kill may lose is bounded), a burst is grouped into few
transactions, a committed verdict is never overwritten, and prediction and cache rows read back exactly
as queued (SQLite and PostgreSQL).
"""

from __future__ import annotations

import copy
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlmodel import Session, select

from automonitor.runs import runner
from automonitor.runs.monitors import Judgement
from automonitor.runs.runner.writer import ResultWriter
from automonitor.runs.verdicts import cache_entry, judged_prediction
from automonitor.vocab import VERDICT_FIELDS
from servers.data import add_pairs
from store.models import CacheEntry, Prediction, Run
from store.queries import table_of


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


def test_driver_level_writes_store_exactly_what_a_core_statement_stores(engine):
    """``update_predictions`` / ``cache_insert`` bind tuples at the driver level: the stored text of every
    column (JSON, datetimes, booleans, floats) equals a Core statement's for the same rows, and a column
    one row lacks is written as NULL in it."""
    from store.queries import runs as q

    add_pairs(engine, 3)  # 6 samples
    rids = [runner.create_run(engine, "rules", "direct") for _ in range(2)]
    assert rids[0] != rids[1]
    with Session(engine) as s:
        pids = [sorted(p.id for p in s.exec(select(Prediction).where(Prediction.run_id == rid))) for rid in rids]
    rows = []
    for pid0, pid1 in zip(pids[0], pids[1]):
        a, ca = _rows([pid0])[0]
        a["meta"]["history"] = [{"outcome": "error", "note": '\u00e9\n"x"'}]
        b, cb = copy.deepcopy(a), copy.deepcopy(ca)
        b["id"], cb["key"] = pid1, "b" + ca["key"][1:]
        rows.append((a, ca, b, cb))
    del rows[-1][0]["reason"], rows[-1][2]["reason"]  # a row lacking a column: NULL there
    t, ct = table_of(Prediction), table_of(CacheEntry)
    with Session(engine) as s:
        q.update_predictions(s, [r[0] for r in rows])
        q.cache_insert(s, [r[1] for r in rows])
        keys = sorted({k for r in rows for k in r[2] if k != "id"})
        s.connection().execute(
            sa.update(t).where(t.c.id == sa.bindparam("_id")).values({k: sa.bindparam("_" + k) for k in keys}),
            [{"_id": r[2]["id"], **{"_" + k: r[2].get(k) for k in keys}} for r in rows],
        )
        s.connection().execute(sa.insert(ct), [r[3] for r in rows])
        s.commit()
    cols = "outcome, score, raw, reason, CAST(evidence AS TEXT), tokens_in, cost_usd, latency_ms, cached, CAST(meta AS TEXT)"
    with engine.connect() as c:
        got = [
            c.execute(
                sa.text(f"SELECT {cols}, CAST(judged_at AS TEXT) FROM prediction WHERE run_id = :r ORDER BY sample_id"),
                {"r": rid},
            ).all()
            for rid in rids
        ]
        cache = [
            c.execute(
                sa.text(
                    f"SELECT {cols.replace('latency_ms, cached, ', '')}, CAST(created_at AS TEXT) FROM cache_entry WHERE key LIKE :p ORDER BY key"
                ),
                {"p": p + "%"},
            ).all()
            for p in ("0", "b")
        ]
    assert got[0] == got[1] and len(got[0]) == 6
    assert got[0][-1][3] is None and got[0][0][3] == "parsed"
    assert cache[0] == cache[1] and len(cache[0]) == 6


@settings(max_examples=300, deadline=None)
@given(
    st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.sampled_from([timezone.utc])
    )
)
def test_sqlite_datetime_fast_path_formats_as_sqlalchemy(value):
    """The writer's SQLite datetime bind (one ``isoformat`` for an aware UTC value) gives the text of the
    column type's own processor (sqlmodel's UTC check and conversion, then SQLite's storage format) for any
    UTC datetime, and other values (another zone, ``None``) still go through the type's processor."""
    from sqlalchemy.dialects import sqlite

    from store.queries import runs as q

    dialect = sqlite.dialect()
    column = table_of(Prediction).c.judged_at
    own = column.type.dialect_impl(dialect).bind_processor(dialect)
    fast = q._bind_processor(column, dialect)
    assert fast is not own and own is not None
    assert fast(value) == own(value)
    east = value.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert fast(east) == own(east) == own(value)
    assert fast(None) is None
