"""The AutoMonitor-Bench store: SQLModel tables, engine set-up (SQLite WAL or PostgreSQL) and queries.

Usage::

    from store import get_engine, init_db, session_scope
    engine = get_engine()          # AUTOMONITOR_DB or sqlite:///automonitor.db
    init_db(engine)                # alembic upgrade head
    with session_scope(engine) as s:
        ...
"""

from store.engine import DEFAULT_URL, db_url, get_engine, init_db, session_scope
from store import models

__all__ = [
    "DEFAULT_URL",
    "db_url",
    "get_engine",
    "init_db",
    "models",
    "session_scope",
]
