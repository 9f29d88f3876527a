"""Helpers shared by the CLI modules: opening the store, printing JSON, tables on stderr."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

err_console = Console(stderr=True, markup=False)  # messages carry data (names, paths): never rich markup


def open_store(url: str | None = None) -> Engine:
    """Engine for ``AUTOMONITOR_DB`` (or ``url``), migrated to the newest schema."""
    from store import get_engine, init_db

    return init_db(get_engine(url))


def emit_json(obj: Any) -> None:
    """Print one JSON document on stdout (and nothing else there)."""
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()
