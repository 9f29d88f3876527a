"""Queries for the detector ladder's runs (``Run.kind == 'ladder'``): which are stored with which fingerprint,
deleting them, and writing one. Every function runs inside the caller's transaction and commits nothing;
the rule of what to write is the build's (:mod:`automonitor.data.build.ladder_runs`)."""

from __future__ import annotations

from typing import Iterable

import sqlalchemy as sa
from sqlmodel import Session, col

from automonitor.vocab import RunKind
from store.models import Prediction, Run
from store.queries import chunks
from store.queries.analysis import insert_finished_run
from store.queries.runs import get_or_create_monitor

KIND: RunKind = "ladder"


def stored_fingerprints(session: Session) -> dict[str, str | None]:
    """``{run_id: params["ladder"]["fingerprint"]}`` of every ladder run (``None`` where it has none)."""
    rows = session.execute(sa.select(col(Run.id), col(Run.params)).where(col(Run.kind) == KIND)).all()
    return {rid: ((params or {}).get("ladder") or {}).get("fingerprint") for rid, params in rows}


def delete_runs(session: Session, run_ids: Iterable[str]) -> int:
    """Delete the ladder runs ``run_ids`` with their predictions (a run of another kind is left alone);
    returns how many runs were deleted."""
    ids = sorted(set(run_ids))
    gone = 0
    for part in chunks(ids):
        mine = list(
            session.execute(sa.select(col(Run.id)).where(col(Run.id).in_(part), col(Run.kind) == KIND)).scalars()
        )
        if mine:
            session.execute(sa.delete(Prediction).where(col(Prediction.run_id).in_(mine)))
            session.execute(sa.delete(Run).where(col(Run.id).in_(mine)))
            gone += len(mine)
    return gone


def insert_run(
    session: Session,
    *,
    run_id: str,
    monitor: str,
    edition: str,
    params: dict[str, object],
    scores: list[tuple[str, float]],
) -> Run:
    """Insert a finished ladder run ``run_id`` of monitor ``monitor`` (backend ``ladder``) on ``edition`` with one
    prediction per ``(sample_id, score)``: outcome ``misbehavior`` when ``score >= 0.5`` (the ladder's flag),
    else ``benign``; ``score`` is P(misbehavior) in [0, 1]. The samples must exist (foreign key)."""
    mon = get_or_create_monitor(session, monitor, KIND, monitor.split(":", 1)[-1], None, match_backend=True)
    rows: list[dict[str, object]] = [
        {"sample_id": sid, "outcome": "misbehavior" if s >= 0.5 else "benign", "score": s} for sid, s in scores
    ]
    return insert_finished_run(
        session,
        run_id=run_id,
        monitor=mon,
        template="ladder",
        kind=KIND,
        status="finished",
        params=params,
        rows=rows,
        edition=edition,
    )
