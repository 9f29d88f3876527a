"""The AutoMonitor-Bench store: SQLModel tables, engine set-up (SQLite WAL or PostgreSQL) and queries.

Usage::

    from store import get_engine, init_db, session_scope
    engine = get_engine()          # AUTOMONITOR_DB or sqlite:///automonitor.db
    init_db(engine)                # alembic upgrade head
    with session_scope(engine) as s:
        ...
"""

from typing import TYPE_CHECKING, Any

from store.engine import db_url, get_engine, init_db, session_scope

if TYPE_CHECKING:
    from store import models


def __getattr__(name: str) -> Any:
    """``store.models`` on first use (PEP 562): the tables' classes cost a third of a store read's start
    and a cached read needs none of them."""
    if name == "models":
        import sys

        __import__("store.models")  # not importlib: ``-X importtime`` (the tests' budgets) sees this import
        return sys.modules["store.models"]
    raise AttributeError(f"module 'store' has no attribute {name!r}")


__all__ = [
    "db_url",
    "get_engine",
    "init_db",
    "models",
    "session_scope",
]
