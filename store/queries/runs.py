"""Queries for monitor runs: monitors, runs, pending predictions, outcome counts, the judge cache.

Every function works inside the caller's session/transaction and on both SQLite and PostgreSQL.
"""

from __future__ import annotations

import functools
import json
import operator
from datetime import datetime, timezone
from typing import Callable, Iterable, Mapping, Sequence, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement
from sqlmodel import Session, col

from automonitor.errors import NotFound
from automonitor.vocab import OUTCOMES, VERDICT_FIELDS, RunKind, RunStatus
from automonitor.timestamps import iso_utc
from store.models import CacheEntry, Monitor, Prediction, Run, Sample, utcnow
from store.queries import SAMPLE_KEY, chunks, rows_by_ids, sample_columns, table_of, typed_rows
from store.queries.run_list import verdict_rows
from store.queries.rowtypes import (
    CachedVerdict,
    Example,
    RunTotals,
    SampleKey,
    SampleText,
    ViewInput,
)
from automonitor.jsontypes import JSONObject, JSONValue


def get_run(session: Session, run_id: str) -> Run:
    """The run ``run_id`` (in the caller's session).

    Raises:
        NotFound: no such run.
    """
    run = session.get(Run, run_id)
    if run is None:
        raise NotFound(f"no run {run_id!r}")
    return run


#: the columns of a judge-cache entry: a verdict's fields (:data:`automonitor.vocab.VERDICT_FIELDS`) and ``meta``
CACHE_FIELDS = (*VERDICT_FIELDS, "meta")


def get_or_create_monitor(
    session: Session,
    name: str,
    backend: str,
    model: str | None,
    base_url: str | None,
    meta: Mapping[str, JSONValue] | None = None,
    *,
    match_backend: bool = False,
) -> Monitor:
    """The ``Monitor`` row for (name, base_url), created (and flushed, so its id is set) when missing; with
    ``match_backend`` only a row of that ``backend`` matches (the derived and external monitors).

    The database holds one row per name and base URL, a NULL base URL counting as one value (index
    ``uq_monitor_name_url_any``, migration r12). A concurrent creator that committed the same row first makes
    the insert fail: the insert runs in a savepoint, which is rolled back, and the other creator's row is
    returned. Raises ``sqlalchemy.exc.IntegrityError`` when the row in the way is of another backend
    (``match_backend``): the caller names the conflict."""

    def find(backend_too: bool) -> Monitor | None:
        q = sa.select(Monitor).where(col(Monitor.name) == name)
        if backend_too:
            q = q.where(col(Monitor.backend) == backend)
        q = q.where(col(Monitor.base_url).is_(None)) if base_url is None else q.where(col(Monitor.base_url) == base_url)
        return session.execute(q.execution_options(populate_existing=True)).scalars().first()

    mon = find(match_backend)
    if mon is not None:
        return mon
    mon = Monitor(name=name, backend=backend, model=model, base_url=base_url, meta=dict(meta or {}))
    try:
        with session.begin_nested():
            session.add(mon)
            session.flush()
    except sa.exc.IntegrityError:
        other = find(match_backend)
        if other is None:
            raise
        return other
    return mon


def add_run(
    session: Session,
    monitor: Monitor,
    *,
    run_id: str,
    template: str,
    template_hash: str | None = None,
    kind: RunKind,
    status: RunStatus,
    params: Mapping[str, object],
    n: int = 0,
    edition: str | None = None,
) -> Run:
    """Insert the run ``run_id`` of ``kind`` in ``status`` over ``n`` items by ``monitor`` (a flushed row: the run
    takes its id and name) and return it, inside the caller's transaction; without ``edition``, the column's default.
    A measured or generation run starts ``pending``; :func:`store.queries.analysis.insert_finished_run` writes
    one that is over when written.

    Raises:
        ValueError: ``monitor`` was not flushed (no id).
    """
    if monitor.id is None:
        raise ValueError("the monitor row must be flushed (have an id) before its run is inserted")
    run = Run(
        id=run_id,
        monitor_id=monitor.id,
        monitor=monitor.name,
        template=template,
        template_hash=template_hash,
        status=status,
        kind=kind,
        n=n,
        params=dict(params),
    )
    if edition is not None:
        run.edition = edition
    session.add(run)
    return run


