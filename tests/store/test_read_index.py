"""The index a report's read of each run's verdicts is answered from (migration r14_prediction_read_index): on
SQLite the light read of :func:`store.queries.analysis.load_predictions` uses ``ix_prediction_read`` alone (no
row of the table looked up); PostgreSQL has no such index (``evidence`` is ``json``: as an index column it would
refuse a prediction whose evidence is over a third of a page), and a prediction with long evidence is stored and
read back whole on both; a downgrade to r13 drops the index and the upgrade makes it again."""

from __future__ import annotations

import random
import string

import sqlalchemy as sa

from store import init_db, session_scope
from store.models import Monitor, Prediction, Run
from store.queries.analysis import load_predictions, run_verdicts_query

from helpers import store_sample

INDEX = "ix_prediction_read"


def _indexes(engine) -> set[str]:
    return {ix["name"] for ix in sa.inspect(engine).get_indexes("prediction")}


def test_a_reports_read_of_a_run_is_answered_from_the_read_index_on_sqlite_only(engine):
    sqlite = engine.dialect.name == "sqlite"
    rng = random.Random(0)
    long_quote = "".join(rng.choice(string.ascii_letters) for _ in range(12_000))  # incompressible
    with session_scope(engine) as s:
        s.add_all([store_sample(i) for i in range(3)])
        m = Monitor(name="judge", backend="external")
        s.add(m)
        s.flush()
        s.add(Run(id="r1", monitor_id=m.id, monitor="judge", template="evidence", status="finished"))
        s.flush()
        s.add_all(
            [
                Prediction(run_id="r1", sample_id="s2", outcome="misbehavior", score=0.75, evidence=[long_quote, "x"]),
                Prediction(run_id="r1", sample_id="s0", outcome="benign", score=0.25),
                Prediction(run_id="r1", sample_id="s1", outcome="benign", repeat=1),
            ]
        )
    assert (INDEX in _indexes(engine)) is sqlite
    df = load_predictions(engine, ["r1"], light=True)
    assert df["sample_id"].tolist() == ["s0", "s2"]
    assert df["evidence"].tolist() == [[], [long_quote, "x"]]
    if sqlite:
        _, q = run_verdicts_query(light=True)
        compiled = q.compile(dialect=engine.dialect)
        args = tuple({**compiled.params, "run_id": "r1"}[k] for k in compiled.positiontup or ())
        with engine.connect() as c:
            plan = " | ".join(r[-1] for r in c.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled.string}", args))
        assert f"USING COVERING INDEX {INDEX} (run_id=? AND repeat=?)" in plan, plan
        assert "TEMP B-TREE" not in plan, plan  # in sample id order as read: no sort

    from alembic import command

    from store.engine import alembic_config

    command.downgrade(alembic_config(engine), "r13_run_token_totals_bigint")
    assert INDEX not in _indexes(engine)
    init_db(engine)
    assert (INDEX in _indexes(engine)) is sqlite
    assert load_predictions(engine, ["r1"], light=True)["evidence"].tolist() == [[], [long_quote, "x"]]
