"""Queries for trained monitors (probes, the transfer matrix): the gold test samples with their texts.

Every function works inside the caller's session/transaction and on both SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col

from store.models import Sample


def gold_test_texts(session: Session) -> list[dict[str, Any]]:
    """Every gold ``test`` sample as ``{id, pair_id, category, task, label, request, response}``, id order."""
    q = (
        sa.select(
            col(Sample.id),
            col(Sample.pair_id),
            col(Sample.category),
            col(Sample.task),
            col(Sample.label),
            col(Sample.request),
            col(Sample.response),
        )
        .where(col(Sample.status) == "gold", col(Sample.split) == "test")
        .order_by(col(Sample.id))
    )
    return [dict(r._mapping) for r in session.execute(q)]