def test_samples(session: Session, edition: str | None = None) -> list[SampleKey]:
    """Gold test samples as dicts (id, pair_id, category, task, label, content_hash), id order: the
    ``paper`` mirror (no adjudicated sample), or with ``edition`` that edition's members
    (``store.queries.samples.edition_filter``)."""
    if edition is not None:
        from store.queries.samples import edition_filter

        conds = edition_filter(session, edition)
    else:
        conds = [col(Sample.split) == "test", col(Sample.status) == "gold", col(Sample.label_source) != "adjudicated"]
    rows = session.execute(
        sa.select(*sample_columns(*SAMPLE_KEY, "content_hash")).where(*conds).order_by(col(Sample.id))
    ).all()
    return typed_rows(rows, SampleKey)


def sample_texts(session: Session | Connection, ids: list[str]) -> dict[str, SampleText]:
    """``{sample_id: {request, response, content_hash, source, meta}}`` for ``ids`` (a session or a connection)."""
    return {
        r.id: SampleText(
            request=r.request,
            response=r.response,
            content_hash=r.content_hash,
            source=r.source or "",
            meta=r.meta or {},
        )
        for r in rows_by_ids(
            session, sample_columns("id", "request", "response", "content_hash", "source", "meta"), col(Sample.id), ids
        )
    }


def view_inputs(session: Session, ids: list[str]) -> list[ViewInput]:
    """``[{id, response, source, meta, request}]`` for ``ids`` (id order): what a monitor view is cut from
    (the request: which words are the question's, for the silent rule)."""
    rows = rows_by_ids(session, sample_columns("id", "response", "source", "meta", "request"), col(Sample.id), ids)
    return sorted(
        (ViewInput(id=r[0], response=r[1], source=r[2] or "", meta=r[3] or {}, request=r[4]) for r in rows),
        key=lambda d: d["id"],
    )


def train_examples(session: Session) -> list[Example]:
    """Gold train-split samples (id, request, response, label, category, source, meta) for few-shot prompts
    (source and meta: to render an example under a monitor view)."""
    rows = session.execute(
        sa.select(*_example_columns()).where(col(Sample.split) == "train", col(Sample.status) == "gold")
    ).all()
    return typed_rows(rows, Example)


def fewshot_samples(session: Session, ids: list[str]) -> dict[str, Example]:
    """``{sample_id: {request, response, label, category, source, meta}}`` of those of ``ids`` that are in the
    store (a run's recorded few-shot examples); missing ids are simply absent."""
    return {r["id"]: r for r in typed_rows(rows_by_ids(session, _example_columns(), col(Sample.id), ids), Example)}


def _example_columns() -> list[sa.Column[object]]:
    """The sample columns of a few-shot example (:func:`train_examples`, :func:`fewshot_samples`)."""
    return sample_columns("id", "request", "response", "label", "category", "source", "meta")


def prediction_samples(session: Session, prediction_ids: Iterable[int]) -> dict[int, str]:
    """``{prediction_id: sample_id}`` for ``prediction_ids`` (ids not in the store are absent)."""
    return {
        int(r[0]): r[1]
        for r in rows_by_ids(
            session, [col(Prediction.id), col(Prediction.sample_id)], col(Prediction.id), prediction_ids
        )
    }


def insert_pending(session: Session, run_id: str, sample_ids: Iterable[str], repeats: int = 1) -> int:
    """``repeats`` pending predictions (outcome NULL; repeat 0..repeats-1) per sample. Returns the
    number inserted."""
    now = utcnow()
    rows: list[dict[str, object]] = [
        {
            "run_id": run_id,
            "sample_id": sid,
            "repeat": k,
            "outcome": None,
            "evidence": [],
            "meta": {},
            "tokens_in": 0,
            "tokens_out": 0,
            "cost_usd": 0.0,
            "cached": False,
            "created_at": now,
        }
        for k in range(max(1, int(repeats)))
        for sid in sample_ids
    ]
    for part in chunks(rows, 2000):
        session.execute(sa.insert(Prediction), list(part))
    return len(rows)


