"""The store's derived documents (``derived_document``, :mod:`store.queries.documents`): one document per
key, handed back only for the fingerprint it was written with, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlalchemy as sa

from store import session_scope
from store.queries.documents import read_document, write_document


def test_a_document_is_read_back_for_its_fingerprint_only_and_a_write_replaces_it(engine):
    with engine.connect() as c:
        assert read_document(c, "audit:paper", "a" * 64) is None  # nothing kept yet
    with session_scope(engine) as s:
        write_document(s, "audit:paper", "a" * 64, '{"x": 1}')
        write_document(s, "audit:hard", "a" * 64, '{"x": 2}')
    with engine.connect() as c:
        assert read_document(c, "audit:paper", "a" * 64) == '{"x": 1}'
        assert read_document(c, "audit:hard", "a" * 64) == '{"x": 2}'
        assert read_document(c, "audit:paper", "b" * 64) is None  # other content: not handed back
    with session_scope(engine) as s:  # the same key again (another fingerprint): replaced, not an error
        write_document(s, "audit:paper", "b" * 64, '{"x": 3}')
    with engine.connect() as c:
        assert read_document(c, "audit:paper", "a" * 64) is None
        assert read_document(c, "audit:paper", "b" * 64) == '{"x": 3}'
        assert c.execute(sa.text("SELECT count(*) FROM derived_document")).scalar() == 2


def test_a_large_document_is_kept_byte_for_byte(engine):
    doc = (
        '{"slices": [' + ", ".join(f'{{"auroc": {i / 7!r}, "name": "\\u00e9t\\u00e9 {i}"}}' for i in range(5000)) + "]}"
    )
    with session_scope(engine) as s:
        write_document(s, "audit:paper", "c" * 64, doc)
    with engine.connect() as c:
        assert read_document(c, "audit:paper", "c" * 64) == doc
