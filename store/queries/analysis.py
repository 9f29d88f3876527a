"""Queries for the analysis: runs, predictions joined with samples, sample texts, imported runs.

The reads select on :mod:`store.tables`' Core views (a report imports neither the ORM nor
:mod:`store.models`); the writes of imported, ladder and derived runs import the models when called.
"""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from automonitor.vocab import RunKind, RunStatus

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from automonitor.errors import NotFound
from automonitor.jsontypes import JSONValue
from store.queries.composition import meta_names
from store.tables import prediction, run, sample
from store.queries import chunks as _chunks, insert_rows, rows_by_ids

if TYPE_CHECKING:  # pandas and NumPy load with the frame readers, not with the writes (a build's ladder runs)
    import numpy as np
    import pandas as pd
    from sqlmodel import Session

    from store.models import Monitor, Run

#: the columns :func:`load_predictions` adds to a prediction from its run and from its sample
RUN_JOINED = ("monitor", "template", "kind")
SAMPLE_JOINED = ("pair_id", "category", "task", "label")
RUN_COLUMNS = ["run_id", "monitor", "template", "kind", "status", "n", "params", "created_at"]
LIGHT_COLUMNS = ["run_id", "sample_id", "pair_id", "category", "task", "label", "outcome", "score", "evidence"]
PREDICTION_COLUMNS = [
    "run_id",
    "monitor",
    "template",
    "kind",
    *LIGHT_COLUMNS[1:],
    "raw",
    "reason",
    "pred_category",
    "severity",
]


def load_runs(engine: Engine, run_ids: Sequence[str] | None = None, *, include_ladder: bool = False) -> pd.DataFrame:
    """Runs in the store (all, or ``run_ids`` in that order), oldest first. Without ``run_ids`` the runs
    that judge nothing (kind ``generation``) are left out, and so are the detector ladder's (kind
    ``ladder``, written by the build) unless ``include_ladder``; named runs are returned whatever their kind.

    Columns: run_id, monitor, template, kind, status, n, params, created_at.
    Raises ``NotFound`` naming the first id in ``run_ids`` that does not exist.
    """
    import pandas as pd

    cols = (run.c.id, run.c.monitor, run.c.template, run.c.kind, run.c.status, run.c.n, run.c.params, run.c.created_at)
    q = sa.select(*cols).order_by(run.c.created_at, run.c.id)
    with engine.connect() as c:
        if run_ids:
            rows = rows_by_ids(c, cols, run.c.id, run_ids)  # in the order of run_ids below
        else:
            hidden = ["generation"] if include_ladder else ["generation", "ladder"]  # generation runs judge nothing
            rows = list(c.execute(q.where(run.c.kind.not_in(hidden))).all())
    df = pd.DataFrame([tuple(r) for r in rows], columns=RUN_COLUMNS)
    if run_ids:
        missing = [r for r in run_ids if r not in set(df["run_id"])]
        if missing:
            raise NotFound(f"run '{missing[0]}' not found")
        order = {r: i for i, r in enumerate(dict.fromkeys(run_ids))}
        df = df.sort_values("run_id", key=lambda s: s.map(order)).reset_index(drop=True)
    return df


def recorded_editions(engine: Engine, run_ids: Sequence[str]) -> dict[str, str | None]:
    """``{run_id: the edition it recorded, None when none}`` for the given runs (unknown ids are left out)."""
    with engine.connect() as c:
        rows = rows_by_ids(c, (run.c.id, run.c.edition), run.c.id, run_ids)
    return {rid: ed for rid, ed in rows}