def pending_predictions(session: Session, run_id: str) -> list[tuple[int, str, int]]:
    """``[(prediction_id, sample_id, repeat)]`` of the run's predictions without an outcome, by id."""
    rows = session.execute(
        sa.select(col(Prediction.id), col(Prediction.sample_id), col(Prediction.repeat))
        .where(col(Prediction.run_id) == run_id, col(Prediction.outcome).is_(None))
        .order_by(col(Prediction.id))
    ).all()
    return [(r.id, r.sample_id, int(r.repeat or 0)) for r in rows]


def pending_history(session: Session, run_id: str) -> dict[int, list[JSONObject]]:
    """``{prediction_id: meta["history"]}`` of pending predictions that hold earlier attempts
    (``run --retry-errors``); the new verdict keeps them. Only the rows whose ``meta`` text names a
    ``"history"`` key are read and decoded (every JSON text of an object with that key holds it), not
    every pending prediction's ``meta`` (a fresh run's are all empty)."""
    out: dict[int, list[JSONObject]] = {}
    named = sa.cast(col(Prediction.meta), sa.Text).like('%"history"%')
    for pid, meta in session.execute(
        sa.select(col(Prediction.id), col(Prediction.meta)).where(
            col(Prediction.run_id) == run_id, col(Prediction.outcome).is_(None), named
        )
    ).all():
        if meta and meta.get("history"):
            out[pid] = list(meta["history"])
    return out


def reset_errors(session: Session, run_id: str, outcomes: Iterable[str] = ("error",)) -> int:
    """Make every prediction of the run whose outcome is in ``outcomes`` (default ``error``) pending
    again, moving its earlier attempt (outcome, reason, raw, error kind, attempts, tokens, cost,
    judged_at) into ``meta["history"]`` (oldest first). The cache entries those predictions were
    served from or stored under (``meta.cache_key``) are deleted, so the next execution asks the judge
    again. Returns the number reset."""
    rows = (
        session.execute(
            sa.select(Prediction).where(col(Prediction.run_id) == run_id, col(Prediction.outcome).in_(list(outcomes)))
        )
        .scalars()
        .all()
    )
    stale = sorted({str(k) for p in rows if p.outcome != "error" and (k := (p.meta or {}).get("cache_key"))})
    for part in chunks(stale, 500):
        session.execute(sa.delete(CacheEntry).where(col(CacheEntry.key).in_(part)))
    for p in rows:
        meta = dict(p.meta or {})
        history = list(meta.pop("history", []) or [])
        history.append(
            {
                "outcome": p.outcome,
                "reason": p.reason,
                "raw": p.raw,
                "error_kind": meta.get("error_kind"),
                "status": meta.get("status"),
                "attempts": meta.get("attempts"),
                "retried_after": meta.get("retried_after"),
                "tokens_in": p.tokens_in,
                "tokens_out": p.tokens_out,
                "cost_usd": p.cost_usd,
                "latency_ms": p.latency_ms,
                "judged_at": iso_utc(p.judged_at),
            }
        )
        p.meta = {"history": history}
        p.outcome = None
        p.reason = p.raw = None
        p.score = None
        p.evidence = []
        p.tokens_in = p.tokens_out = 0
        p.cost_usd = 0.0
        p.latency_ms = None
        p.judged_at = None
        session.add(p)
    return len(rows)


def restore_unsent(session: Session, run_id: str, ids: Iterable[int]) -> int:
    """Undo :func:`reset_errors` for the predictions ``ids`` of the run that are still pending: each gets back
    its last earlier attempt (popped from ``meta["history"]``: outcome, reason, raw, error kind, HTTP status,
    attempts, tokens, cost, latency, judged_at), with ``meta.not_resent`` True. For a retry that was never sent
    (the execution stopped before their turn): they are again what they were, not pending. A prediction
    without history or with an outcome is left alone. Returns the number restored."""
    wanted = sorted(set(ids))
    n = 0
    for part in chunks(wanted, 500):
        rows = (
            session.execute(
                sa.select(Prediction).where(
                    col(Prediction.run_id) == run_id, col(Prediction.id).in_(part), col(Prediction.outcome).is_(None)
                )
            )
            .scalars()
            .all()
        )
        for p in rows:
            history = list((p.meta or {}).get("history") or [])
            if not history:
                continue
            last = dict(history.pop())
            meta: dict[str, JSONValue] = {
                k: last[k] for k in ("error_kind", "status", "attempts", "retried_after") if last.get(k) is not None
            }
            meta["not_resent"] = True
            if history:
                meta["history"] = history
            p.outcome = cast(str, last.get("outcome"))
            p.reason, p.raw = last.get("reason"), last.get("raw")
            p.tokens_in, p.tokens_out = int(last.get("tokens_in") or 0), int(last.get("tokens_out") or 0)
            p.cost_usd = float(last.get("cost_usd") or 0.0)
            p.latency_ms = last.get("latency_ms")
            judged = last.get("judged_at")
            p.judged_at = datetime.fromisoformat(judged) if isinstance(judged, str) else utcnow()
            p.meta = meta
            session.add(p)
            n += 1
    return n


