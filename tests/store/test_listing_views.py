"""The light Core views that ``automonitor stats`` and ``users list`` read (:mod:`store.tables`: ``sample``,
``edition_sample``, ``gold_span``, ``build_log``, ``erratum``, ``annotator``, ``account_event``) against the
models' tables, and the queries over them (:mod:`store.queries.composition`, :mod:`store.queries.account_list`)
on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from servers.data import add_pairs
from sqlmodel import SQLModel

from automonitor.annotation import accounts
from automonitor.data.errata import stored_pairs
from automonitor.errors import PermissionDenied
from store import session_scope, tables
from store.models import AccountEvent, Annotator, BuildLog, EditionSample, Erratum, GoldSpan, Sample
from store.queries import account_list
from store.queries.composition import pair_index, stats

VIEWS = (
    tables.sample,
    tables.edition_sample,
    tables.gold_span,
    tables.build_log,
    tables.erratum,
    tables.annotator,
    tables.account_event,
)
T0 = datetime(2026, 12, 6, 4, 0, 0, 250_000, tzinfo=timezone.utc)


def test_every_listing_view_column_is_a_model_column_of_that_name_and_kind_of_type():
    """Each view names its table and columns as the model does, each with a type of the same kind, in the model's
    order: every column (``annotator``: all but ``password_hash``, which no listing reads)."""
    for view in VIEWS:
        model = SQLModel.metadata.tables[view.name]
        for c in view.c:
            assert c.name in model.c, f"{view.name}.{c.name} is no column of the model"
            assert c.type._type_affinity is model.c[c.name].type._type_affinity, (view.name, c.name, c.type)
        expected = [c.name for c in model.c if not (view.name == "annotator" and c.name == "password_hash")]
        assert [c.name for c in view.c] == expected, view.name


def _values(rows) -> list[tuple]:
    """Rows as comparable tuples: a timestamp with its UTC offset (equal instants in two zones differ)."""
    return [tuple((v, v.utcoffset()) if isinstance(v, datetime) else v for v in r) for r in rows]


def _seed(engine) -> list[dict]:
    """Two test pairs (with train pairs), an edition membership, a gold span, a build log, an erratum, two
    accounts (one deactivated, its sessions ended twice) and their events. Returns the test rows."""
    rows = add_pairs(engine, 2)
    with session_scope(engine) as s:
        s.add(EditionSample(edition="verified", sample_id=rows[0]["id"], created_at=T0))
        s.add(EditionSample(edition="verified", sample_id=rows[1]["id"], created_at=T0))
        s.add(GoldSpan(sample_id=rows[0]["id"], start_char=0, end_char=4, provenance="annotated", step=1,
                       note="a note", created_at=T0))  # fmt: skip
        s.add(GoldSpan(sample_id=rows[0]["id"], start_char=5, end_char=9, provenance="from_patch", created_at=T0))
        s.add(BuildLog(seed=7, report={"shortfalls": [{"cell": "x"}], "hard": {"pairs": 3, "extra": 1}}, created_at=T0))
        s.add(BuildLog(seed=8, report={"shortfalls": [], "paper_cell_deficit": {"a/b": 2}}, created_at=T0))
        s.add(Erratum(pair_id=rows[0]["pair_id"], source="fixture", verdict="wrong", reason="the label is wrong",
                      reader="rdr", date="2026-12-06", origin="cli", entered_by=None, entered_at=T0))  # fmt: skip
        ann = Annotator(name="ann ü", role="annotator", password_hash="h", active=False, session_epoch=2, created_at=T0)
        root = Annotator(name="root", role="admin", password_hash="h", created_at=T0)
        s.add_all([ann, root])
        s.flush()
        s.add(AccountEvent(account_id=ann.id, action="created", actor="root", detail=None, at=T0))
        s.add(AccountEvent(account_id=ann.id, action="deactivated", actor="root", detail="left", at=T0 + timedelta(1)))
        s.add(AccountEvent(account_id=root.id, action="created", actor="system", at=T0 - timedelta(1)))
    return rows


def test_a_listing_view_reads_every_value_as_the_model_table_does(engine):
    """The same rows through each view and through the model's table: equal values of equal types, timestamps
    aware UTC (on PostgreSQL also when the connection's time zone is another)."""
    _seed(engine)
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            conn.exec_driver_sql("SET TIME ZONE 'Asia/Kolkata'")
        for view in VIEWS:
            model = SQLModel.metadata.tables[view.name]
            key = [view.c[k.name] for k in model.primary_key]
            light = conn.execute(sa.select(view).order_by(*key)).all()
            full = conn.execute(sa.select(*(model.c[c.name] for c in view.c)).order_by(*model.primary_key)).all()
            assert len(light) >= 1 and _values(light) == _values(full), view.name
            assert [tuple(map(type, r)) for r in light] == [tuple(map(type, r)) for r in full], view.name
        (at,) = conn.execute(sa.select(tables.build_log.c.created_at).limit(1)).one()
    assert at == T0 and at.utcoffset() == timedelta(0)


def test_stats_counts_the_split_and_edition_and_reads_the_newest_build(engine):
    """``stats`` over the views, on a connection as on a session: the test split (the ``verified`` edition's
    members only, ``paper`` without members: every gold test sample), the whole store, the newest build log."""
    rows = _seed(engine)
    with engine.connect() as conn:
        verified = stats(conn, "test", "verified")
        paper = stats(conn, "test", "paper")
        everything = stats(conn, "all", "paper")
        hard = stats(conn, "test", "hard")
    with session_scope(engine) as s:
        assert stats(s, "test", "verified") == verified
    assert (verified["total"], verified["pairs"]) == (2, 1)  # the one pair with edition rows
    assert verified["by_label"] == {"misbehavior": 1, "benign": 1}
    assert (paper["total"], paper["pairs"]) == (4, 2)  # no 'paper' rows: every gold test sample
    assert (everything["total"], everything["pairs"]) == (4 + 12, 2 + 6)
    assert everything["by_split"] == {"test": 4, "train": 12} and everything["candidates"] == 0
    assert verified["gold_spans"]["by_source"] == {"fixture": {"annotated": 1, "from_patch": 1}}
    assert verified["gold_spans"]["samples_with_spans"] == {"fixture": 1}
    assert verified["build_seed"] == 8 and verified["paper_cell_deficit"] == {"a/b": 2}  # the newest build
    assert hard["total"] == 0 and hard["hard"] is None  # the newest build has no 'hard' section
    with engine.connect() as conn:
        assert stored_pairs(conn)[rows[0]["pair_id"]] == rows[0]["pair_id"]


def test_the_pair_index_reads_meta_only_where_it_names_the_key(engine):
    """``pair_index(meta_key=K)``: every sample, in the table's order as without it; ``meta`` where it holds the
    key ``K`` (whatever its value), ``None`` where its text does not name the key; so the errata's aliases
    (``meta.upstream_id``, a string) come out as from every sample's ``meta``."""
    rows = add_pairs(engine, 3, train_pairs=0)
    metas = [
        {"upstream_id": "up-1"},
        {"upstream_id": 5},  # not a string: no alias
        {"note": 'says "upstream_id" in a value'},  # the text names it: read, holds no such key
        {"upstream_idx": "x", "nested": {"upstream_id": "deep"}},  # named only deeper: read, no top-level key
        {"upstream_id": "up-2", "other": [1, 2]},
        {},
    ]
    with session_scope(engine) as s:
        for r, meta in zip(rows, metas):
            s.execute(sa.update(Sample).where(Sample.id == r["id"]).values(meta=meta))
    with engine.connect() as conn:
        full = pair_index(conn)
        light = pair_index(conn, meta_key="upstream_id")
        aliases = stored_pairs(conn)
    assert [r[:2] for r in light] == [r[:2] for r in full] and len(full) == 6
    for (_, _, whole), (_, _, read) in zip(full, light):
        if "upstream_id" in whole:
            assert read == whole
        else:
            assert read is None or read == whole
    # not sent: the meta whose JSON text does not name the key (the empty one, the one quoting it in a value)
    assert [read is None for _, _, read in light] == [json.dumps("upstream_id") not in json.dumps(m) for *_, m in full]
    assert sum(read is None for _, _, read in light) == 2
    assert aliases["up-1"] == rows[0]["pair_id"] and aliases["up-2"] == rows[4]["pair_id"]
    assert "5" not in aliases and "deep" not in aliases and "x" not in aliases


def test_the_account_list_reads_accounts_their_state_and_newest_events(engine):
    """``store.queries.account_list`` and ``account_table`` over it: accounts by name, each one's newest event
    (aware UTC), the stored state a login is checked against; a stale login is refused."""
    _seed(engine)
    with engine.connect() as conn:
        listed = account_list.all_accounts(conn)
        last = account_list.last_events(conn)
        ann_id = listed[0].id
        state = account_list.account_state(conn, ann_id)
        assert account_list.account_state(conn, 10_000) is None
    assert [r.name for r in listed] == ["ann ü", "root"]
    assert (state.name, state.role, state.active, state.session_epoch) == ("ann ü", "annotator", False, 2)
    assert last[ann_id] == {"action": "deactivated", "actor": "root", "at": T0 + timedelta(1)}
    table = accounts.account_table(engine, accounts.SYSTEM)
    assert [(r["name"], r["active"], r["last_event"]["action"]) for r in table] == [
        ("ann ü", False, "deactivated"),
        ("root", True, "created"),
    ]
    assert [r["name"] for r in accounts.account_table(engine, accounts.SYSTEM, include_inactive=False)] == ["root"]
    root = listed[1]
    admin = accounts.Account(id=root.id, name="root", role="admin", epoch=0)
    assert [r["name"] for r in accounts.account_table(engine, admin)] == ["ann ü", "root"]
    stale = accounts.Account(id=root.id, name="root", role="admin", epoch=1)  # its sessions were never ended
    with pytest.raises(PermissionDenied, match="session was ended"):
        accounts.account_table(engine, stale)
    with pytest.raises(PermissionDenied, match="inactive account"):  # deactivated
        accounts.account_table(engine, accounts.Account(id=ann_id, name="ann ü", role="admin"))
