"""One ``monitor`` row per name and base URL, a NULL base URL counting as one value (migration
r12_monitor_name_unique): the index, the upgrade's merge of duplicate rows (or its refusal when they are not
one monitor), and ``get_or_create_monitor`` under a concurrent creator (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

from store import get_engine, init_db, session_scope
from store.models import Monitor, Run
from store.queries.runs import get_or_create_monitor

BEFORE = "r11_derived_document"


def _version(engine) -> str:
    with engine.connect() as c:
        return c.execute(sa.text("select version_num from alembic_version")).scalar()


def test_a_second_monitor_of_one_name_and_no_base_url_is_refused_at_head(engine):
    with session_scope(engine) as s:
        s.add(Monitor(name="race", backend="external"))
        s.add(Monitor(name="race", backend="rules", base_url="http://a"))  # another base URL: another monitor
    with pytest.raises(sa.exc.IntegrityError, match="uq_monitor_name_url_any|UNIQUE constraint failed"):
        with session_scope(engine) as s:
            s.add(Monitor(name="race", backend="external"))
    with engine.connect() as c:
        assert c.execute(sa.text("select count(*) from monitor where name = 'race'")).scalar() == 2


def _add(engine, rows: list[tuple[str, str, str | None]], runs: dict[int, list[str]]) -> list[int]:
    """Monitor rows (name, backend, model), and runs of the i-th row; returns the rows' ids."""
    ids = []
    with session_scope(engine) as s:
        for i, (name, backend, model) in enumerate(rows):
            m = Monitor(name=name, backend=backend, model=model)
            s.add(m)
            s.flush()
            ids.append(m.id)
            for rid in runs.get(i, []):
                s.add(Run(id=rid, monitor_id=m.id, monitor=name, template="direct", kind="imported", status="imported"))
    return ids


def test_the_upgrade_merges_duplicates_that_are_one_monitor_and_refuses_those_that_are_not(engine):
    from alembic import command

    from store.engine import alembic_config, head_revisions

    cfg = alembic_config(engine)
    command.downgrade(cfg, BEFORE)
    # what the race left: three rows named race (one monitor), each with its run; and an unrelated monitor
    ids = _add(
        engine,
        [
            ("race", "external", None),
            ("race", "external", None),
            ("solo", "external", None),
            ("race", "external", None),
        ],
        {0: ["r0"], 1: ["r1"], 3: ["r3"]},
    )
    init_db(engine)
    assert _version(engine) == head_revisions()[0]
    with engine.connect() as c:
        assert c.execute(sa.text("select id, name from monitor order by id")).all() == [
            (ids[0], "race"),
            (ids[2], "solo"),
        ]
        assert c.execute(sa.text("select id, monitor_id from run order by id")).all() == [
            (r, ids[0]) for r in ("r0", "r1", "r3")
        ]

    # rows of one name that differ in backend are two monitors: the upgrade stops, naming them, changing nothing
    command.downgrade(cfg, BEFORE)
    clash = _add(engine, [("rules", "rules", "rules-v1"), ("rules", "external", None)], {1: ["r9"]})
    with pytest.raises(RuntimeError, match="differ in backend or model") as exc:
        init_db(engine)
    assert f"id {clash[0]} (backend rules" in str(exc.value) and f"id {clash[1]} (backend external" in str(exc.value)
    assert _version(engine) == BEFORE
    with engine.connect() as c:
        assert c.execute(sa.text("select count(*) from monitor where name = 'rules'")).scalar() == 2
    with engine.begin() as c:  # the message's fix
        c.execute(sa.text("update monitor set name = 'rules-import' where id = :i"), {"i": clash[1]})
        c.execute(sa.text("update run set monitor = 'rules-import' where monitor_id = :i"), {"i": clash[1]})
    init_db(engine)
    assert _version(engine) == head_revisions()[0]


def test_get_or_create_monitor_returns_the_row_a_concurrent_creator_committed(engine, db_url):
    """Session A has inserted ``race`` (not committed); B, on its own connection, looks, finds nothing and
    inserts: its insert waits for A and then fails on the index; B returns A's row instead of a second one."""
    a_inserted, b_done = threading.Event(), threading.Event()
    got: dict[str, object] = {}
    other = get_engine(db_url, fresh=True)

    def b() -> None:
        try:
            a_inserted.wait(10)
            with session_scope(other) as s:
                got["id"] = get_or_create_monitor(s, "race", "external", None, None, match_backend=True).id
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            got["error"] = exc
        finally:
            b_done.set()

    t = threading.Thread(target=b)
    t.start()
    try:
        with session_scope(engine) as s:
            a = Monitor(name="race", backend="external")
            s.add(a)
            s.flush()
            a_id = a.id
            a_inserted.set()
            assert not b_done.wait(1.0)  # B waits for A's transaction
    finally:
        t.join(30)
        other.dispose()
    assert got.get("error") is None and got["id"] == a_id
    with engine.connect() as c:
        assert c.execute(sa.text("select count(*) from monitor")).scalar() == 1