_VERDICT_ROWS = verdict_rows(table_of(Prediction))


def outcome_counts(session: Session, run_id: str) -> dict[str, int]:
    """``{outcome: count}`` over all outcomes (zeros included) of the run's verdicts (repeat 0) plus
    ``pending`` (predictions of any repeat without an outcome)."""
    counts = {o: 0 for o in OUTCOMES}
    counts["pending"] = 0
    for outcome, n in session.execute(
        sa.select(col(Prediction.outcome), sa.func.count())
        .where(col(Prediction.run_id) == run_id, _VERDICT_ROWS)
        .group_by(col(Prediction.outcome))
    ).all():
        counts[outcome if outcome is not None else "pending"] = int(n)
    return counts


def run_totals(session: Session, run_id: str) -> RunTotals:
    """Sums over the run's judged predictions: tokens_in, tokens_out, cost_usd, n_cached."""
    r = session.execute(
        sa.select(
            sa.func.coalesce(sa.func.sum(col(Prediction.tokens_in)), 0),
            sa.func.coalesce(sa.func.sum(col(Prediction.tokens_out)), 0),
            sa.func.coalesce(sa.func.sum(col(Prediction.cost_usd)), 0.0),
        ).where(col(Prediction.run_id) == run_id, col(Prediction.outcome).is_not(None))
    ).one()
    return RunTotals(tokens_in=int(r[0]), tokens_out=int(r[1]), cost_usd=float(r[2]))


def cache_lookup(session: Session | Connection, keys: list[str]) -> dict[str, CachedVerdict]:
    """``{key: cached verdict fields}`` for the keys present in the cache."""
    t = table_of(CacheEntry)
    cols = [t.c.key, *(t.c[f] for f in CACHE_FIELDS)]
    return {r.key: dict(zip(CACHE_FIELDS, r[1:])) for r in rows_by_ids(session, cols, t.c.key, keys)}


def _connection(session: Session | Connection) -> Connection:
    """The connection a write runs on: ``session``'s (inside its transaction) or ``session`` itself."""
    return session if isinstance(session, Connection) else session.connection()


#: rows (column -> Python value) -> the driver's parameters for them (tuples or dicts)
DriverParams = Callable[[Sequence[Mapping[str, object]]], list[object]]
#: (statement name, its parameters: dialect or column names) -> the statement, built once
_STMT_CACHE: dict[tuple[str | tuple[str, ...], ...], object] = {}


