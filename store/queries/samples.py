"""Sample queries shared by ``build``, ``import`` and the app."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence, TypedDict

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlmodel import Session, col

from store.queries.spans import SpanCounts, span_counts
from automonitor.jsontypes import JSONObject, JSONValue
from automonitor.vocab import CONTROLS_SPLIT, EDITIONS
from automonitor.timestamps import iso_utc
from store.models import EditionSample, Sample
from store.queries import SAMPLE_KEY, rows_by_ids, sample_columns, typed_rows
from store.queries.rowtypes import SampleKey

_COLUMNS = [c.name for c in sa.inspect(Sample).local_table.columns]


def existing_ids(session: Session, ids: Iterable[str]) -> set[str]:
    """The subset of ``ids`` already present in the ``sample`` table."""
    return {r[0] for r in rows_by_ids(session, [Sample.id], Sample.id, ids)}


def insert_samples(session: Session, rows: Sequence[Mapping[str, object]]) -> int:
    """Bulk-insert sample rows (dicts with ``Sample`` column names) that are not present yet.

    Rows whose ``id`` already exists are skipped (idempotent re-import). Runs inside the caller's
    transaction: nothing is committed here. Returns the number of rows inserted.
    """
    if not rows:
        return 0
    have = existing_ids(session, [str(r["id"]) for r in rows])
    new = [r for r in rows if r["id"] not in have]
    if not new:
        return 0
    from store.models import utcnow

    now = utcnow()
    payload: list[dict[str, object]] = []
    for r in new:
        d = {k: r.get(k) for k in _COLUMNS if k in r}
        d.setdefault("meta", {})
        d.setdefault("created_at", now)
        d.setdefault("status", "gold")
        d.setdefault("source", "")
        payload.append(d)
    session.execute(sa.insert(Sample), payload)
    return len(payload)


# --- editions of the test set -----------------------------------------------------------------------


def check_edition(edition: str) -> str:
    """``edition`` if it is one of :data:`automonitor.vocab.EDITIONS`; raises ``InputError`` (field ``--edition``)."""
    if edition not in EDITIONS:
        from automonitor.errors import InputError

        raise InputError(f"unknown edition {edition!r}; expected one of {', '.join(EDITIONS)}", field="--edition")
    return edition


def edition_has_rows(session: Session, edition: str) -> bool:
    """True when ``edition_sample`` holds at least one row for ``edition``."""
    q = sa.select(col(EditionSample.sample_id)).where(col(EditionSample.edition) == edition).limit(1)
    return session.execute(q).first() is not None


def edition_filter(session: Session, edition: str):
    """SQL conditions selecting the test samples of ``edition``: gold samples of split ``test`` that are
    members of the edition (``edition_sample`` rows). When the store has no rows for ``paper`` at all (a
    store of imports only, or built before editions existed), ``paper`` means every gold test sample.
    Raises ``InputError`` for an unknown edition."""
    check_edition(edition)
    conds = [Sample.status == "gold", Sample.split == "test"]
    if edition == "paper" and not edition_has_rows(session, "paper"):
        return conds + [not_adjudicated()]
    members = sa.select(col(EditionSample.sample_id)).where(col(EditionSample.edition) == edition)
    return conds + [col(Sample.id).in_(members)]


def control_samples(session: Session) -> list[SampleKey]:
    """The controls slice (gold, split ``controls``): dicts with id, pair_id, category, task, label,
    content_hash, id order."""
    rows = session.execute(
        sa.select(*sample_columns(*SAMPLE_KEY, "content_hash"))
        .where(col(Sample.split) == CONTROLS_SPLIT, col(Sample.status) == "gold")
        .order_by(Sample.id)
    ).all()
    return typed_rows(rows, SampleKey)


# --- composition queries (``automonitor stats``, the app's Overview page) ---------------------------

SPLIT_CHOICES = ("test", "train", "all")


def _gold_filter(split: str, session: Session | None = None, edition: str | None = None):
    """SQL conditions selecting gold samples of ``split`` (``test``, ``train`` or ``all`` = both); with
    ``edition`` (and ``session``), the ``test`` split is restricted to that edition's members."""
    if split not in SPLIT_CHOICES:
        from automonitor.errors import InputError

        raise InputError(f"unknown split {split!r}; expected one of {', '.join(SPLIT_CHOICES)}", field="--split")
    if edition is not None and session is not None and split == "test":
        return edition_filter(session, edition)
    conds = [Sample.status == "gold"]
    if split == "all":
        conds.append(Sample.split.in_(("test", "train")))  # type: ignore[union-attr]
    else:
        conds.append(Sample.split == split)
    if split == "test":
        conds.append(not_adjudicated())
    return conds