def run_verdicts_query(light: bool) -> tuple[list[str], sa.Select[tuple[object, ...]]]:
    """The statement :func:`load_predictions` runs once per run (bound parameter ``run_id``): the run's repeat-0
    predictions' own columns (``sample_id`` first; ``light``: sample_id, outcome, score, evidence), in sample id
    order, and their names. On SQLite the light one is answered from the index ``ix_prediction_read`` alone
    (migration r14)."""
    p = prediction.c
    cols: dict[str, Any] = {
        "sample_id": p.sample_id,
        "outcome": p.outcome,
        "score": p.score,
        # evidence as JSON text, decoded by the caller only when non-empty (most predictions have none): much
        # faster than letting the JSON type decode every row; an empty list comes as NULL, which decodes the same
        # (decode_list) without a string made per row
        "evidence": sa.func.nullif(sa.cast(p.evidence, sa.Text), "[]").label("evidence"),
        "raw": p.raw,
        "reason": p.reason,
        "pred_category": p.pred_category,
        "severity": p.severity,
    }
    names = LIGHT_COLUMNS if light else PREDICTION_COLUMNS
    own = [n for n in names if n not in ("run_id", *RUN_JOINED, *SAMPLE_JOINED)]  # sample_id first
    q = (
        sa.select(*[cols[n] for n in own])
        .where(p.repeat == 0, p.run_id == sa.bindparam("run_id"))  # one verdict per sample: repeat 0
        .order_by(p.sample_id)
    )
    return own, q


def load_predictions(engine: Engine, run_ids: Sequence[str] | None = None, *, light: bool = False) -> pd.DataFrame:
    """One row per prediction joined with its sample and run (repeat 0 only: the run's verdict of a
    sample; the other repeats of ``run --repeat K`` are read by :mod:`automonitor.analysis.stability`).

    Columns (``PREDICTION_COLUMNS``): run_id, monitor, template, kind, sample_id, pair_id, category, task,
    label, outcome, score, evidence, raw, reason, pred_category, severity. ``light=True`` returns only
    run_id, sample_id, pair_id, category, task, label, outcome, score, evidence (faster for reports).
    Rows are ordered by run and sample id.
    """
    import numpy as np
    import pandas as pd

    names = LIGHT_COLUMNS if light else PREDICTION_COLUMNS
    # each run's prediction rows alone (in run id order, as ORDER BY run_id, sample_id read them; the run id is
    # not sent back per row), their runs' and samples' columns added from one row per run and sample (as the
    # inner joins would: an id without its sample or run drops the row): SQLite's per-row join lookups were
    # about half of the query's CPU, and a string per row for the run id a tenth of the rest
    own, q = run_verdicts_query(light)
    rq = sa.select(run.c.id, run.c.monitor, run.c.template, run.c.kind).order_by(run.c.id)
    with engine.connect() as c:
        if run_ids is not None:
            runs = [
                r for part in _chunks(list(dict.fromkeys(run_ids))) for r in c.execute(rq.where(run.c.id.in_(part)))
            ]
        else:
            runs = list(c.execute(rq))
        per_run = fetch_each(c, q, "run_id", [r[0] for r in runs])
        n_rows = sum(map(len, per_run))
        # one object array per column of the rows (each column read once, in C: no list per column first)
        data: dict[str, Any] = {
            n: np.fromiter(col, dtype=object, count=n_rows)
            for n, col in zip(own, zip(*itertools.chain.from_iterable(per_run)) if n_rows else [() for _ in own])
        }
        sids = pd.factorize(data["sample_id"])  # (code per row, distinct sample ids)
        for n in ("sample_id", "outcome"):
            data[n] = _one_object_per_value(data[n], sids if n == "sample_id" else None)
        cols_of = rows_by_ids(c, (sample.c.id, *(sample.c[n] for n in SAMPLE_JOINED)), sample.c.id, sids[1].tolist())
    found = {r[0]: r[1:] for r in cols_of}
    per_row = [len(part) for part in per_run]  # each run's value repeated over its rows
    for k, n in enumerate(("run_id", *RUN_JOINED)):
        if n in names:
            data[n] = np.repeat(np.array([r[k] for r in runs], dtype=object), per_row)
    for k, n in enumerate(SAMPLE_JOINED):
        if n in names:
            data[n] = np.array([found[i][k] if i in found else None for i in sids[1]], dtype=object).take(sids[0])
    df = pd.DataFrame({n: pd.Series(data[n], dtype=object, copy=False) for n in names})
    if len(found) < len(sids[1]):  # a prediction of a sample not in the store: dropped, as by the inner join
        df = df[np.isin(sids[0], [i for i, s in enumerate(sids[1]) if s in found])].reset_index(drop=True)
    for n in names:
        if n not in ("evidence", "score"):
            df[n] = df[n].astype(object)
    df["score"] = pd.to_numeric(df["score"], errors="coerce").astype(float)
    df["evidence"] = decode_lists(df["evidence"].tolist())
    return df


