"""Every migration's downgrade works on a store that holds data (SQLite and PostgreSQL): a store with a row in
every table (each a value every older schema takes) is downgraded one revision at a time to ``base``, keeping
what the older schema holds at each step, and then upgraded back to head."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from store import init_db, session_scope
from store.models import (
    AccountEvent,
    Adjudication,
    Annotation,
    Annotator,
    Assignment,
    BuildLog,
    CacheEntry,
    DerivedDocument,
    EditionSample,
    Erratum,
    GoldSpan,
    ItemFlag,
    LoginThrottle,
    Monitor,
    Prediction,
    RevokedSession,
    Run,
    utcnow,
)

from helpers import store_sample


def _fill(engine) -> None:
    """A row in every table: a gold pair in the paper edition with a gold span, a run with a prediction on each
    side (and a second repeat of one), a cache entry, an annotator with an assignment, an annotation, a flag, an
    adjudication, an account event and a revoked session, an erratum, a login throttle, a build log and a
    derived document."""
    with session_scope(engine) as s:
        s.add_all([store_sample(0, split="test"), store_sample(1, split="test")])
        acc = Annotator(name="anna", role="admin", password_hash="x")
        mon = Monitor(name="rules", backend="rules")
        s.add_all([acc, mon])
        s.flush()
        assert acc.id is not None and mon.id is not None
        s.add(Run(id="r1", monitor_id=mon.id, monitor="rules", template="direct", status="finished", edition="paper"))
        s.flush()
        s.add_all(
            [
                EditionSample(edition="paper", sample_id="s0"),
                EditionSample(edition="paper", sample_id="s1"),
                GoldSpan(sample_id="s0", start_char=0, end_char=4, provenance="annotated"),
                Prediction(run_id="r1", sample_id="s0", outcome="misbehavior", score=0.9),
                Prediction(run_id="r1", sample_id="s1", outcome="benign", score=0.1),
                Prediction(run_id="r1", sample_id="s1", outcome="benign", repeat=1),
                CacheEntry(key="k" * 64, outcome="benign"),
                Assignment(annotator_id=acc.id, sample_id="s0"),
                Annotation(
                    annotator_id=acc.id,
                    sample_id="s0",
                    label="misbehavior",
                    evidence_start=0,
                    evidence_end=4,
                    evidence_spans=[[0, 4]],
                ),
                ItemFlag(annotator_id=acc.id, sample_id="s1", comment="the request is cut"),
                Adjudication(
                    sample_id="s0",
                    pair_id="p0",
                    adjudicator_id=acc.id,
                    decision="accept",
                    gold_label="misbehavior",
                    split="test",
                ),
                AccountEvent(account_id=acc.id, action="created", actor="cli"),
                RevokedSession(nonce_hash="n" * 64, account_id=acc.id),
                Erratum(
                    pair_id="p0",
                    source="test",
                    verdict="doubtful",
                    reason="why",
                    reader="anna",
                    date="2026-12-07",
                    origin="cli",
                ),
                LoginThrottle(key="anna", failures=1, locked_until=utcnow() + timedelta(minutes=1)),
                BuildLog(seed=0, report={"pairs": 1}),
                DerivedDocument(key="d" * 64, fingerprint="f" * 64, doc="{}"),
            ]
        )


#: the rows :func:`_fill` writes into the tables that revisions after the first one made
LATER_TABLES = {
    "edition_sample": 2,
    "gold_span": 1,
    "item_flag": 1,
    "erratum": 1,
    "account_event": 1,
    "revoked_session": 1,
    "login_throttle": 1,
    "derived_document": 1,
}


def _tables(engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def _count(engine, table: str) -> int:
    with engine.connect() as c:
        return c.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one()


def test_every_downgrade_works_on_a_store_with_data_down_to_base_and_back(engine):
    """Trial 46: ``alembic downgrade base`` of a store that holds data failed on a foreign key (SQLite: a
    revision that rebuilds the ``sample`` or ``run`` table dropped the old one while predictions, annotations,
    assignments and edition rows still referenced it). Each step down now goes through and keeps the rows its
    schema still has a table for (the second repeat goes with the ``repeat`` column, by that revision's rule);
    no step leaves a row that references a missing one; at ``base`` no table of the product is left, and the
    store upgrades back to head and takes rows again."""
    from alembic import command
    from alembic.script import ScriptDirectory

    from store.engine import alembic_config, at_head, head_revisions

    _fill(engine)
    assert _count(engine, "prediction") == 3
    cfg = alembic_config(engine)
    script = ScriptDirectory.from_config(cfg)
    steps = [r.down_revision for r in script.walk_revisions("base", "heads")]  # head first
    assert len(steps) == len(list(script.walk_revisions())) and steps[-1] is None
    for target in steps:
        command.downgrade(cfg, target or "base")
        with engine.connect() as c:
            assert c.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all() == (
                [target] if target else []
            )
        if target is None:
            break
        tables = _tables(engine)
        assert _count(engine, "sample") == 2, target
        assert _count(engine, "annotator") == 1 and _count(engine, "annotation") == 1, target
        assert _count(engine, "prediction") == (3 if "repeat" in _columns(engine, "prediction") else 2), target
        for table, n in LATER_TABLES.items():  # a table a later revision made: gone, or with its rows
            assert table not in tables or _count(engine, table) == n, (target, table)
        if engine.dialect.name == "sqlite":  # nothing references a missing row (PostgreSQL checks every write)
            with engine.connect() as c:
                assert c.exec_driver_sql("PRAGMA foreign_key_check").all() == [], target
                assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1, target  # switched on again
    assert _tables(engine) <= {"alembic_version"}
    init_db(engine)
    assert at_head(engine) and head_revisions()
    assert {"sample", "prediction", "edition_sample", "gold_span", "erratum"} <= _tables(engine)
    assert _count(engine, "sample") == 0
    _fill(engine)  # the upgraded schema takes the same rows again
    assert _count(engine, "prediction") == 3


def _columns(engine, table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(engine).get_columns(table)}
