"""Queries of the workbench app (``automonitor.views``, ``automonitor.views``): the store's cache
fingerprint, a run's status, which samples each run judged, run archiving, and two runs' verdicts."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from automonitor.vocab import CONTROLS_SPLIT, RUN_STATUSES, RunStatus
from store.tables import prediction, run, sample

if TYPE_CHECKING:  # the reads are Core (the HTML report's provenance); archiving a run uses the ORM
    from sqlalchemy.orm import Session

#: Run statuses counted as in progress / as terminal by :func:`run_totals`.
ACTIVE_STATUSES: tuple[RunStatus, ...] = ("pending", "running")
TERMINAL_STATUSES: tuple[RunStatus, ...] = ("finished", "failed", "cancelled", "imported")
assert set(ACTIVE_STATUSES) | set(TERMINAL_STATUSES) == set(RUN_STATUSES)


def run_totals(conn: Connection | Session) -> tuple[int, datetime | str | None, int, int]:
    """``(runs, latest finished_at, active runs, terminal runs)`` over every run (one aggregate query;
    ``finished_at`` as the driver returns it: a ``datetime``, or a string on some SQLite setups)."""
    row = conn.execute(
        sa.select(
            sa.func.count(run.c.id),
            sa.func.max(run.c.finished_at),
            sa.func.sum(sa.case((run.c.status.in_(ACTIVE_STATUSES), 1), else_=0)),
            sa.func.sum(sa.case((run.c.status.in_(TERMINAL_STATUSES), 1), else_=0)),
        )
    ).one()
    return int(row[0] or 0), row[1], int(row[2] or 0), int(row[3] or 0)


def sample_totals(conn: Connection | Session) -> tuple[int, datetime | str | None]:
    """``(samples, latest created_at)`` over every sample (one aggregate query)."""
    row = conn.execute(sa.select(sa.func.count(sample.c.id), sa.func.max(sample.c.created_at))).one()
    return int(row[0] or 0), row[1]


def run_editions(conn: Connection, run_ids: Sequence[str] | None = None) -> list[tuple[str, str | None]]:
    """``(run_id, recorded edition or None)`` of the runs ``run_ids`` (``None`` = every run), store order."""
    q = sa.select(run.c.id, run.c.edition)
    if run_ids is not None:
        q = q.where(run.c.id.in_(list(run_ids)))
    return [(rid, edition) for rid, edition in conn.execute(q).all()]


def judged_test_samples(conn: Connection, run_ids: Sequence[str] | None = None) -> list[tuple[str, str, str | None]]:
    """``(run_id, sample_id, label_source)`` of every prediction of the runs ``run_ids`` (``None`` = every
    run), leaving out the controls slice (reported apart, as FAR on controls).

    As the inner join of the predictions with their samples where the sample's split is not
    ``CONTROLS_SPLIT`` (or is NULL), in no particular order; the prediction rows are read alone (the index holds
    both columns) and each distinct sample's split and label source looked up once: SQLite's per-row join
    lookup was two thirds of the query (90,300 rows of the 30-run benchmark store: 0.12 -> 0.05 s)."""
    from store.queries.analysis import fetch_tuples  # the driver's tuples: no Row per prediction

    q = sa.select(prediction.c.run_id, prediction.c.sample_id)
    if run_ids is not None:
        q = q.where(prediction.c.run_id.in_(list(run_ids)))
    rows: list[tuple[str, str]] = fetch_tuples(conn, q)  # type: ignore[arg-type,assignment]
    source = test_sample_sources(conn, {s: 0 for _, s in rows})
    return [(rid, sid, source[sid]) for rid, sid in rows if sid in source]


def other_repeat_samples(conn: Connection, run_ids: Sequence[str]) -> list[tuple[str, str]]:
    """``(run_id, sample_id)`` of the predictions of ``run_ids`` beyond repeat 0 (none unless a run was judged
    with ``--repeat K``): with the repeat-0 rows a caller has read already, the rows :func:`judged_test_samples`
    reads."""
    from store.queries.analysis import fetch_tuples  # the driver's tuples: no Row per prediction

    q = sa.select(prediction.c.run_id, prediction.c.sample_id).where(
        prediction.c.run_id.in_(list(run_ids)), prediction.c.repeat != 0
    )
    return fetch_tuples(conn, q)  # type: ignore[return-value]


def test_sample_sources(conn: Connection, sample_ids: Iterable[str]) -> dict[str, str | None]:
    """``{sample_id: label_source}`` of those of ``sample_ids`` that are in the store and not in the controls
    split (``CONTROLS_SPLIT``; a NULL split counts as not), each looked up once."""
    from store.queries import rows_by_ids

    return {
        sid: src
        for sid, split, src in rows_by_ids(
            conn, (sample.c.id, sample.c.split, sample.c.label_source), sample.c.id, sample_ids
        )
        if split is None or split != CONTROLS_SPLIT
    }


def set_run_archived(session: Session, run_id: str, archived: bool) -> bool:
    """Set a run's ``archived`` flag inside the caller's transaction; returns the previous state.
    Raises ``NotFound`` for an unknown run id."""
    from store.models import Run

    run = session.get(Run, run_id)
    if run is None:
        from automonitor.errors import NotFound

        raise NotFound(f"run {run_id!r} not found")
    before = bool(run.archived)
    run.archived = bool(archived)
    session.add(run)
    return before


def missing_runs(conn: Connection, run_ids: Sequence[str]) -> list[str]:
    """The ids of ``run_ids`` that name no run, in the given order."""
    found = set(conn.execute(sa.select(run.c.id).where(run.c.id.in_(list(run_ids)))).scalars())
    return [r for r in run_ids if r not in found]


def verdicts(conn: Connection, run_ids: Sequence[str]) -> list[tuple[str, str, str | None]]:
    """``(run_id, sample_id, outcome)`` of every prediction of the runs ``run_ids`` (every repeat)."""
    q = sa.select(prediction.c.run_id, prediction.c.sample_id, prediction.c.outcome).where(
        prediction.c.run_id.in_(list(run_ids))
    )
    return [(r, s, o) for r, s, o in conn.execute(q).all()]
