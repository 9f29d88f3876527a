"""The light Core views of :mod:`store.tables` against the models' tables, and the run list read through them
(``store.queries.run_list.list_runs``, what ``automonitor runs --json`` prints) on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import sqlalchemy as sa
from servers.data import add_pairs
from store import session_scope, tables
from sqlmodel import SQLModel

from store.models import Monitor, Prediction, Run
from store.queries.documents import write_document
from store.queries.run_list import list_runs


def test_every_light_column_is_a_model_column_of_that_name_and_kind_of_type():
    """A view names its table and columns as the model does, each with a type of the same kind (``run``: every
    column of the model)."""
    views = [getattr(tables, name) for name in tables.__all__ if name != "UTCDateTime"]
    assert len(views) == 10
    for view in views:
        model = SQLModel.metadata.tables[view.name]
        for c in view.c:
            assert c.name in model.c, f"{view.name}.{c.name} is no column of the model"
            assert c.type._type_affinity is model.c[c.name].type._type_affinity, (view.name, c.name, c.type)
    for full in (tables.run, tables.derived_document):
        assert [c.name for c in full.c] == [c.name for c in SQLModel.metadata.tables[full.name].c]


def _values(rows) -> list[tuple]:
    """Rows as comparable tuples: a timestamp with its UTC offset (equal instants in two zones differ)."""
    return [tuple((v, v.utcoffset()) if isinstance(v, datetime) else v for v in r) for r in rows]


def test_a_view_reads_every_value_as_the_model_table_does(engine):
    """The same rows through a view and through the model's table: equal values of equal types, timestamps
    aware UTC (on PostgreSQL also when the connection's time zone is another)."""
    _seed(engine)
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            conn.exec_driver_sql("SET TIME ZONE 'Asia/Kolkata'")
        for view in (tables.run, tables.prediction, tables.derived_document):
            model = SQLModel.metadata.tables[view.name]
            key = view.c[next(iter(model.primary_key)).name]
            light = conn.execute(sa.select(view).order_by(key)).all()
            full = conn.execute(sa.select(*(model.c[c.name] for c in view.c)).order_by(model.c[key.name])).all()
            assert len(light) >= (1 if view is tables.derived_document else 3) and _values(light) == _values(full)
            assert [tuple(map(type, r)) for r in light] == [tuple(map(type, r)) for r in full]
    with engine.connect() as conn:
        (stamp,) = conn.execute(sa.select(tables.run.c.finished_at).where(tables.run.c.id == "r-full")).one()
    assert stamp == datetime(2026, 12, 5, 10, 0, 13, 250_000, tzinfo=timezone.utc) and stamp.utcoffset() == timedelta(0)


def _seed(engine) -> None:
    """A run with every field the list reads set, one with none, and a ladder run, on two pairs."""
    rows = add_pairs(engine, 2)
    ids = [r["id"] for r in rows]
    start = datetime(2026, 12, 5, 10, 0, 0, tzinfo=timezone.utc)
    with session_scope(engine) as s:
        m = Monitor(name="rules", backend="rules")
        s.add(m)
        s.flush()
        s.add(
            Run(
                id="r-full",
                monitor_id=m.id,
                monitor="openai:gpt-x",
                template="evidence",
                template_hash="h" * 64,
                status="finished",
                kind="measured",
                edition="verified",
                archived=True,
                n=4,
                api_calls=3,
                cache_hits=1,
                tokens_in=999,  # the listed sums are over the judged predictions, not these totals
                tokens_out=999,
                cost_usd=9.0,
                error="one error",
                params={
                    "view": "answer",
                    "price": {"price_known": False},
                    "config": {"parse": "lenient", "score_method": "logprob"},
                    "judge": {"repeat": 2},
                    "controls": 1,
                    "limit": 4,
                    "base_url": "http://127.0.0.1:9/v1",
                    "lease": {"pid": 1, "host": "h", "heartbeat": 0.0},
                },
                created_at=start,
                started_at=start + timedelta(seconds=1),
                finished_at=start + timedelta(seconds=13, microseconds=250_000),
            )
        )
        s.add(
            Run(
                id="r-new",
                monitor_id=m.id,
                monitor="rules",
                template="direct",
                n=2,
                tokens_in=5,
                tokens_out=6,
                cost_usd=0.5,
                created_at=start + timedelta(hours=1),
            )  # fmt: skip
        )
        s.add(Run(id="r-ladder", monitor_id=m.id, monitor="ladder:x", template="direct", kind="ladder",
                  created_at=start + timedelta(hours=2)))  # fmt: skip
        s.flush()
        for i, (sid, outcome, rep) in enumerate(
            [
                (ids[0], "misbehavior", 0),
                (ids[0], "benign", 1),
                (ids[1], "error", 0),
                (ids[2], None, 0),
                (ids[2], None, 1),
            ]
        ):
            s.add(Prediction(run_id="r-full", sample_id=sid, outcome=outcome, repeat=rep, tokens_in=10 * (i + 1),
                             tokens_out=i, cost_usd=0.001 * (i + 1)))  # fmt: skip
        # the analysis' columns (the report reads them through the view), set on one more prediction
        s.add(Prediction(run_id="r-ladder", sample_id=ids[0], outcome="invalid", score=0.75, raw='{"flag": 1}',
                         reason="contradictory", evidence=["a quote", {"quote": "b"}], pred_category="sabotage",
                         severity="high", meta={"error_kind": "timeout", "status": 504}, latency_ms=12.5,
                         cached=True))  # fmt: skip
        write_document(s, "audit:paper", "f" * 64, '{"doc": 1}')


def test_the_run_list_reads_every_field_through_a_connection_or_a_session(engine):
    _seed(engine)
    with engine.connect() as conn:
        by_conn = list_runs(conn)
        with_ladder = list_runs(conn, include_ladder=True)
    with session_scope(engine) as s:
        by_session = list_runs(s)
        assert s.get(Run, "r-full").archived is True  # the ORM reads the same row
    assert by_conn == by_session
    assert [r["run_id"] for r in by_conn] == ["r-new", "r-full"]  # newest first, the ladder's left out
    assert [r["run_id"] for r in with_ladder] == ["r-ladder", "r-new", "r-full"]
    new, full = by_conn
    assert full == {
        "run_id": "r-full",
        "monitor": "openai:gpt-x",
        "template": "evidence",
        "template_hash": "h" * 64,
        "status": "finished",
        "kind": "measured",
        "n": 4,
        "edition": "verified",
        "view": "answer",
        "archived": True,
        # repeat 0 verdicts, and every pending prediction (repeat 1 too)
        "counts": {"misbehavior": 1, "benign": 0, "invalid": 0, "refusal": 0, "error": 1, "pending": 2},
        "api_calls": 3,
        "cache_hits": 1,
        "tokens_in": 10 + 20 + 30,  # the judged predictions of every repeat
        "tokens_out": 0 + 1 + 2,
        "cost_usd": 0.006,
        "price_known": False,
        "duration_s": 12.25,
        "base_url": "http://127.0.0.1:9/v1",
        "parse": "lenient",
        "score_method": "logprob",
        "limit": 4,
        "controls": 1,
        "repeat": 2,
        "created_at": datetime(2026, 12, 5, 10, 0, tzinfo=timezone.utc).isoformat(),
        "started_at": "2026-12-05T10:00:01+00:00",
        "finished_at": "2026-12-05T10:00:13.250000+00:00",
        "error": "one error",
        "lease": {"pid": 1, "host": "h", "heartbeat": 0.0},
    }
    # nothing judged: the run's own totals, zero counts, the defaults of a run without parameters
    assert (new["tokens_in"], new["tokens_out"], new["cost_usd"]) == (5, 6, 0.5)
    assert new["counts"] == dict.fromkeys(("misbehavior", "benign", "invalid", "refusal", "error", "pending"), 0)
    assert (new["view"], new["archived"], new["price_known"], new["repeat"], new["controls"]) == (
        "full",
        False,
        True,
        1,
        0,
    )
    assert new["duration_s"] is None and new["started_at"] is None and new["lease"] is None


def test_verdict_counts_of_several_runs_are_each_runs_outcome_counts(engine):
    """``verdict_counts`` (one grouped query, what the report's answer quality reads) gives each run the counts
    ``outcome_counts`` gives it alone: repeat 0's outcomes, the pending rows of every repeat, zeros for a run
    without predictions; through a connection or a session; with more ids than an ``IN`` list takes."""
    from store.queries import run_list
    from store.queries.runs import outcome_counts

    _seed(engine)
    ids = ["r-full", "r-new", "r-ladder"]
    with session_scope(engine) as s:
        alone = {rid: outcome_counts(s, rid) for rid in ids}
        assert run_list.verdict_counts(s, ids) == alone
        many = [*ids, *(f"absent-{i}" for i in range(run_list._IN_LIST_MAX))]
        assert {k: v for k, v in run_list.verdict_counts(s, many).items() if k in alone} == alone
    with engine.connect() as conn:
        assert run_list.verdict_counts(conn, ids[:1]) == {"r-full": alone["r-full"]}
    assert alone["r-full"]["misbehavior"] == 1 and alone["r-full"]["benign"] == 0  # the repeat-1 verdict not counted
    assert alone["r-full"]["error"] == 1 and alone["r-full"]["pending"] == 2
    assert set(alone["r-new"].values()) == {0}


def test_judged_outcome_counts_are_the_verdict_counts_judged_errors_and_invalid(engine):
    """``judged_outcome_counts`` (what the report's answer quality reads, from the indexes) gives each run the
    judged count (its verdict counts but pending, summed), the errors and the invalid answers of ``verdict_counts``: repeat 0 only
    (a later repeat's verdict and pending rows of every repeat left out), zeros for a run without predictions,
    through a connection or a session, with more ids than an ``IN`` list takes and an id named twice."""
    from store.queries import run_list

    _seed(engine)
    ids = ["r-full", "r-new", "r-ladder"]
    with session_scope(engine) as s:
        counts = run_list.verdict_counts(s, ids)
        want = {
            r: (sum(n for o, n in c.items() if o != "pending"), c["error"], c["invalid"]) for r, c in counts.items()
        }
        assert want == {"r-full": (2, 1, 0), "r-new": (0, 0, 0), "r-ladder": (1, 0, 1)}
        assert run_list.judged_outcome_counts(s, ids) == want
        many = [*ids, *(f"absent-{i}" for i in range(run_list._IN_LIST_MAX))]
        assert {k: v for k, v in run_list.judged_outcome_counts(s, many).items() if k in want} == want
    with engine.connect() as conn:
        assert run_list.judged_outcome_counts(conn, ["r-full", "r-full"]) == {"r-full": (2, 1, 0)}
        assert run_list.judged_outcome_counts(conn, []) == {}
