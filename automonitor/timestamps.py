"""Timestamps, one home: the store keeps aware UTC datetimes (SQLite hands back naive UTC values,
PostgreSQL aware ones), and every layer reads and prints them through these functions; fresh run ids
carry a UTC time stamp made by :func:`stamped_id`."""

from __future__ import annotations

import secrets
import time
from datetime import datetime, timezone
from typing import overload

__all__ = ["as_utc", "iso_utc", "stamped_id", "utcnow"]


def utcnow() -> datetime:
    """The time now, timezone-aware UTC (the store's datetime columns require aware values)."""
    return datetime.now(timezone.utc)


@overload
def as_utc(value: datetime) -> datetime: ...
@overload
def as_utc(value: None) -> None: ...
def as_utc(value: datetime | None) -> datetime | None:
    """A stored datetime as aware UTC: a naive value (SQLite) is taken as UTC; ``None`` stays ``None``."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=timezone.utc)


def iso_utc(value: datetime | str | None) -> str | None:
    """ISO 8601 text of a stored timestamp (a naive datetime taken as UTC); a string is kept as it is and
    ``None`` (or ``""``) gives ``None``."""
    if isinstance(value, datetime):
        return as_utc(value).isoformat()
    return str(value) if value else None


def stamped_id(prefix: str, sep: str = "_") -> str:
    """A fresh id ``<prefix><sep>YYYYmmdd<sep>HHMMSS<sep><6 hex>`` (UTC now and 3 random bytes), e.g.
    ``stamped_id("run")`` -> ``run_20260105_142301_a1b2c3``, ``stamped_id("gen", "-")`` ->
    ``gen-20260105-142301-a1b2c3``. The one maker of run ids (monitor, derived and generation runs)."""
    return prefix + sep + time.strftime(f"%Y%m%d{sep}%H%M%S", time.gmtime()) + sep + secrets.token_hex(3)