def _driver_statement(
    session: Session | Connection,
    name: str,
    build: Callable[[], ClauseElement],
    binds: Callable[[], dict[str, tuple[str, sa.Column[object]]]],
    columns: tuple[str, ...],
) -> tuple[str, DriverParams]:
    """The statement ``build()`` compiled once per dialect and column set for :func:`_run_many`: its SQL
    text and a function turning rows (dicts of column -> Python value; a missing column is ``None``)
    into the driver's parameters (a tuple per row for a positional paramstyle such as SQLite's ``?``, else a
    dict), each value passed through its column type's bind processor (JSON serialised, SQLite datetimes
    and booleans formatted): what SQLAlchemy would send for the same statement, without its per-row work.
    ``binds()`` maps each bind name of the statement to (the row's key, its column); ``columns`` names the
    row keys the statement binds (with ``name``, what it is cached under: both are built once)."""
    dialect = session.dialect if isinstance(session, Connection) else session.get_bind().dialect
    key = ("driver", name, dialect.name, columns)
    if key not in _STMT_CACHE:
        compiled = cast(SQLCompiler, build().compile(dialect=dialect))
        bound = binds()
        order = list(compiled.positiontup or ()) if compiled.positional else list(bound)
        plan = [(b, bound[b][0], _bind_processor(bound[b][1], dialect)) for b in order]
        names = [b for b, _, _ in plan]
        width = len({k for _, k, _ in plan})
        # a row holding every key (the writer's rows do) is read in one C call; itemgetter of one key
        # returns the value itself, not a 1-tuple, so a one-key plan reads row by row
        whole = operator.itemgetter(*[k for _, k, _ in plan]) if width == len(plan) > 1 else None

        def params(rows: Sequence[Mapping[str, object]]) -> list[object]:
            if whole is not None and all(len(r) == width for r in rows):
                read: list[Sequence[object]] = list(zip(*map(whole, rows)))
            else:  # a missing key is None
                read = [[r.get(k) for r in rows] for _, k, _ in plan]
            # column by column: one pass of each bind processor over the rows
            columns = [values if proc is None else list(map(proc, values)) for (_, _, proc), values in zip(plan, read)]
            if compiled.positional:
                return list(zip(*columns))
            return [dict(zip(names, vals)) for vals in zip(*columns)]

        _STMT_CACHE[key] = (compiled.string, params)
    return cast(tuple[str, DriverParams], _STMT_CACHE[key])


#: ``json.dumps(value)`` with its default settings (what SQLAlchemy's JSON type serialises with), its C
#: encoder made once instead of once per call; None where the json module has no C accelerator
_JSON_ENCODER = (
    json.encoder.c_make_encoder(  # type: ignore[attr-defined]
        None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True
    )
    if getattr(json.encoder, "c_make_encoder", None) is not None
    else None
)


#: datetimes a SQLite datetime processor is checked on before :func:`_sqlite_utc_processor` stands in for it
_UTC_PROBES = (
    datetime(2026, 12, 5, 16, 20, 1, 123456, tzinfo=timezone.utc),
    datetime(2026, 1, 2, 3, 4, 5, 0, tzinfo=timezone.utc),
    datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc),
    datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc),
)


def _utc_text(value: datetime) -> str:
    """``value`` (aware, UTC) as SQLite's default DATETIME storage text, ``YYYY-MM-DD HH:MM:SS.ffffff``."""
    return value.isoformat(" ", "microseconds")[:26]


def _formats_utc_like(proc: Callable[[object], object]) -> bool:
    """Whether the bind processor ``proc`` turns every probe UTC datetime into :func:`_utc_text`'s text
    (an aware-UTC datetime column on SQLite with the default storage format); False if it raises."""
    try:
        return all(proc(v) == _utc_text(v) for v in _UTC_PROBES)
    except Exception:  # noqa: BLE001 - not a datetime column
        return False


def _sqlite_utc_processor(proc: Callable[[object], object]) -> Callable[[object], object]:
    """``proc`` (checked by :func:`_formats_utc_like`) with its commonest input, a datetime in
    ``timezone.utc`` (:func:`store.models.utcnow`), formatted by one ``isoformat`` call instead of the
    type decorator's conversion and the dialect's ``%`` formatting: the same text; any other value
    (``None``, another time zone, a naive datetime, which the column refuses) goes to ``proc``."""
    utc = timezone.utc

    def process(value: object) -> object:
        if type(value) is datetime and value.tzinfo is utc:
            return value.isoformat(" ", "microseconds")[:26]
        return proc(value)

    return process


def _bind_processor(column: sa.Column[object], dialect: sa.Dialect) -> Callable[[object], object] | None:
    """``column``'s bind processor on ``dialect``; for a JSON column on SQLite with the default serializer,
    one that serialises dicts and lists with :data:`_JSON_ENCODER` (the same text as ``json.dumps``, the
    writer's commonest per-row work) and leaves every other value (``None``, SQL NULL) to SQLAlchemy's; for
    an aware-UTC datetime column on SQLite, :func:`_sqlite_utc_processor` (the same text)."""
    impl = column.type.dialect_impl(dialect)
    proc = impl.bind_processor(dialect)
    plain = (
        isinstance(impl, sa.JSON)
        and dialect.name == "sqlite"
        and getattr(dialect, "_json_serializer", None) is None
        and impl._str_impl.bind_processor(dialect) is None
    )
    if proc is not None and dialect.name == "sqlite" and _formats_utc_like(proc):
        return _sqlite_utc_processor(proc)
    if proc is None or _JSON_ENCODER is None or not plain:
        return proc
    encode, sqla = _JSON_ENCODER, proc

    def process(value: object) -> object:
        if type(value) is dict or type(value) is list:
            return "".join(encode(value, 0))
        return sqla(value)

    return process


