"""The store schema: migrations, WAL mode, constraints on SQLite and PostgreSQL."""

import pytest
import sqlalchemy as sa
from sqlmodel import select

from store import init_db, session_scope
from store.models import Prediction, Run, Monitor, Sample


def _sample(i: int, **kw) -> Sample:
    base = dict(
        id=f"s{i}",
        pair_id=f"p{i // 2}",
        category="safety_permission",
        task="qa",
        label="misbehavior" if i % 2 == 0 else "benign",
        request="req",
        response=f"resp {i}",
        source="test",
        request_hash="r",
        response_hash=f"h{i}",
        content_hash=f"c{i}",
    )
    base.update(kw)
    return Sample(**base)


def test_migrations_create_every_table_and_are_idempotent(engine):
    names = set(sa.inspect(engine).get_table_names())
    assert {
        "sample",
        "monitor",
        "run",
        "prediction",
        "cache_entry",
        "annotator",
        "assignment",
        "annotation",
        "adjudication",
        "alembic_version",
    } <= names
    init_db(engine)  # second upgrade is a no-op
    with engine.connect() as c:
        assert c.execute(sa.text("select count(*) from alembic_version")).scalar() == 1


def test_the_models_match_the_migrations(engine):
    """Alembic's autogenerate finds nothing to change between the migrated schema and the models (types
    compared too), on SQLite and PostgreSQL: a model edit without its migration fails here."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlmodel import SQLModel

    with engine.connect() as c:
        diff = compare_metadata(MigrationContext.configure(c, opts={"compare_type": True}), SQLModel.metadata)
    assert diff == []


def test_prediction_and_cache_entry_share_the_verdict_columns(engine):
    """Every verdict field (automonitor.vocab.VERDICT_FIELDS) is a column of both tables with the same type
    in the migrated schema; all but ``outcome`` come from the one ``VerdictColumns`` declaration."""
    from automonitor.vocab import VERDICT_FIELDS
    from store.models import CacheEntry, VerdictColumns

    cols = {t: {c["name"]: c for c in sa.inspect(engine).get_columns(t)} for t in ("prediction", "cache_entry")}
    for name in VERDICT_FIELDS:
        pred, cache = cols["prediction"][name], cols["cache_entry"][name]
        assert pred["type"].compile(engine.dialect) == cache["type"].compile(engine.dialect), name
    assert set(VERDICT_FIELDS) - {"outcome"} == set(VerdictColumns.model_fields)
    assert issubclass(Prediction, VerdictColumns) and issubclass(CacheEntry, VerdictColumns)


def test_sqlite_runs_in_wal_mode(sqlite_engine):
    with sqlite_engine.connect() as c:
        assert c.execute(sa.text("PRAGMA journal_mode")).scalar().lower() == "wal"
        assert c.execute(sa.text("PRAGMA foreign_keys")).scalar() == 1


def test_session_scope_rolls_back_everything_on_error(engine):
    with pytest.raises(RuntimeError):
        with session_scope(engine) as s:
            s.add(_sample(0))
            s.flush()
            raise RuntimeError("boom")
    with session_scope(engine) as s:
        assert s.exec(select(Sample)).all() == []


def test_prediction_is_unique_per_run_and_sample(engine):
    with session_scope(engine) as s:
        s.add(_sample(0))
        m = Monitor(name="rules", backend="rules")
        s.add(m)
        s.flush()
        s.add(Run(id="r1", monitor_id=m.id, monitor="rules", template="direct"))
        s.flush()
        s.add(Prediction(run_id="r1", sample_id="s0", outcome="benign"))
    with pytest.raises(sa.exc.IntegrityError):
        with session_scope(engine) as s:
            s.add(Prediction(run_id="r1", sample_id="s0", outcome="misbehavior"))
    with session_scope(engine) as s:
        preds = s.exec(select(Prediction)).all()
        assert [(p.sample_id, p.outcome) for p in preds] == [("s0", "benign")]


def test_json_meta_round_trips(engine):
    with session_scope(engine) as s:
        s.add(_sample(1, meta={"cwe": "CWE-79", "nested": {"a": [1, 2]}}))
    with session_scope(engine) as s:
        assert s.get(Sample, "s1").meta == {"cwe": "CWE-79", "nested": {"a": [1, 2]}}


def test_the_models_and_the_migrations_describe_the_same_schema(engine):
    """Alembic's autogenerate finds nothing to do against a store migrated to head, on SQLite and
    PostgreSQL: the models add no column, index or type the migrations lack. ``Run.kind`` and
    ``Run.status`` are typed by the vocabulary's Literals and still map to the VARCHAR(16) columns the
    migrations made (a schema change needs a migration of its own)."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlmodel import SQLModel

    from automonitor.vocab import RunKind, RunStatus

    assert Run.model_fields["kind"].annotation is RunKind and Run.model_fields["status"].annotation is RunStatus
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(ctx, SQLModel.metadata)
    assert diff == [], diff
    for name in ("kind", "status"):
        column = sa.inspect(engine).get_columns("run")
        col = next(c for c in column if c["name"] == name)
        assert isinstance(col["type"], sa.String) and col["type"].length == 16, col