def _one_object_per_value(col: np.ndarray, factorized: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """``col`` (an object array) with every value the same object as the other rows' equal values (missing ones
    ``None``): the driver makes a new string per row, a value of 5 (outcomes) or 3,010 (sample ids) kept 301,000
    times at 100 runs. The same values; the frame's later hashing and comparing of the column (factorize, isin,
    unique) find equal values by identity, and the per-row copies are freed. ``factorized``: ``pandas.factorize``
    of ``col`` when the caller has it."""
    import numpy as np
    import pandas as pd

    codes, uniques = factorized if factorized is not None else pd.factorize(col)
    values = np.empty(len(uniques) + 1, dtype=object)  # the last slot: code -1 (missing) takes None
    values[: len(uniques)] = uniques
    out: np.ndarray = values.take(codes)
    return out


def meta_values(engine: Engine, key: str, split: str = "test") -> dict[str, JSONValue]:
    """``{sample_id: meta[key]}`` of the samples of ``split`` whose ``meta`` holds ``key`` with a value that is
    not empty, in one query: ``meta`` is sent only where its JSON text names the key as :func:`json.dumps`
    writes it (a few rows of a store, e.g. the samples an erratum marks), and checked here once decoded."""
    q = sa.select(sample.c.id, sample.c.meta).where(sample.c.split == split, meta_names(sample.c.meta, key))
    with engine.connect() as c:
        rows = c.execute(q).all()
    out: dict[str, JSONValue] = {}
    for sid, meta in rows:  # meta: decoded by the JSON column
        value = meta.get(key) if isinstance(meta, dict) else None
        if value:
            out[str(sid)] = value
    return out


def fetch_tuples(conn: Connection, stmt: sa.Select[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Every row of ``stmt`` as the driver's tuples, executed and fetched on the DBAPI cursor of ``conn``
    (no SQLAlchemy ``Row`` per row: a report reads ~90,000 rows). Only for statements whose columns
    need no result processing (strings, numbers, JSON cast to text): the values are the driver's own."""
    compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    params = compiled.params
    args: tuple[object, ...] | dict[str, object] = (
        tuple(params[k] for k in compiled.positiontup or ()) if compiled.positional else params
    )
    cursor = conn.connection.cursor()
    try:
        cursor.execute(compiled.string, args)
        return list(cursor.fetchall())
    finally:
        cursor.close()


def fetch_each(
    conn: Connection, stmt: sa.Select[tuple[object, ...]], name: str, values: Sequence[object]
) -> list[list[tuple[object, ...]]]:
    """:func:`fetch_tuples` of ``stmt`` once for each of ``values`` as its bound parameter ``name`` (compiled
    once, executed on one DBAPI cursor): the rows of each execution, in the order of ``values``."""
    compiled = stmt.compile(dialect=conn.dialect)
    out: list[list[tuple[object, ...]]] = []
    cursor = conn.connection.cursor()
    try:
        for v in values:
            params = {**compiled.params, name: v}
            args = tuple(params[k] for k in compiled.positiontup or ()) if compiled.positional else params
            cursor.execute(compiled.string, args)
            out.append(list(cursor.fetchall()))
    finally:
        cursor.close()
    return out


def decode_lists(values: list[Any]) -> list[list[Any]]:
    """:func:`decode_list` of every value, the non-empty JSON texts parsed in one ``json.loads`` call (a
    report reads ~30,000 evidence lists; one call per list was a fifth of loading the predictions). Falls
    back to one call per value when a text is not valid JSON on its own."""
    out: list[list[Any]] = [[] for _ in values]
    todo = [i for i, v in enumerate(values) if not (v is None or v == "[]" or v == "")]
    texts = [values[i] for i in todo]
    if not all(isinstance(v, str) for v in texts):
        return [decode_list(v) for v in values]
    try:
        parsed = json.loads("[" + ",".join(texts) + "]") if texts else []
    except ValueError:
        return [decode_list(v) for v in values]
    if len(parsed) != len(texts):  # e.g. a text "1, 2" would split in two: decode one by one
        return [decode_list(v) for v in values]
    for i, v in zip(todo, parsed):
        out[i] = v if isinstance(v, list) else [v]
    return out


def decode_list(v: Any) -> list[Any]:
    if v is None or v == "[]" or v == "":
        return []
    if isinstance(v, list):
        return v
    out = json.loads(v)
    return out if isinstance(out, list) else [out]


def run_views(engine: Engine, run_ids: Sequence[str]) -> dict[str, str]:
    """``{run_id: monitor view}`` (``Run.params["view"]``; ``full`` for a run recorded without one)."""
    with engine.connect() as c:
        rows = rows_by_ids(c, (run.c.id, run.c.params), run.c.id, run_ids)
    return {rid: str((params or {}).get("view") or "full") for rid, params in rows}


def load_sample_texts(engine: Engine, sample_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
    """``{sample_id: (request, response)}`` for the given ids (missing ids are left out)."""
    with engine.connect() as c:
        rows = rows_by_ids(c, [sample.c.id, sample.c.request, sample.c.response], sample.c.id, sample_ids)
    return {sid: (req, resp) for sid, req, resp in rows}


def sample_frame(engine: Engine, sample_ids: Iterable[str]) -> pd.DataFrame:
    """Samples (id, pair_id, category, task, label, request, response, source) for the given ids."""
    import pandas as pd

    t = sample.c
    cols = [t.id, t.pair_id, t.category, t.task, t.label, t.request, t.response, t.source]
    with engine.connect() as c:
        rows = rows_by_ids(c, cols, t.id, sample_ids)
    return pd.DataFrame(
        [tuple(r) for r in rows],
        columns=["sample_id", "pair_id", "category", "task", "label", "request", "response", "source"],
    )


def sample_standing(session: Session, sample_ids: Iterable[str]) -> dict[str, tuple[str, str | None]]:
    """``{sample_id: (status, split)}`` for those of ``sample_ids`` present in the store."""
    return {
        r[0]: (r[1], r[2])
        for r in rows_by_ids(session, [sample.c.id, sample.c.status, sample.c.split], sample.c.id, sample_ids)
    }


def monitor_named(session: Session, name: str) -> Monitor | None:
    """The ``Monitor`` row named ``name`` with no base URL (any backend), if any."""
    from sqlmodel import col

    from store.models import Monitor

    q = sa.select(Monitor).where(col(Monitor.name) == name, col(Monitor.base_url).is_(None))
    return session.execute(q).scalars().first()


def external_monitor(session: Session, name: str) -> Monitor:
    """The ``Monitor`` row for an outside system ``name`` (backend ``external``), created if absent."""
    from store.queries.runs import get_or_create_monitor

    return get_or_create_monitor(
        session, name, "external", None, None, {"source": "predictions import"}, match_backend=True
    )


def find_imported_run(session: Session, monitor: str, template: str, sha256: str) -> Run | None:
    """An imported run of ``monitor`` x ``template`` made from a file with this sha256, if any."""
    from sqlmodel import col

    from store.models import Run

    runs: Sequence[Run] = (
        session.execute(
            sa.select(Run).where(
                col(Run.kind) == "imported", col(Run.monitor) == monitor, col(Run.template) == template
            )
        )
        .scalars()
        .all()
    )
    for r in runs:
        if (r.params or {}).get("sha256") == sha256:
            return r
    return None


def insert_finished_run(
    session: Session,
    *,
    run_id: str,
    monitor: Monitor,
    template: str,
    kind: RunKind,
    status: RunStatus,
    params: Mapping[str, object],
    rows: Sequence[Mapping[str, object]],
    edition: str | None = None,
) -> Run:
    """Insert a run that is over when written (imported predictions, the build's ladder runs, derived runs:
    ``kind`` and ``status`` given) and its predictions, in chunks, inside the caller's transaction. ``rows``
    are dicts with Prediction column names (sample_id, outcome, score, evidence, raw, cost_usd, latency_ms,
    ...); unset columns are empty, cost 0, no tokens, never cached. The run's cost is the sum of its rows'.

    Raises:
        ValueError: ``monitor`` was not flushed (no id).
    """
    from store.models import Prediction, utcnow
    from store.queries.runs import add_run

    now = utcnow()
    costs = [float(c) if isinstance(c := r.get("cost_usd"), (int, float)) else 0.0 for r in rows]
    run = add_run(
        session, monitor, run_id=run_id, template=template, kind=kind, status=status, params=params, edition=edition
    )
    run.n, run.cost_usd = len(rows), float(sum(costs))  # the count and cost of its rows
    run.created_at = run.started_at = run.finished_at = now
    session.flush()
    payload = [
        {
            "run_id": run_id,
            "sample_id": r["sample_id"],
            "outcome": r["outcome"],
            "score": r.get("score"),
            "raw": r.get("raw"),
            "reason": r.get("reason"),
            "evidence": r.get("evidence") or [],
            "pred_category": r.get("pred_category"),
            "severity": r.get("severity"),
            "meta": r.get("meta") or {},
            "created_at": now,
            "judged_at": now,
            "tokens_in": 0,
            "tokens_out": 0,
            "cost_usd": cost,
            "latency_ms": r.get("latency_ms"),
            "cached": False,
        }
        for r, cost in zip(rows, costs)
    ]
    for part in _chunks(payload, 2000):
        insert_rows(session, Prediction, part)
    return run


def sample_cost(cost: Any, cached: Any, meta: Any) -> float:
    """The price (US dollars) of the call behind one prediction: its own ``cost_usd``, or for a cache hit
    (``cached``) without one the cost recorded with the cached verdict (``meta.cached_cost_usd``; ``meta`` a dict
    or its JSON text; unreadable or missing: 0)."""
    c = float(cost or 0.0)
    if cached and not c:
        if isinstance(meta, str):
            try:
                meta = json.loads(meta)
            except ValueError:
                meta = {}
        c = float((meta or {}).get("cached_cost_usd") or 0.0)
    return c


def run_cost_rows(engine: Engine) -> list[tuple[str, str, int, float, float]]:
    """``(run_id, kind, n_judged, cost_usd, compute_s)`` per run with a judged prediction: the sums over its judged
    predictions (cache hits priced at the cost recorded with the cached verdict, :func:`sample_cost`; ``compute_s``
    the latencies' sum in seconds). Core over :mod:`store.tables`, as the rest of the Trade-off page's reads: no ORM
    is imported for the plane's costs."""
    p, r = prediction.c, run.c
    # grouped by run id alone, in the order of its index (no join per prediction, no temporary B-tree); each
    # run's kind from the run table
    q = (
        sa.select(p.run_id, sa.func.count(), sa.func.sum(p.cost_usd), sa.func.sum(p.latency_ms))
        .where(p.outcome.is_not(None))
        .group_by(p.run_id)
    )
    cached_q = sa.select(p.run_id, sa.cast(p.meta, sa.Text)).where(p.cached.is_(True), p.cost_usd == 0)
    with engine.connect() as c:
        kinds = {rid: kind for rid, kind in c.execute(sa.select(r.id, r.kind))}
        base: dict[str, list[Any]] = {
            rid: [kinds[rid], int(n), float(cost or 0.0), float(ms or 0.0) / 1000.0]
            for rid, n, cost, ms in c.execute(q)
        }
        for rid, meta in c.execute(cached_q):
            if rid in base:
                base[rid][2] += sample_cost(0.0, True, meta)
    return [(rid, v[0], v[1], v[2], v[3]) for rid, v in base.items()]
