"""The store schema: migrations, WAL mode, constraints on SQLite and PostgreSQL."""

import pytest
import sqlalchemy as sa
from sqlmodel import select

from store import init_db, session_scope
from store.models import Prediction, Run, Monitor, Sample

from helpers import store_sample


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


def test_init_db_on_a_store_at_head_runs_no_migration_and_one_behind_is_upgraded(db_url, monkeypatch):
    from alembic import command

    from store.engine import alembic_config, at_head, get_engine

    eng = get_engine(db_url, fresh=True)
    assert not at_head(eng)  # a new store: no alembic_version table yet
    init_db(eng)
    assert at_head(eng)
    with monkeypatch.context() as m:  # at head, init_db neither migrates nor compiles the migration files
        m.setattr(command, "upgrade", lambda *a, **k: pytest.fail("init_db migrated a store at head"))
        assert init_db(eng) is eng
    command.downgrade(alembic_config(eng), "-1")
    assert not at_head(eng)
    init_db(eng)
    assert at_head(eng)
    eng.dispose()


def test_the_head_read_from_the_migration_files_is_alembics(tmp_path, monkeypatch):
    from store import engine as store_engine

    assert store_engine._heads_from_literals() == store_engine._heads_from_alembic() != ()
    # a branch (two revisions on one parent) has two heads; a file not declaring plainly falls back
    versions = tmp_path / "versions"
    versions.mkdir()
    (versions / "a.py").write_text("revision = 'a'\ndown_revision = None\n")
    (versions / "b.py").write_text("revision = 'b'\ndown_revision = 'a'\n")
    (versions / "c.py").write_text("revision: str = 'c'\ndown_revision = ('a',)\n")
    monkeypatch.setattr(store_engine, "_MIGRATIONS", tmp_path)
    assert store_engine._heads_from_literals() == ("b", "c")
    (versions / "e.py").write_text("revision, down_revision = 'e', 'b'\n")  # both on one line
    assert store_engine._heads_from_literals() == ("c", "e")
    (versions / "d.py").write_text("revision = make_id()\ndown_revision = 'c'\n")
    assert store_engine._heads_from_literals() is None


def test_the_models_match_the_migrations(engine):
    """Alembic's autogenerate finds nothing to change between the migrated schema and the models (types
    compared too), on SQLite and PostgreSQL: a model edit without its migration fails here. The models' indexes
    for another dialect are left out, as store/migrations/env.py leaves them out."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlmodel import SQLModel

    from store.models import schema_objects_of

    with engine.connect() as c:
        opts = {"compare_type": True, "include_object": schema_objects_of(c.dialect.name)}
        diff = compare_metadata(MigrationContext.configure(c, opts=opts), SQLModel.metadata)
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
            s.add(store_sample(0))
            s.flush()
            raise RuntimeError("boom")
    with session_scope(engine) as s:
        assert s.exec(select(Sample)).all() == []


def test_prediction_is_unique_per_run_andstore_sample(engine):
    with session_scope(engine) as s:
        s.add(store_sample(0))
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
        s.add(store_sample(1, meta={"cwe": "CWE-79", "nested": {"a": [1, 2]}}))
    with session_scope(engine) as s:
        assert s.get(Sample, "s1").meta == {"cwe": "CWE-79", "nested": {"a": [1, 2]}}


def test_the_models_and_the_migrations_describe_the_same_schema(engine):
    """Alembic's autogenerate finds nothing to do against a store migrated to head, on SQLite and
    PostgreSQL: the models add no column, index or type the migrations lack (an index the models make for one
    dialect only is compared on that dialect alone). ``Run.kind`` and
    ``Run.status`` are typed by the vocabulary's Literals and still map to the VARCHAR(16) columns the
    migrations made (a schema change needs a migration of its own)."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlmodel import SQLModel

    from automonitor.vocab import RunKind, RunStatus
    from store.models import schema_objects_of

    assert Run.model_fields["kind"].annotation is RunKind and Run.model_fields["status"].annotation is RunStatus
    with engine.connect() as conn:
        # the models' indexes for another dialect left out, as store/migrations/env.py leaves them out
        opts = {"compare_type": True, "include_object": schema_objects_of(conn.dialect.name)}
        ctx = MigrationContext.configure(conn, opts=opts)
        diff = compare_metadata(ctx, SQLModel.metadata)
    assert diff == [], diff
    for name in ("kind", "status"):
        column = sa.inspect(engine).get_columns("run")
        col = next(c for c in column if c["name"] == name)
        assert isinstance(col["type"], sa.String) and col["type"].length == 16, col


