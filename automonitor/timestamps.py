"""Timestamps, one home: the store keeps aware UTC datetimes (SQLite hands back naive UTC values,
PostgreSQL aware ones), and every layer reads and prints them through these three functions."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import overload

__all__ = ["as_utc", "iso_utc", "utcnow"]


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
