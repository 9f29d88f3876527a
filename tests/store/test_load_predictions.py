"""``store.queries.analysis.load_predictions`` (what every report reads) against the inner join of the prediction
rows with their runs and samples that it stands for, on SQLite and PostgreSQL: the same rows in the same order
(run id, then sample id), the same values and types, repeat 0 only, for named runs in any order, all runs and
none, light and full."""

from __future__ import annotations

import pandas as pd
import sqlalchemy as sa
from servers.data import add_pairs
from sqlmodel import SQLModel

from store import session_scope
from store.models import Monitor, Prediction, Run
from store.queries.analysis import LIGHT_COLUMNS, PREDICTION_COLUMNS, load_predictions


def _seed(engine) -> list[str]:
    """Three runs (ids out of creation order) judging overlapping samples, with evidence, scores, reasons, a
    pending prediction and a repeat-1 row; returns the run ids in creation order."""
    rows = add_pairs(engine, 3)
    ids = [r["id"] for r in rows]
    runs = ["rb", "ra", "rc"]
    with session_scope(engine) as s:
        m = Monitor(name="rules", backend="rules")
        s.add(m)
        s.flush()
        for k, rid in enumerate(runs):
            s.add(Run(id=rid, monitor_id=m.id, monitor=f"m{k}", template="evidence" if k else "direct",
                      kind="measured", status="finished"))  # fmt: skip
        s.flush()
        for k, rid in enumerate(runs):
            for i, sid in enumerate(reversed(ids[k:])):  # inserted out of sample order
                outcome = None if (rid, i) == ("rc", 0) else ("misbehavior", "benign", "invalid")[(i + k) % 3]
                s.add(Prediction(run_id=rid, sample_id=sid, outcome=outcome, score=(0.125 * i if k != 1 else None),
                                 evidence=[f"quote {i}", {"quote": "q"}] if i % 2 else [], raw=f"raw {i}",
                                 reason="contradictory" if i == 1 else None, pred_category="c" if k else None,
                                 severity="high" if i == 2 else None))  # fmt: skip
        s.add(Prediction(run_id="ra", sample_id=ids[0], outcome="benign", repeat=1))
    return runs


def _joined(engine, run_ids, light):
    """The inner join, ordered by run and sample id: the reference."""
    meta = SQLModel.metadata.tables
    p, r, smp = meta["prediction"], meta["run"], meta["sample"]
    cols = {
        "run_id": p.c.run_id,
        "monitor": r.c.monitor,
        "template": r.c.template,
        "kind": r.c.kind,
        "sample_id": p.c.sample_id,
        **{n: smp.c[n] for n in ("pair_id", "category", "task", "label")},
        **{n: p.c[n] for n in ("outcome", "score", "evidence", "raw", "reason", "pred_category", "severity")},
    }
    names = LIGHT_COLUMNS if light else PREDICTION_COLUMNS
    q = (
        sa.select(*(cols[n] for n in names))
        .join(r, r.c.id == p.c.run_id)
        .join(smp, smp.c.id == p.c.sample_id)
        .where(p.c.repeat == 0)
        .order_by(p.c.run_id, p.c.sample_id)
    )
    if run_ids is not None:
        q = q.where(p.c.run_id.in_(run_ids))
    with engine.connect() as c:
        rows = c.execute(q).all()
    df = pd.DataFrame({n: pd.Series([row[i] for row in rows], dtype=object) for i, n in enumerate(names)})
    df["score"] = pd.to_numeric(df["score"], errors="coerce").astype(float)
    df["evidence"] = [list(v) if v else [] for v in df["evidence"]]
    return df


def test_load_predictions_is_the_inner_join_ordered_by_run_and_sample(engine):
    runs = _seed(engine)
    for run_ids in (None, runs, ["rc", "rb"], [], ["ra", "ra"]):
        for light in (True, False):
            got = load_predictions(engine, run_ids, light=light)
            want = _joined(engine, run_ids, light)
            pd.testing.assert_frame_equal(got, want, check_exact=True)
            for col in got.columns:
                assert [type(v) for v in got[col]] == [type(v) for v in want[col]], (run_ids, light, col)
    everything = load_predictions(engine, None, light=True)
    assert list(dict.fromkeys(everything["run_id"])) == ["ra", "rb", "rc"] and len(everything) == 6 + 5 + 4
    assert everything["outcome"].isna().sum() == 1  # the pending prediction is kept


def test_a_prediction_whose_sample_is_not_in_the_store_is_left_out(sqlite_engine):
    """As the inner join leaves it out (SQLite without foreign keys enforced on that connection)."""
    runs = _seed(sqlite_engine)
    with sqlite_engine.connect() as c:
        c.exec_driver_sql("PRAGMA foreign_keys=OFF")
        c.exec_driver_sql(
            "INSERT INTO prediction (run_id, sample_id, outcome, evidence, tokens_in, tokens_out, cost_usd, cached,"
            " meta, created_at, repeat) VALUES ('rb', 'zz-gone', 'benign', '[]', 0, 0, 0, 0, '{}',"
            " '2026-12-06 00:00:00', 0)"
        )
        c.commit()
    got = load_predictions(sqlite_engine, runs, light=True)
    assert "zz-gone" not in set(got["sample_id"]) and len(got) == 15
    pd.testing.assert_frame_equal(got, _joined(sqlite_engine, runs, True), check_exact=True)