def _rows_for_vocabulary_checks(engine) -> None:
    """One valid row in each table whose vocabulary columns the database holds."""
    from store.models import Adjudication, Annotation, Annotator, CacheEntry

    with session_scope(engine) as s:
        s.add(store_sample(0))
        m = Monitor(name="rules", backend="rules")
        a = Annotator(name="ann", role="annotator", password_hash="x")
        s.add_all([m, a])
        s.flush()
        s.add(Run(id="r1", monitor_id=m.id, monitor="rules", template="direct"))
        s.flush()
        s.add(Prediction(run_id="r1", sample_id="s0", outcome="benign", score=0.25))
        s.add(CacheEntry(key="k1", outcome="benign", score=0.25))
        s.add(Annotation(annotator_id=a.id, sample_id="s0", label="unsure"))
        s.add(Adjudication(sample_id="s0", pair_id="p0", adjudicator_id=a.id, decision="accept", gold_label="benign"))


def test_the_database_holds_every_vocabulary_column_to_its_vocabulary(engine):
    """Every vocabulary column (run status and kind, prediction outcome, sample label / status / split /
    category / task / label source, annotation label, adjudication decision / gold label / split, account role) refuses
    a value outside the vocabulary on UPDATE and on INSERT, by raw SQL that bypasses the core, on SQLite
    (triggers) and PostgreSQL (CHECK constraints); the error names the constraint and the row is
    unchanged. The nullable columns take NULL; the others refuse it."""
    from store.migrations.versions.r10_ladder_run_kind import RULES

    from automonitor import vocab

    # the latest migration's lists are today's vocabulary (a new value needs a migration of its own)
    current = {
        "ck_sample_label": vocab.LABELS,
        "ck_sample_status": vocab.STATUSES,
        "ck_sample_split": vocab.STORE_SPLITS,
        "ck_sample_category": vocab.CATEGORIES,
        "ck_sample_task": vocab.TASKS,
        "ck_sample_label_source": vocab.LABEL_SOURCES,
        "ck_run_status": vocab.RUN_STATUSES,
        "ck_run_kind": vocab.RUN_KINDS,
        "ck_prediction_outcome": vocab.OUTCOMES,
        "ck_annotation_label": vocab.ANNOTATION_LABELS,
        "ck_adjudication_decision": vocab.ADJUDICATION_DECISIONS,
        "ck_adjudication_gold_label": vocab.LABELS,
        "ck_adjudication_split": vocab.SPLITS,
        "ck_annotator_role": vocab.ROLES,
        "ck_cache_entry_outcome": vocab.CACHED_OUTCOMES,
    }
    assert {name: tuple(values) for *_, values, _n, name in RULES} == current
    _rows_for_vocabulary_checks(engine)
    for table, column, values, nullable, name in RULES:
        with engine.connect() as c:
            before = c.execute(sa.text(f"SELECT {column} FROM {table}")).scalars().all()
        for bad in ("bogus", "", values[0].upper()):
            with pytest.raises(sa.exc.IntegrityError, match=name):
                with engine.begin() as c:
                    c.execute(sa.text(f"UPDATE {table} SET {column} = :v"), {"v": bad})
        if nullable:
            with engine.begin() as c:
                c.execute(sa.text(f"UPDATE {table} SET {column} = NULL"))
                c.execute(sa.text(f"UPDATE {table} SET {column} = :v"), {"v": before[0]})
        else:
            with pytest.raises(sa.exc.IntegrityError):
                with engine.begin() as c:
                    c.execute(sa.text(f"UPDATE {table} SET {column} = NULL"))
        for good in values:  # every value of the vocabulary is taken
            with engine.begin() as c:
                c.execute(sa.text(f"UPDATE {table} SET {column} = :v"), {"v": good})
                c.execute(sa.text(f"UPDATE {table} SET {column} = :v"), {"v": before[0]})
        with engine.connect() as c:
            assert c.execute(sa.text(f"SELECT {column} FROM {table}")).scalars().all() == before
    # the number ranges: a score in [0, 1] (or none), a run's sample count not negative
    from store.migrations.versions.r8_vocabulary_checks import RANGES

    assert [name for *_, name in RANGES] == ["ck_prediction_score", "ck_cache_entry_score", "ck_run_n"]
    for table, column, bad, good in (
        ("prediction", "score", (1.5, -0.01, 7), (0.0, 1.0, None)),
        ("cache_entry", "score", (1.0001, -7), (0.5, None)),
        ("run", "n", (-1,), (0, 12)),
    ):
        for v in bad:
            with pytest.raises(sa.exc.IntegrityError, match=f"ck_{table}_{column}"):
                with engine.begin() as c:
                    c.execute(sa.text(f"UPDATE {table} SET {column} = :v"), {"v": v})
        for v in good:
            with engine.begin() as c:
                c.execute(sa.text(f"UPDATE {table} SET {column} = :v"), {"v": v})
    assert "error" not in vocab.CACHED_OUTCOMES  # an error is never cached
    # an INSERT too (the core's own path: the ORM)
    with pytest.raises(sa.exc.IntegrityError, match="ck_prediction_outcome"):
        with session_scope(engine) as s:
            s.add(Prediction(run_id="r1", sample_id="s0", outcome="maybe", repeat=1))
    with pytest.raises(sa.exc.IntegrityError, match="ck_run_status"):
        with session_scope(engine) as s:
            s.add(Run(id="r2", monitor_id=1, monitor="rules", template="direct", status="done"))


