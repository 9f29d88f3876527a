"""Queries for generation runs (``Run.kind == 'generation'``; the pending run is inserted like any other, by
:func:`store.queries.runs.add_run`): its progress and end, the candidate samples a kept item adds, the
list of runs.

Every function works inside the caller's session/transaction and on both SQLite and PostgreSQL. No
domain rule lives here: the core (``automonitor.runs.generation``) decides what to write.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Mapping, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlmodel import Session, col

from automonitor.vocab import RunStatus
from store.models import Run, Sample, utcnow
from store.queries.rowtypes import GenerationStats


def get_generation_run(session: Session, run_id: str) -> Run | None:
    """The generation run ``run_id``, or ``None`` when there is none (or it is not a generation run)."""
    run = session.get(Run, run_id)
    return run if run is not None and run.kind == "generation" else None


def mark_running(session: Session, run: Run, pid: int) -> None:
    """Set ``run`` running now, its executing process id in ``params['pid']``."""
    run.status, run.started_at = "running", utcnow()
    run.params = {**run.params, "pid": pid}
    session.add(run)


def run_status(session: Session | Connection, run_id: str) -> str | None:
    """The status of run ``run_id`` (``None`` when there is no such run); ``session`` may be a connection."""
    return session.execute(sa.select(col(Run.status)).where(col(Run.id) == run_id)).scalar()


def save_progress(
    session: Session,
    run_id: str,
    stats: GenerationStats,
    items: Sequence[Mapping[str, object]],
    done: int,
    total: int,
) -> None:
    """Store a generation run's statistics, transcripts and progress in ``params`` and its call
    totals in the run's columns (``stats``: ``calls``, ``cache_hits``, ``tokens_in``, ``tokens_out``,
    ``cost_usd``). No-op when the run is gone."""
    run = session.get(Run, run_id)
    if run is None:
        return
    run.params = {
        **run.params,
        "stats": json.loads(json.dumps(stats)),
        "items": items,
        "progress": {"done": done, "total": total},
    }
    run.api_calls, run.cache_hits = stats["calls"], stats["cache_hits"]
    run.tokens_in, run.tokens_out, run.cost_usd = stats["tokens_in"], stats["tokens_out"], stats["cost_usd"]
    session.add(run)


def finish_run(session: Session, run_id: str, status: RunStatus, error: str | None = None) -> None:
    """End a run with ``status`` (a cancelled run stays ``cancelled`` when ``status`` is ``finished``),
    the finish time and ``error``. No-op when the run is gone."""
    run = session.get(Run, run_id)
    if run is None:
        return
    if run.status == "cancelled" and status == "finished":
        status = "cancelled"
    run.status, run.finished_at, run.error = status, utcnow(), error
    session.add(run)


def insert_new_samples(session: Session, rows: Sequence[dict[str, Any]]) -> bool:
    """Insert ``rows`` (``Sample`` column dicts) unless a sample with the same request and response
    hashes as any of them exists; returns whether they were inserted."""
    same = [
        sa.and_(col(Sample.request_hash) == r["request_hash"], col(Sample.response_hash) == r["response_hash"])
        for r in rows
    ]
    if session.execute(sa.select(col(Sample.id)).where(sa.or_(*same)).limit(1)).first() is not None:
        return False
    session.execute(sa.insert(Sample), list(rows))
    return True


def generation_runs(session: Session) -> list[tuple[str, datetime | None, datetime | None, datetime | None]]:
    """``(run id, created_at, started_at, finished_at)`` of every generation run, newest first (ties by id)."""
    q = (
        sa.select(col(Run.id), col(Run.created_at), col(Run.started_at), col(Run.finished_at))
        .where(col(Run.kind) == "generation")
        .order_by(col(Run.created_at).desc(), col(Run.id))
    )
    return [(r, c, b, f) for r, c, b, f in session.execute(q).all()]