def not_adjudicated():
    """SQL condition keeping adjudicated samples out of the paper mirror: pairs accepted through
    annotation are gold test samples of edition ``verified`` only, so the paper
    mirror (status gold, split test) never picks them up, with or without ``edition_sample`` rows."""
    return Sample.label_source != "adjudicated"


class CompositionRow(TypedDict):
    """Gold samples of one category x task x label (:func:`composition`)."""

    category: str
    task: str
    label: str
    n: int


def composition(session: Session, split: str = "test", edition: str | None = None) -> list[CompositionRow]:
    """Counts of gold samples of ``split`` by category x task x label.

    Returns rows ``{"category", "task", "label", "n"}`` sorted by category, task, label; only
    combinations present in the store. Raises ``InputError`` for an unknown split.
    """
    q = (
        sa.select(col(Sample.category), col(Sample.task), col(Sample.label), sa.func.count())
        .where(*_gold_filter(split, session, edition))
        .group_by(Sample.category, Sample.task, Sample.label)
        .order_by(Sample.category, Sample.task, Sample.label)
    )
    return [CompositionRow(category=c, task=t, label=lab, n=int(n)) for c, t, lab, n in session.execute(q)]


def count_by(session: Session, column: str, split: str = "test", edition: str | None = None) -> dict[str, int]:
    """Gold samples of ``split`` counted by one ``Sample`` column (``category``, ``task``, ``label``,
    ``source``...). Returns ``{value: n}`` sorted by value."""
    group = getattr(Sample, column)
    q = sa.select(group, sa.func.count()).where(*_gold_filter(split, session, edition)).group_by(group).order_by(group)
    return {str(v): int(n) for v, n in session.execute(q)}


def count_pairs(session: Session, split: str = "test", edition: str | None = None) -> int:
    """Number of distinct ``pair_id`` among gold samples of ``split``."""
    q = sa.select(sa.func.count(sa.distinct(col(Sample.pair_id)))).where(*_gold_filter(split, session, edition))
    return int(session.execute(q).scalar() or 0)


def counts_by_split(session: Session) -> dict[str, int]:
    """Gold samples of the whole store by split: ``{"test": n, "train": n}`` (0 when absent; a gold
    sample without split is counted under ``"none"`` if any)."""
    out = {"test": 0, "train": 0}
    q = sa.select(col(Sample.split), sa.func.count()).where(col(Sample.status) == "gold").group_by(Sample.split)
    for split, n in session.execute(q):
        out[split if split else "none"] = int(n)
    return out


def count_candidates(session: Session) -> int:
    """Samples of the whole store waiting for annotation (``status == 'candidate'``)."""
    q = sa.select(sa.func.count()).select_from(Sample).where(col(Sample.status) == "candidate")
    return int(session.execute(q).scalar() or 0)


def candidates_by_source(session: Session) -> dict[str, int]:
    """Candidate samples of the whole store by source."""
    q = (
        sa.select(col(Sample.source), sa.func.count())
        .where(col(Sample.status) == "candidate")
        .group_by(Sample.source)
        .order_by(Sample.source)
    )
    return {str(s): int(n) for s, n in session.execute(q)}


