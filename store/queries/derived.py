"""Queries for derived runs: the per-sample inputs of a recipe (outcome, score, cost) and
inserting a finished ``derived`` run with its predictions in one transaction."""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from store.queries.analysis import LIGHT_COLUMNS, insert_finished_run, sample_cost
from store.queries.runs import get_or_create_monitor
from store.models import Monitor, Prediction, Run, Sample
from store.queries import rows_by_ids
from store.queries.rowtypes import RunInputRow

INPUT_COLUMNS = [*LIGHT_COLUMNS[:-1], "cost_usd", "compute_s"]  # the light columns less evidence


def recipe_inputs(engine: Engine, run_id: str) -> pd.DataFrame:
    """One row per prediction of ``run_id`` joined with its sample.

    Columns: :data:`INPUT_COLUMNS` (``outcome`` None = pending, ``score`` NaN when absent,
    ``cost_usd`` in USD of the call, ``compute_s`` = the measured latency in seconds).
    """
    q = (
        sa.select(
            col(Prediction.run_id),
            col(Prediction.sample_id),
            col(Sample.pair_id),
            col(Sample.category),
            col(Sample.task),
            col(Sample.label),
            col(Prediction.outcome),
            col(Prediction.score),
            col(Prediction.cost_usd),
            col(Prediction.cached),
            sa.cast(Prediction.meta, sa.Text),
            col(Prediction.latency_ms),
        )
        .join(Sample, col(Sample.id) == col(Prediction.sample_id))
        .where(col(Prediction.run_id) == run_id)
        .order_by(col(Prediction.sample_id))
    )
    rows: list[tuple[Any, ...]] = []
    with engine.connect() as c:
        for r in c.execute(q):
            rows.append(
                (
                    r[0],
                    r[1],
                    r[2],
                    r[3],
                    r[4],
                    r[5],
                    r[6],
                    r[7],
                    sample_cost(r[8], r[9], r[10]),
                    float(r[11] or 0.0) / 1000.0,
                )
            )
    df = pd.DataFrame(rows, columns=INPUT_COLUMNS)
    df["score"] = pd.to_numeric(df["score"], errors="coerce").astype(float)
    return df


def run_rows(engine: Engine, run_ids: Sequence[str]) -> dict[str, RunInputRow]:
    """``{run_id: {"monitor", "template", "kind", "status", "edition", "params"}}`` for existing ids."""
    cols = [col(Run.id), col(Run.monitor), col(Run.template), col(Run.kind), col(Run.status), col(Run.edition)]
    with engine.connect() as c:
        rows = rows_by_ids(c, [*cols, col(Run.params)], cols[0], run_ids)
    return {
        r[0]: {
            "monitor": r[1],
            "template": r[2],
            "kind": r[3],
            "status": r[4],
            "edition": r[5],
            "params": r[6],
        }
        for r in rows
    }


def derived_monitor(session: Session, name: str) -> Monitor:
    """The ``Monitor`` row (backend ``derived``) named ``name``, created if absent."""
    return get_or_create_monitor(session, name, "derived", None, None, {"source": "derive"}, match_backend=True)


def insert_derived_run(
    engine: Engine,
    *,
    run_id: str,
    monitor: str,
    template: str,
    edition: str | None,
    params: dict[str, Any],
    rows: list[dict[str, Any]],
) -> None:
    """Insert a finished run of kind ``derived`` and its predictions in one transaction
    (:func:`store.queries.analysis.insert_finished_run`).

    ``rows``: dicts with ``sample_id, outcome, score, reason, cost_usd, latency_ms, meta``.
    """
    from store import session_scope

    with session_scope(engine) as s:
        insert_finished_run(
            s,
            run_id=run_id,
            monitor=derived_monitor(s, monitor),
            template=template,
            kind="derived",
            status="finished",
            params=params,
            rows=rows,
            edition=edition,
        )


def derived_runs(engine: Engine) -> list[tuple[str, dict[str, Any]]]:
    """``[(run_id, params)]`` of every derived run, oldest first."""
    with engine.connect() as c:
        rows = c.execute(
            sa.select(col(Run.id), col(Run.params))
            .where(col(Run.kind) == "derived")
            .order_by(col(Run.created_at), col(Run.id))
        ).all()
    return [(r[0], r[1]) for r in rows]
