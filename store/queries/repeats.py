"""Queries of repeated runs (``automonitor.analysis.stability``): a run's judge parameters and the outcome of
every repeat of its predictions."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from store.tables import prediction, run


def run_params(conn: Connection, run_id: str) -> dict[str, Any]:
    """The ``params`` of run ``run_id`` (``{}`` when the run does not exist or has none)."""
    params: dict[str, Any] | None = conn.execute(sa.select(run.c.params).where(run.c.id == run_id)).scalar_one_or_none()
    return params or {}


def repeat_outcomes(conn: Connection, run_id: str) -> list[tuple[str, int, str | None]]:
    """``(sample_id, repeat, outcome)`` of every prediction of a run, sorted by sample id and repeat."""
    q = (
        sa.select(prediction.c.sample_id, prediction.c.repeat, prediction.c.outcome)
        .where(prediction.c.run_id == run_id)
        .order_by(prediction.c.sample_id, prediction.c.repeat)
    )
    return [(sid, rep, outcome) for sid, rep, outcome in conn.execute(q).all()]