def _run_many(session: Session | Connection, sql: str, params: list[object]) -> None:
    """One driver-level ``executemany`` of ``sql`` over ``params`` on the session's connection (inside its
    transaction), or on ``session`` when it is a connection: no per-row SQLAlchemy parameter handling, the
    rows already in the driver's form.

    On a connection inside a transaction it began (the runner's store writer: its own connection, several
    statements a commit, some 200 commits a job), the statement goes straight to a cursor of the connection's
    DBAPI connection, in that transaction: the same driver call ``exec_driver_sql`` makes, without building
    SQLAlchemy's execution context for each statement; a driver error is raised wrapped as
    ``exec_driver_sql`` raises it (:meth:`sqlalchemy.exc.DBAPIError.instance`: ``IntegrityError``,
    ``OperationalError``, ...)."""
    one = cast("Sequence[object] | Mapping[str, object]", params[0])
    if not (isinstance(session, Connection) and session.in_transaction()):
        _connection(session).exec_driver_sql(sql, params if len(params) > 1 else one)
        return
    dialect = session.dialect
    try:
        cursor = session.connection.cursor()
        try:
            if len(params) > 1:
                cursor.executemany(sql, cast("Sequence[Sequence[object]] | Sequence[Mapping[str, object]]", params))
            else:
                cursor.execute(sql, one)
        finally:
            cursor.close()
    except dialect.loaded_dbapi.Error as exc:
        raise sa.exc.DBAPIError.instance(
            sql,
            params if len(params) > 1 else one,
            exc,
            dialect.loaded_dbapi.Error,
            hide_parameters=session.engine.hide_parameters,
            dialect=dialect,
            ismulti=len(params) > 1,
        ) from exc


def _cache_insert_stmt(dialect: str, columns: tuple[str, ...]) -> ClauseElement:
    """``INSERT INTO cache_entry (columns) ... ON CONFLICT (key) DO NOTHING`` for ``dialect``, one bind per column."""
    t = table_of(CacheEntry)
    values: dict[str, sa.BindParameter[object]] = {c: sa.bindparam(c) for c in columns}
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(t).values(values).on_conflict_do_nothing(index_elements=["key"])
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(t).values(values).on_conflict_do_nothing(index_elements=["key"])


def _cache_entry_binds(cols: tuple[str, ...]) -> dict[str, tuple[str, sa.Column[object]]]:
    """``{column: (column, the cache_entry table's column)}``: binds named as the row keys and the columns
    they fill."""
    t = table_of(CacheEntry)
    return {c: (c, t.c[c]) for c in cols}


def cache_insert(session: Session | Connection, rows: Sequence[Mapping[str, object]]) -> None:
    """Insert cache entries, ignoring keys that already exist (concurrent runs may race); ``session`` is a
    session or a connection (the runner's writer: its own, inside its transaction).

    One driver-level ``INSERT ... ON CONFLICT DO NOTHING`` executemany per set of columns on the session's
    connection, its parameters prepared as tuples by the columns' own bind processors (the same columns,
    types and stored values as a Core insert, without its per-row work; :func:`_driver_statement`)."""
    if not rows:
        return
    conn = _connection(session)
    dialect = conn.dialect.name
    if dialect in ("postgresql", "sqlite"):
        groups: dict[tuple[str, ...], list[Mapping[str, object]]] = {}
        for r in rows:
            groups.setdefault(tuple(r), []).append(r)
        for cols, part in groups.items():
            sql, params = _driver_statement(
                session,
                "cache_insert",
                functools.partial(_cache_insert_stmt, dialect, cols),
                functools.partial(_cache_entry_binds, cols),
                cols,
            )
            _run_many(conn, sql, params(part))
        return
    have = set(cache_lookup(session, [str(r["key"]) for r in rows]))  # pragma: no cover - other dialects
    rows = [r for r in rows if r["key"] not in have]
    if rows:
        conn.execute(sa.insert(table_of(CacheEntry)), rows)


