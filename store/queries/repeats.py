"""Queries of repeated runs (``automonitor.analysis.stability``): a run's judge parameters and the outcome of
every repeat of its predictions."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlmodel import col

from store.models import Prediction, Run


def run_params(conn: Connection, run_id: str) -> dict[str, Any]:
    """The ``params`` of run ``run_id`` (``{}`` when the run does not exist or has none)."""
    params: dict[str, Any] | None = conn.execute(
        sa.select(col(Run.params)).where(col(Run.id) == run_id)
    ).scalar_one_or_none()
    return params or {}


def repeat_outcomes(conn: Connection, run_id: str) -> list[tuple[str, int, str | None]]:
    """``(sample_id, repeat, outcome)`` of every prediction of a run, sorted by sample id and repeat."""
    q = (
        sa.select(col(Prediction.sample_id), col(Prediction.repeat), col(Prediction.outcome))
        .where(col(Prediction.run_id) == run_id)
        .order_by(col(Prediction.sample_id), col(Prediction.repeat))
    )
    return [(sid, rep, outcome) for sid, rep, outcome in conn.execute(q).all()]
