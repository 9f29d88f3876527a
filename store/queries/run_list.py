"""The run list (``automonitor runs``, the app's run history, ``run_info``): SQLAlchemy Core over the light table
views of :mod:`store.tables`, so that a listing command imports neither the ORM, SQLModel nor
:mod:`store.models` (about half of its start-up). Works on a connection or a session, SQLite and PostgreSQL."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import sqlalchemy as sa

from automonitor.timestamps import as_utc, iso_utc
from automonitor.vocab import OUTCOMES
from store.tables import prediction, run

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Row
    from sqlalchemy.orm import Session
    from sqlalchemy.sql.elements import ColumnElement
    from typing_extensions import Unpack

    from store.queries.rowtypes import RunRow, UnscoredRow

__all__ = ["flagged_counts", "judged_outcome_counts", "list_runs", "unscored_details", "verdict_counts", "verdict_rows"]


def verdict_rows(table: sa.TableClause) -> ColumnElement[bool]:
    """The condition that selects a run's verdict rows of the prediction table ``table`` (the mapped table or
    :data:`store.tables.prediction`): repeat 0, and the pending predictions of every repeat (they keep a
    run unfinished)."""
    return sa.or_(table.c.repeat == 0, table.c.outcome.is_(None))


def list_runs(
    conn: Connection | Session,
    *,
    include_ladder: bool = False,
    with_counts: bool = True,
) -> list[RunRow]:
    """All runs, newest first, with counts per outcome (and ``pending``), tokens and cost (summed over
    judged predictions, so a running or killed run shows its progress), API calls, cache hits, duration
    in seconds (finished runs: first start to last finish, so the idle time between a run's sessions,
    ``--resume`` or ``--retry-errors``, is counted; not the time spent judging), subset limit, and ISO-8601 UTC ``created_at``/``started_at``/
    ``finished_at``. Used by ``automonitor runs`` and the app's run history. Generation runs
    (``kind='generation'``, ``automonitor generate``) are left out, the
    detector ladder's runs (``kind='ladder'``, written by ``automonitor build``) unless ``include_ladder``.
    ``conn``: a connection or a session (read as it is in the database: a session's unflushed changes are
    not seen). ``with_counts=False``: every row's ``counts`` left at zero, for a caller that reads none (the
    HTML report's provenance): one pass over every prediction less."""
    sel = sa.select(run).where(run.c.kind != "generation").order_by(run.c.created_at.desc(), run.c.id)
    if not include_ladder:
        sel = sel.where(run.c.kind != "ladder")
    runs = conn.execute(sel).all()
    counts = _verdict_counts_by_run(conn) if with_counts else {}
    sums = _judged_sums_by_run(conn)
    return [_run_row(r, counts.get(r.id), sums.get(r.id)) for r in runs]


def _empty_counts() -> dict[str, int]:
    return {**{o: 0 for o in OUTCOMES}, "pending": 0}


def _verdict_counts_by_run(conn: Connection | Session, run_ids: list[str] | None = None) -> dict[str, dict[str, int]]:
    """``{run_id: {outcome: n, ..., "pending": n}}`` over every run's verdict rows (repeat 0); ``run_ids``:
    only those runs' (a run without a row is absent)."""
    p = prediction.c
    # one row per run, a filtered count per outcome (the outcomes a prediction may hold, CHECK-constrained):
    # grouped by the run alone, SQLite walks the run index in order instead of sorting every row by
    # (run, outcome) in a temporary B-tree (301,000 rows of the 100-run bench store: 0.19 -> 0.10 s)
    per_outcome = [sa.func.count().filter(p.outcome == o) for o in OUTCOMES]
    sel = sa.select(p.run_id, *per_outcome, sa.func.count().filter(p.outcome.is_(None))).where(verdict_rows(prediction))
    if run_ids is not None and len(run_ids) <= _IN_LIST_MAX:
        sel = sel.where(p.run_id.in_(run_ids))
    wanted = None if run_ids is None else set(run_ids)
    counts: dict[str, dict[str, int]] = {}
    for run_id, *ns in conn.execute(sel.group_by(p.run_id)).all():
        if wanted is None or run_id in wanted:
            counts[run_id] = dict(zip((*OUTCOMES, "pending"), map(int, ns)))
    return counts