def latest_build_report(session: Session) -> JSONObject | None:
    """The report of the newest ``BuildLog`` row (with its ``seed`` and ``created_at``), or ``None``."""
    from store.models import BuildLog

    row = session.execute(sa.select(BuildLog).order_by(BuildLog.id.desc()).limit(1)).scalars().first()  # type: ignore[union-attr]
    if row is None:
        return None
    return {
        **(row.report or {}),
        "seed": row.seed,
        "created_at": iso_utc(row.created_at),
    }


class StatsDoc(TypedDict):
    """The document :func:`stats` returns (validated as ``automonitor.analysis.report_schema.Stats``)."""

    total: int
    pairs: int
    by_category: dict[str, int]
    by_task: dict[str, int]
    by_label: dict[str, int]
    by_split: dict[str, int]
    candidates: int
    split: str
    edition: str
    by_category_task: dict[str, int]
    by_category_task_nested: dict[str, dict[str, int]]
    by_label_source: dict[str, int]
    controls: int
    by_source: dict[str, int]
    candidates_by_source: dict[str, int]
    shortfalls: JSONValue
    build_seed: JSONValue
    gold_spans: SpanCounts
    paper_cell_deficit: JSONValue
    paper_cells: JSONValue
    hard: JSONObject | None


def stats(session: Session, split: str = "test", edition: str = "paper") -> StatsDoc:
    """The ``automonitor stats`` document of the CLI contract plus extra keys.

    Contract keys: ``total``, ``pairs``, ``by_category``, ``by_task``, ``by_label`` (gold samples of
    ``split``; every vocabulary value present, 0 when absent), ``by_split`` and ``candidates`` (whole
    store). Extra keys: ``split``, ``by_category_task`` (``{category: {task: n}}``), ``by_source``,
    ``candidates_by_source``, ``shortfalls`` (from the newest build log, ``[]`` when none),
    ``build_seed`` (``None`` when never built).

    Contract keys of the editions: ``edition`` (the test split counts only that edition's members),
    ``by_label_source`` (``{provenance: n}``) and ``by_category_task`` flat as ``{"cat/task": n}``;
    the nested form moved to ``by_category_task_nested``. ``controls``: samples of the controls slice.

    ``gold_spans`` (:func:`store.queries.spans.span_counts` over gold samples of
    ``split``, every edition): spans per source and provenance, samples with spans and misbehavior
    samples per source.

    Contract key ``paper_cell_deficit`` (``{"cat/task": pairs missing}`` for each paper cell the
    ``paper`` edition cannot fill, from the newest build log) and ``paper_cells`` (per cell: target,
    built, missing, pairs by source, why short).

    ``hard``: with ``--edition hard`` on the test split the newest build's filter summary
    (:func:`_hard_summary`; ``None`` when it has none), else ``None``.
    """
    check_edition(edition)
    from automonitor.vocab import CATEGORIES, LABELS, TASKS

    comp = composition(session, split, edition)
    by_cat = {c: 0 for c in CATEGORIES}
    by_task = {t: 0 for t in TASKS}
    by_label = {lab: 0 for lab in LABELS}
    by_ct: dict[str, dict[str, int]] = {}
    for r in comp:
        by_cat[r["category"]] = by_cat.get(r["category"], 0) + r["n"]
        by_task[r["task"]] = by_task.get(r["task"], 0) + r["n"]
        by_label[r["label"]] = by_label.get(r["label"], 0) + r["n"]
        by_ct.setdefault(r["category"], {}).setdefault(r["task"], 0)
        by_ct[r["category"]][r["task"]] += r["n"]
    report = latest_build_report(session)
    doc: StatsDoc = {
        "total": sum(r["n"] for r in comp),
        "pairs": count_pairs(session, split, edition),
        "by_category": by_cat,
        "by_task": by_task,
        "by_label": by_label,
        "by_split": counts_by_split(session),
        "candidates": count_candidates(session),
        "split": split,
        "edition": edition,
        "by_category_task": {f"{c}/{t}": n for c, ts in by_ct.items() for t, n in ts.items()},
        "by_category_task_nested": by_ct,
        "by_label_source": count_by(session, "label_source", split, edition),
        "controls": len(control_samples(session)),
        "by_source": count_by(session, "source", split, edition),
        "candidates_by_source": candidates_by_source(session),
        "shortfalls": (report or {}).get("shortfalls", []),
        "build_seed": (report or {}).get("seed"),
        "gold_spans": span_counts(session, None if split == "all" else split),
        "paper_cell_deficit": (report or {}).get("paper_cell_deficit", {}),
        "paper_cells": (report or {}).get("paper_cells", []),
        "hard": _hard_summary(report) if edition == "hard" and split == "test" else None,
    }
    return doc