def update_predictions(session: Session | Connection, rows: Sequence[Mapping[str, object]]) -> None:
    """Bulk UPDATE of predictions by primary key (``rows`` are dicts with ``id`` and columns; a column
    that one row names and another lacks is set to ``None`` in the other). Only rows still pending are
    changed, so a result can never overwrite an earlier one. One driver-level executemany, the statement
    compiled once per column set and the parameters prepared as tuples (:func:`_driver_statement`; the
    writer calls this many times per second, on its own connection: ``session`` may be a connection)."""
    if not rows:
        return
    keys = tuple(sorted({k for r in rows for k in r if k != "id"}))
    t = table_of(Prediction)

    def build() -> ClauseElement:
        return (
            sa.update(t)
            .where(t.c.id == sa.bindparam("id"), t.c.outcome.is_(None))
            .values({k: sa.bindparam(f"v_{k}") for k in keys})
        )

    def binds() -> dict[str, tuple[str, sa.Column[object]]]:
        return {"id": ("id", t.c.id), **{f"v_{k}": (k, t.c[k]) for k in keys}}

    sql, params = _driver_statement(session, "update_predictions", build, binds, keys)
    _run_many(session, sql, params(rows))


def add_run_counters(session: Session | Connection, run_id: str, *, api_calls: int = 0, cache_hits: int = 0) -> None:
    """Atomically add to the run's cumulative api_calls and cache_hits (``session``: a session or a
    connection). One driver-level statement compiled once per dialect (:func:`_driver_statement`; the
    writer runs it with every commit): no statement cache key computed per call."""
    if api_calls or cache_hits:
        t = table_of(Run)

        def build() -> ClauseElement:
            return (
                sa.update(t)
                .where(t.c.id == sa.bindparam("_rid"))
                .values(
                    api_calls=t.c.api_calls + sa.bindparam("_calls"), cache_hits=t.c.cache_hits + sa.bindparam("_hits")
                )
            )

        def binds() -> dict[str, tuple[str, sa.Column[object]]]:
            return {"_rid": ("_rid", t.c.id), "_calls": ("_calls", t.c.api_calls), "_hits": ("_hits", t.c.cache_hits)}

        sql, params = _driver_statement(session, "add_run_counters", build, binds, ("_rid", "_calls", "_hits"))
        _run_many(session, sql, params([{"_rid": run_id, "_calls": api_calls, "_hits": cache_hits}]))


def find_equivalent_run(
    session: Session,
    *,
    monitor: str,
    template: str,
    template_hash: str,
    base_url: str | None,
    judge: Mapping[str, object],
    fewshot: list[str],
    sample_ids: list[str],
    config: Mapping[str, object] | None = None,
    view: str = "full",
) -> str | None:
    """The newest measured run with the same monitor view (``params["view"]``, ``full`` when absent), monitor, template hash, base URL, judge parameters,
    backend configuration (``Backend.cache_params()``, e.g. model file, calibration; a run recorded
    without one never matches a non-empty ``config``), few-shot examples and exactly ``sample_ids``
    (or ``None``). Finished runs are preferred."""
    cands: Sequence[Run] = (
        session.execute(
            sa.select(Run)
            .where(
                col(Run.monitor) == monitor,
                col(Run.template) == template,
                col(Run.template_hash) == template_hash,
                col(Run.kind) == "measured",
                col(Run.n) == len(sample_ids),
            )
            .order_by((col(Run.status) == "finished").desc(), col(Run.created_at).desc())
        )
        .scalars()
        .all()
    )
    want = set(sample_ids)
    for run in cands:
        p = run.params or {}
        if (
            p.get("base_url") != base_url
            or (p.get("view") or "full") != view
            or (p.get("judge") or {}) != judge
            or (p.get("config") or {}) != (config or {})
            or list(p.get("fewshot") or []) != list(fewshot)
        ):
            continue
        have = set(
            session.execute(sa.select(col(Prediction.sample_id)).where(col(Prediction.run_id) == run.id)).scalars()
        )
        if have == want:
            return run.id
    return None