def test_upgrading_a_store_that_holds_an_unknown_value_fails_and_changes_nothing(engine):
    """A store at the revision before the vocabulary checks, holding a run status outside the vocabulary:
    the upgrade to head fails naming the column's check, and leaves the store at its revision, without any
    check, with the row as it was (SQLite and PostgreSQL)."""
    from alembic import command

    from store.engine import alembic_config

    cfg = alembic_config(engine)
    command.downgrade(cfg, "r7_revoked_session")
    with session_scope(engine) as s:
        m = Monitor(name="rules", backend="rules")
        s.add(m)
        s.flush()
        s.add(Run(id="r1", monitor_id=m.id, monitor="rules", template="direct", status="paused"))  # type: ignore[arg-type]
    with pytest.raises(Exception, match="ck_run_status"):
        init_db(engine)
    with engine.connect() as c:
        assert c.execute(sa.text("select version_num from alembic_version")).scalar() == "r7_revoked_session"
        assert c.execute(sa.text("select status from run")).scalar() == "paused"
    with engine.begin() as c:  # no check was left behind: another unknown value is still taken
        c.execute(sa.text("update run set kind = 'live'"))
        c.execute(sa.text("update run set status = 'finished', kind = 'measured'"))
    init_db(engine)  # once the row is fixed, the upgrade goes through
    with pytest.raises(sa.exc.IntegrityError, match="ck_run_status"):
        with engine.begin() as c:
            c.execute(sa.text("update run set status = 'paused'"))


def test_constructed_benign_is_taken_at_head_and_blocks_a_downgrade_while_stored(engine):
    """Migration r9_constructed_benign: the label-source check takes ``constructed_benign`` (which r8 refused);
    a downgrade while a row holds it fails naming the check and leaves the store at r9; once the row is
    gone the downgrade restores r8's list, which refuses the value again (SQLite and PostgreSQL)."""
    from alembic import command

    from store.engine import alembic_config, head_revisions

    with session_scope(engine) as s:
        s.add(store_sample(0, label_source="constructed_benign"))
    cfg = alembic_config(engine)
    with pytest.raises(Exception, match="ck_sample_label_source"):
        command.downgrade(cfg, "r9_accounts_errata")
    # the failing step (r9's downgrade) changed nothing; the steps above it (from the head down to r10's) are
    # undone with it on PostgreSQL (one transaction), kept on SQLite (a transaction per revision)
    at = head_revisions()[0] if engine.dialect.name == "postgresql" else "r9_constructed_benign"
    with engine.connect() as c:
        assert c.execute(sa.text("select version_num from alembic_version")).scalar() == at
    with engine.begin() as c:
        c.execute(sa.text("update sample set label_source = 'by_construction'"))
    command.downgrade(cfg, "r9_accounts_errata")
    with pytest.raises(sa.exc.IntegrityError, match="ck_sample_label_source"):
        with engine.begin() as c:
            c.execute(sa.text("update sample set label_source = 'constructed_benign'"))
    init_db(engine)  # back to head: taken again
    with engine.begin() as c:
        c.execute(sa.text("update sample set label_source = 'constructed_benign'"))


def test_run_kind_ladder_is_taken_at_head_and_blocks_a_downgrade_while_stored(engine):
    """Migration r10_ladder_run_kind: the run-kind check takes ``ladder`` (the detector ladder's runs, which
    r9 refused); a downgrade while such a run is stored fails naming the check and leaves the store at r10;
    once the run is gone the downgrade restores r9's list, which refuses it again (SQLite and PostgreSQL)."""
    from alembic import command

    from store.engine import alembic_config, head_revisions

    with session_scope(engine) as s:
        m = Monitor(name="ladder:rules", backend="ladder")
        s.add(m)
        s.flush()
        s.add(Run(id="ladder-rules", monitor_id=m.id, monitor=m.name, template="ladder", kind="ladder"))
    cfg = alembic_config(engine)
    with pytest.raises(Exception, match="ck_run_kind"):
        command.downgrade(cfg, "r9_constructed_benign")
    # the steps above r10 are undone with the failing one on PostgreSQL (one transaction), kept on SQLite
    at = head_revisions()[0] if engine.dialect.name == "postgresql" else "r10_ladder_run_kind"
    with engine.connect() as c:
        assert c.execute(sa.text("select version_num from alembic_version")).scalar() == at
    with engine.begin() as c:
        c.execute(sa.text("update run set kind = 'imported'"))
    command.downgrade(cfg, "r9_constructed_benign")
    with pytest.raises(sa.exc.IntegrityError, match="ck_run_kind"):
        with engine.begin() as c:
            c.execute(sa.text("update run set kind = 'ladder'"))
    init_db(engine)  # back to head: taken again
    with engine.begin() as c:
        c.execute(sa.text("update run set kind = 'ladder'"))