def _hard_summary(report: JSONObject | None) -> JSONObject | None:
    """The ``hard`` section of the newest build report without its per-slice detail: pairs per source
    (verified, hard, controls), pairs removed per feature, the filter steps and the slices not
    achievable; ``None`` when the build has none."""
    hard = (report or {}).get("hard")
    if not isinstance(hard, dict):
        return None
    keys = (
        "pairs",
        "controls",
        "by_source",
        "removed_by_feature",
        "steps",
        "not_achievable",
        "params",
        "selection",
        "held_out",
        "held_out_unavailable",
        "band",
        "min_pairs",
        "no_implicit_tier",
        "not_certified",
        "readings",
    )
    return {k: hard[k] for k in keys if k in hard}


def hard_certificate(report: JSONObject | None) -> JSONObject | None:
    """What the newest build certified edition ``hard`` against: the build report's ``hard`` section's
    detector families (``selection``, ``held_out``, ``held_out_unavailable``), ``band``, ``min_pairs``, the
    per-slice ``certification``, the slices ``not_certified``, the cells with ``no_implicit_tier``, the
    ``readings`` and the ``seed``; ``None`` when the build has none."""
    hard = (report or {}).get("hard")
    if not isinstance(hard, dict) or "selection" not in hard:
        return None
    keys = ("selection", "held_out", "held_out_unavailable", "band", "min_pairs", "certification")
    keys += ("not_certified", "no_implicit_tier", "readings", "excluded_provenance", "by_source", "pairs")
    return {**{k: hard.get(k) for k in keys}, "seed": (report or {}).get("seed")}


# --- the app's samples browser and drill-down (``automonitor.views``) --------------------------------

#: Columns of a samples-browser row, in order (``request``/``response`` only when texts are asked for).
BROWSER_COLUMNS = ("id", "pair_id", "category", "task", "label", "split", "status", "source", "request", "response")
#: Sample columns the browser filters by (allowed values per column).
FILTER_COLUMNS = ("category", "task", "label", "split", "status", "source", "label_source")
#: Columns :func:`counts_by_status` groups by.
GROUP_COLUMNS = ("source", "split", "status", "category", "task", "label", "label_source")

_BROWSER_ORDER = (Sample.category, Sample.task, Sample.pair_id, Sample.label, Sample.id)