#: more run ids than this are filtered after one grouped scan of every run instead of in an ``IN`` list
_IN_LIST_MAX = 500


def verdict_counts(conn: Connection | Session, run_ids: list[str]) -> dict[str, dict[str, int]]:
    """``{run_id: {outcome: n, ..., "pending": n}}`` for each of ``run_ids``, in one grouped query: the
    counts ``store.queries.runs.outcome_counts`` gives one run at a time (every outcome, zeros included,
    over the run's verdict rows, and ``pending`` over the predictions of any repeat without an outcome); a
    run without predictions gets zeros. ``conn``: a connection or a session."""
    counts = _verdict_counts_by_run(conn, list(run_ids))
    return {rid: counts.get(rid) or _empty_counts() for rid in run_ids}


def judged_outcome_counts(conn: Connection | Session, run_ids: list[str]) -> dict[str, tuple[int, int, int]]:
    """``{run_id: (judged, errors, invalid)}`` for each of ``run_ids``: its verdict rows (repeat 0) with an outcome,
    those whose outcome is ``error`` and those whose outcome is ``invalid`` (what :func:`verdict_counts` gives as
    the sum of its outcomes, its ``error`` and its ``invalid``; zeros for a run without predictions). Grouped counts
    that SQLite answers from indexes: the repeat-0 rows from the (run, sample, repeat) key, less the few without an
    outcome, and the errors and invalid answers from the outcome index; :func:`verdict_counts` reads every row's outcome from the table (100-run bench store,
    301,000 rows: 0.15 -> 0.05 s). ``conn``: a connection or a session."""
    p = prediction.c
    ids = list(dict.fromkeys(run_ids))
    out = {rid: [0, 0, 0] for rid in ids}
    if not ids:
        return {}
    conds = [
        (0, 1, p.repeat == 0),  # (slot, sign, rows counted)
        (0, -1, sa.and_(p.repeat == 0, p.outcome.is_(None))),
        (1, 1, sa.and_(p.repeat == 0, p.outcome == "error")),
        (2, 1, sa.and_(p.repeat == 0, p.outcome == "invalid")),
    ]
    for slot, sign, cond in conds:
        sel = sa.select(p.run_id, sa.func.count()).where(cond)
        if len(ids) <= _IN_LIST_MAX:
            sel = sel.where(p.run_id.in_(ids))
        for rid, n in conn.execute(sel.group_by(p.run_id)).all():
            if rid in out:
                out[rid][slot] += sign * int(n)
    return {rid: (judged, errors, invalid) for rid, (judged, errors, invalid) in out.items()}


def _judged_sums_by_run(conn: Connection | Session) -> dict[str, tuple[int, int, float]]:
    """``{run_id: (tokens_in, tokens_out, cost_usd)}`` summed over each run's judged predictions."""
    p = prediction.c
    return {
        rid: (int(ti or 0), int(to or 0), float(c or 0.0))
        for rid, ti, to, c in conn.execute(
            sa.select(p.run_id, sa.func.sum(p.tokens_in), sa.func.sum(p.tokens_out), sa.func.sum(p.cost_usd))
            .where(p.outcome.is_not(None))
            .group_by(p.run_id)
        ).all()
    }


