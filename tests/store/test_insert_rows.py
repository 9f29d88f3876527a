"""``store.queries.insert_rows`` (the build's and the imports' Core ``executemany`` writes) stores what the ORM's
bulk ``session.execute(insert(model), rows)`` it replaced stored, on SQLite and PostgreSQL: absent keys and
``None`` values get the column's default (``{"source": None}`` is not a NULL that ``NOT NULL`` refuses), a
JSON ``None`` stays JSON ``null``, and rows with different keys are written in order."""

from __future__ import annotations

import sqlalchemy as sa

from store.queries import insert_rows


def _rows(prefix: str) -> list[dict[str, object]]:
    base = dict(category="specification_gaming", task="code", label="benign", request="q", response="a", meta={})
    hashes = lambda i: {f"{h}_hash": f"{prefix}{i}" for h in ("request", "response", "content")}  # noqa: E731
    return [
        {**base, **hashes(0), "id": f"{prefix}0", "pair_id": f"{prefix}p0", "source": None},
        {**base, **hashes(1), "id": f"{prefix}1", "pair_id": f"{prefix}p1", "source": "src", "split": None},
        {**base, **hashes(2), "id": f"{prefix}2", "pair_id": f"{prefix}p2"},
        {**base, **hashes(3), "id": f"{prefix}3", "pair_id": f"{prefix}p3", "source": None, "status": None},
    ]


def test_insert_rows_stores_what_the_orm_bulk_insert_stored(engine):
    from store import session_scope
    from store.models import Sample

    with session_scope(engine) as s:
        s.execute(sa.insert(Sample), _rows("o"))  # the ORM's bulk insert
        assert insert_rows(s, Sample, _rows("c")) == 4
    cols = [c for c in Sample.__table__.c if c.key not in ("id", "pair_id", "created_at") and "hash" not in c.key]
    with engine.connect() as c:
        got = {r[0]: tuple(r[1:]) for r in c.execute(sa.select(Sample.__table__.c.id, *cols))}
    for i in range(4):
        assert got[f"c{i}"] == got[f"o{i}"], (i, got[f"c{i}"], got[f"o{i}"])
    source = [c.key for c in cols].index("source")
    assert got["c0"][source] == "" and got["c1"][source] == "src"