def like_escape(text: str) -> str:
    """``text`` with the ``LIKE`` wildcards ``%`` and ``_`` (and the escape character ``\\``) escaped."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def browser_filter(search: str | None = None, **allowed: Sequence[str]) -> list[sa.ColumnElement[bool]]:
    """SQL conditions of the samples browser.

    ``search`` matches (case-insensitively, as a substring) the request, the response, the sample id or
    the pair id. ``allowed`` maps a :data:`FILTER_COLUMNS` name to its allowed values (empty = no
    filter), and ``tier`` to allowed values of ``meta.tier`` (the detector ladder's tier). Raises
    ``ValueError`` for another column name.
    """
    where: list[sa.ColumnElement[bool]] = []
    tiers = allowed.pop("tier", ())
    if tiers:
        where.append(col(Sample.meta)["tier"].as_string().in_(list(tiers)))
    if search and search.strip():
        pat = f"%{like_escape(search.strip())}%"
        cols = (Sample.request, Sample.response, Sample.id, Sample.pair_id)
        where.append(sa.or_(*[col(c).ilike(pat, escape="\\") for c in cols]))
    for name in FILTER_COLUMNS:
        vals = allowed.pop(name, ())
        if vals:
            where.append(getattr(Sample, name).in_(list(vals)))
    if allowed:
        raise ValueError(f"cannot filter samples by {', '.join(sorted(allowed))}")
    return where


def count_matching(conn: Connection, where: Sequence[sa.ColumnElement[bool]]) -> int:
    """Number of samples meeting the ``where`` conditions (:func:`browser_filter`)."""
    return int(conn.execute(sa.select(sa.func.count(col(Sample.id))).where(*where)).scalar_one())


def browser_rows(
    conn: Connection,
    where: Sequence[sa.ColumnElement[bool]],
    columns: Sequence[str],
    *,
    limit: int | None = None,
    offset: int = 0,
) -> list[sa.Row[tuple[object, ...]]]:
    """Rows (tuples of ``columns``, ``Sample`` column names) of the samples meeting ``where``, ordered by
    category, task, pair id, label, id; ``limit=None`` returns every match."""
    q = sa.select(*[getattr(Sample, c) for c in columns]).where(*where).order_by(*_BROWSER_ORDER)
    if limit is not None:
        q = q.limit(limit).offset(offset)
    return list(conn.execute(q).all())


def sample_with_pair(conn: Connection, sample_id: str) -> tuple[dict[str, object], dict[str, object] | None] | None:
    """One sample and the other side of its pair (the first by label), as dicts of ``Sample`` columns;
    ``None`` for an unknown id."""
    table = sa.inspect(Sample).local_table
    sample = conn.execute(sa.select(table).where(col(Sample.id) == sample_id)).mappings().one_or_none()
    if sample is None:
        return None
    other = (
        conn.execute(
            sa.select(table)
            .where(col(Sample.pair_id) == sample["pair_id"], col(Sample.id) != sample_id)
            .order_by(Sample.label)
        )
        .mappings()
        .first()
    )
    return dict(sample), (dict(other) if other else None)


def predictions_on_sample(
    conn: Connection, sample_id: str, run_ids: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Every prediction on one sample (dicts of ``Prediction`` columns plus the run's ``monitor`` and
    ``template``), ordered by run id and repeat; ``run_ids`` restricts the runs (``None`` = all)."""
    from store.models import Prediction, Run

    q = (
        sa.select(sa.inspect(Prediction).local_table, col(Run.monitor), col(Run.template))
        .join(Run, col(Run.id) == col(Prediction.run_id))
        .where(col(Prediction.sample_id) == sample_id)
        .order_by(col(Prediction.run_id), col(Prediction.repeat))
    )
    if run_ids is not None:
        q = q.where(col(Prediction.run_id).in_(list(run_ids)))
    return [dict(r) for r in conn.execute(q).mappings().all()]


def counts_by_status(conn: Connection, column: str, status: str | None = None) -> list[tuple[object, ...]]:
    """Sample counts grouped by ``column`` (one of :data:`GROUP_COLUMNS`) and ``status``: rows
    ``(value, status, n)``, or ``(status, n)`` for ``column="status"``; ``status`` restricts to one
    status. Raises ``ValueError`` for another column."""
    if column not in GROUP_COLUMNS:
        raise ValueError(f"cannot group samples by {column!r}")
    group = getattr(Sample, column)
    keys = [group] if column == "status" else [group, Sample.status]
    q = sa.select(*keys, sa.func.count(col(Sample.id)).label("n")).group_by(*keys)
    if status:
        q = q.where(col(Sample.status) == status)
    return [tuple(r) for r in conn.execute(q).all()]