def _run_row(
    r: Row[Unpack[tuple[object, ...]]], counts: dict[str, int] | None, sums: tuple[int, int, float] | None
) -> RunRow:
    """One row of :func:`list_runs` from a ``run`` row; ``sums`` None (nothing judged yet) falls back to the
    run's totals."""
    tin, tout, cost = sums if sums is not None else (r.tokens_in, r.tokens_out, r.cost_usd or 0.0)
    dur = None
    if r.started_at and r.finished_at:
        dur = round((as_utc(r.finished_at) - as_utc(r.started_at)).total_seconds(), 3)
    params = r.params or {}
    return {  # a RunRow
        "run_id": r.id,
        "monitor": r.monitor,
        "template": r.template,
        "template_hash": r.template_hash,
        "status": r.status,
        "kind": r.kind,
        "n": r.n,
        "edition": r.edition,
        "view": params.get("view") or "full",  # the monitor view (CONTRACT round 4); runs before views: full
        "archived": bool(r.archived),
        "counts": counts if counts is not None else _empty_counts(),
        "api_calls": r.api_calls,
        "cache_hits": r.cache_hits,
        "tokens_in": tin,
        "tokens_out": tout,
        "cost_usd": round(cost, 6),
        # False when the run's model had no known price: cost_usd is then 0 and means "unknown"
        "price_known": bool((params.get("price") or {}).get("price_known", True)),
        "duration_s": dur,
        "base_url": params.get("base_url"),
        # how the judge's answers were read (``strict`` grammar or ``lenient`` heuristics; None: no text read)
        "parse": (params.get("config") or {}).get("parse"),
        "score_method": (params.get("config") or {}).get("score_method"),
        "limit": params.get("limit"),
        "controls": int(params.get("controls") or 0),  # benign-only control samples among the n judged
        "repeat": int((params.get("judge") or {}).get("repeat", 1) or 1),
        "created_at": iso_utc(r.created_at),
        "started_at": iso_utc(r.started_at),
        "finished_at": iso_utc(r.finished_at),
        "error": r.error,
        "lease": params.get("lease"),
    }


def _flagged(conn: Connection | Session, run_ids: list[str], flag: str) -> list[tuple[str, str]]:
    """``(run_id, sample_id)`` of the judged verdict rows (repeat 0) of ``run_ids`` whose ``meta[flag]`` is JSON
    ``true``: the database keeps only the rows whose meta text names the flag, the value is checked here."""
    p = prediction.c
    named = sa.cast(p.meta, sa.Text).contains(f'"{flag}"', autoescape=True)
    sel = sa.select(p.run_id, p.sample_id, p.meta).where(
        p.run_id.in_(run_ids), p.repeat == 0, p.outcome.is_not(None), named
    )
    return [
        (rid, sid) for rid, sid, meta in conn.execute(sel).all() if isinstance(meta, dict) and meta.get(flag) is True
    ]


def flagged_counts(conn: Connection | Session, run_ids: Iterable[str], flag: str) -> dict[str, int]:
    """``{run_id: n}``: how many of each run's judged verdict rows (repeat 0) carry the flag ``meta[flag]``
    as JSON ``true`` (``score_disagrees``); a run with none is absent. The database keeps only the rows whose
    meta text names the flag (any other value, a nested key, is checked here and not counted), so no row's
    meta is cast to a type it may not hold. ``conn``: a connection or a session; SQLite and PostgreSQL."""
    ids = list(run_ids)
    if not ids:
        return {}
    out: dict[str, int] = {}
    for rid, _sid in _flagged(conn, ids, flag):
        out[rid] = out.get(rid, 0) + 1
    return out


def flagged_samples(conn: Connection | Session, run_id: str, flag: str) -> list[str]:
    """The sample ids, sorted, of the run's judged verdict rows (repeat 0) that carry the flag ``meta[flag]`` as
    JSON ``true``: the rows :func:`flagged_counts` counts. ``conn``: a connection or a session; SQLite and
    PostgreSQL."""
    return sorted(sid for _rid, sid in _flagged(conn, [run_id], flag))


def unscored_details(
    conn: Connection | Session, run_ids: Iterable[str], reasons: Iterable[str] = ()
) -> list[UnscoredRow]:
    """``[{"run_id", "outcome", "reason", "meta"}]`` of the ``error`` predictions of ``run_ids`` and of
    the ``invalid`` ones whose reason is one of ``reasons`` (the rows a run's error share and unscored
    causes are read from). ``conn``: a connection or a session."""
    ids = list(run_ids)
    if not ids:
        return []
    p = prediction.c
    cond = p.outcome == "error"
    wanted = list(reasons)
    if wanted:
        cond = sa.or_(cond, sa.and_(p.outcome == "invalid", p.reason.in_(wanted)))
    rows = conn.execute(sa.select(p.run_id, p.outcome, p.reason, p.meta).where(p.run_id.in_(ids), cond)).all()
    return [{"run_id": r[0], "outcome": r[1], "reason": r[2], "meta": r[3] or {}} for r in rows]
