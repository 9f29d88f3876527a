"""Queries for trained monitors (probes, the transfer matrix): the gold test samples with their texts.

Every function works inside the caller's session/transaction and on both SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col

from store.models import Sample
from store.queries import SAMPLE_KEY, sample_columns


def gold_test_texts(session: Session) -> list[dict[str, Any]]:
    """Every gold ``test`` sample as ``{id, pair_id, category, task, label, request, response}``, id order."""
    q = (
        sa.select(*sample_columns(*SAMPLE_KEY, "request", "response"))
        .where(col(Sample.status) == "gold", col(Sample.split) == "test")
        .order_by(col(Sample.id))
    )
    return [dict(r._mapping) for r in session.execute(q)]
