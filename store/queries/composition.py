"""The store's composition (``automonitor stats``, the app's Overview page): gold samples counted by split,
edition, category, task, label, source and provenance, the candidates, the controls, the gold spans, the newest
build's report and the stored pair index. SQLAlchemy Core over the light views of :mod:`store.tables`, so that
``stats`` imports neither the ORM, SQLModel nor :mod:`store.models`; every function works on a connection or a
session (read as it is in the database), SQLite and PostgreSQL, and commits nothing.

The conditions that select an edition's or a split's samples are written over a ``sample`` table given to them
(:func:`edition_conditions`, :func:`gold_conditions`): the view here, the mapped table in the ORM queries of
:mod:`store.queries.samples`, whose statements must name one ``sample`` table only."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from typing_extensions import TypedDict

import sqlalchemy as sa

from automonitor.jsontypes import JSONObject, JSONValue
from automonitor.timestamps import iso_utc
from automonitor.vocab import CATEGORIES, CONTROLS_SPLIT, EDITIONS, LABELS, TASKS
from store.tables import build_log, edition_sample, gold_span, sample

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session
    from sqlalchemy.sql.elements import ColumnElement

__all__ = [
    "SPLIT_CHOICES",
    "CompositionRow",
    "SpanCounts",
    "StatsDoc",
    "candidates_by_source",
    "check_edition",
    "composition",
    "count_by",
    "count_candidates",
    "count_controls",
    "count_pairs",
    "control_ids",
    "counts_by_split",
    "edition_conditions",
    "edition_has_rows",
    "edition_test_ids",
    "gold_conditions",
    "hard_certificate",
    "latest_build_report",
    "not_adjudicated",
    "pair_index",
    "span_counts",
    "stats",
]

#: the splits ``stats`` counts (``all``: test and train)
SPLIT_CHOICES = ("test", "train", "all")


def check_edition(edition: str) -> str:
    """``edition`` if it is one of :data:`automonitor.vocab.EDITIONS`; raises ``InputError`` (field ``--edition``)."""
    if edition not in EDITIONS:
        from automonitor.errors import InputError

        raise InputError(f"unknown edition {edition!r}; expected one of {', '.join(EDITIONS)}", field="--edition")
    return edition


def edition_has_rows(conn: Connection | Session, edition: str) -> bool:
    """True when ``edition_sample`` holds at least one row for ``edition``."""
    q = sa.select(edition_sample.c.sample_id).where(edition_sample.c.edition == edition).limit(1)
    return conn.execute(q).first() is not None


def not_adjudicated(t: sa.TableClause = sample) -> ColumnElement[bool]:
    """SQL condition (over the ``sample`` table ``t``) keeping adjudicated samples out of the paper mirror: pairs
    accepted through annotation are gold test samples of edition ``verified`` only, so the paper mirror (status
    gold, split test) never picks them up, with or without ``edition_sample`` rows."""
    return t.c.label_source != "adjudicated"


def edition_conditions(
    conn: Connection | Session, edition: str, t: sa.TableClause = sample
) -> list[ColumnElement[bool]]:
    """SQL conditions (over the ``sample`` table ``t``) selecting the test samples of ``edition``: gold samples of
    split ``test`` that are members of the edition (``edition_sample`` rows). When the store has no rows for
    ``paper`` at all (a store of imports only, or built before editions existed), ``paper`` means every gold test
    sample not adjudicated. Raises ``InputError`` for an unknown edition."""
    check_edition(edition)
    conds: list[ColumnElement[bool]] = [t.c.status == "gold", t.c.split == "test"]
    if edition == "paper" and not edition_has_rows(conn, "paper"):
        return conds + [not_adjudicated(t)]
    members = sa.select(edition_sample.c.sample_id).where(edition_sample.c.edition == edition)
    return conds + [t.c.id.in_(members)]


def edition_test_ids(conn: Connection | Session, edition: str) -> set[str]:
    """Ids of the test samples of ``edition`` (:func:`edition_conditions`: what ``automonitor run`` judges of
    the test set, before ``--limit`` or ``--view``). Raises ``InputError`` for an unknown edition."""
    return {r[0] for r in conn.execute(sa.select(sample.c.id).where(*edition_conditions(conn, edition)))}


def gold_conditions(
    split: str, conn: Connection | Session | None = None, edition: str | None = None, t: sa.TableClause = sample
) -> list[ColumnElement[bool]]:
    """SQL conditions (over the ``sample`` table ``t``) selecting gold samples of ``split`` (``test``, ``train``
    or ``all`` = both); with ``edition`` (and ``conn``), the ``test`` split is restricted to that edition's
    members. Raises ``InputError`` for an unknown split."""
    if split not in SPLIT_CHOICES:
        from automonitor.errors import InputError

        raise InputError(f"unknown split {split!r}; expected one of {', '.join(SPLIT_CHOICES)}", field="--split")
    if edition is not None and conn is not None and split == "test":
        return edition_conditions(conn, edition, t)
    conds: list[ColumnElement[bool]] = [t.c.status == "gold"]
    if split == "all":
        conds.append(t.c.split.in_(("test", "train")))
    else:
        conds.append(t.c.split == split)
    if split == "test":
        conds.append(not_adjudicated(t))
    return conds


class CompositionRow(TypedDict):
    """Gold samples of one category x task x label (:func:`composition`)."""

    category: str
    task: str
    label: str
    n: int


def composition(conn: Connection | Session, split: str = "test", edition: str | None = None) -> list[CompositionRow]:
    """Counts of gold samples of ``split`` by category x task x label.

    Returns rows ``{"category", "task", "label", "n"}`` sorted by category, task, label; only
    combinations present in the store. Raises ``InputError`` for an unknown split.
    """
    c = sample.c
    q = (
        sa.select(c.category, c.task, c.label, sa.func.count())
        .where(*gold_conditions(split, conn, edition))
        .group_by(c.category, c.task, c.label)
        .order_by(c.category, c.task, c.label)
    )
    return [CompositionRow(category=cat, task=t, label=lab, n=int(n)) for cat, t, lab, n in conn.execute(q)]


def count_by(
    conn: Connection | Session, column: str, split: str = "test", edition: str | None = None
) -> dict[str, int]:
    """Gold samples of ``split`` counted by one ``sample`` column (``category``, ``task``, ``label``,
    ``source``...). Returns ``{value: n}`` sorted by value."""
    group = sample.c[column]
    q = sa.select(group, sa.func.count()).where(*gold_conditions(split, conn, edition)).group_by(group).order_by(group)
    return {str(v): int(n) for v, n in conn.execute(q)}


def count_pairs(conn: Connection | Session, split: str = "test", edition: str | None = None) -> int:
    """Number of distinct ``pair_id`` among gold samples of ``split``."""
    q = sa.select(sa.func.count(sa.distinct(sample.c.pair_id))).where(*gold_conditions(split, conn, edition))
    return int(conn.execute(q).scalar() or 0)


def counts_by_split(conn: Connection | Session) -> dict[str, int]:
    """Gold samples of the whole store by split: ``{"test": n, "train": n}`` (0 when absent; a gold
    sample without split is counted under ``"none"`` if any)."""
    out = {"test": 0, "train": 0}
    q = sa.select(sample.c.split, sa.func.count()).where(sample.c.status == "gold").group_by(sample.c.split)
    for split, n in conn.execute(q):
        out[split if split else "none"] = int(n)
    return out


def _count(conn: Connection | Session, *where: ColumnElement[bool]) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(sample).where(*where)).scalar() or 0)


def count_candidates(conn: Connection | Session) -> int:
    """Samples of the whole store waiting for annotation (``status == 'candidate'``)."""
    return _count(conn, sample.c.status == "candidate")


def count_controls(conn: Connection | Session) -> int:
    """Samples of the controls slice (gold, split ``controls``)."""
    return _count(conn, sample.c.split == CONTROLS_SPLIT, sample.c.status == "gold")


def control_ids(conn: Connection | Session) -> set[str]:
    """Ids of the controls slice (gold samples of split ``controls``, as :func:`count_controls` counts them)."""
    q = sa.select(sample.c.id).where(sample.c.split == CONTROLS_SPLIT, sample.c.status == "gold")
    return {r[0] for r in conn.execute(q)}


def candidates_by_source(conn: Connection | Session) -> dict[str, int]:
    """Candidate samples of the whole store by source."""
    c = sample.c
    q = sa.select(c.source, sa.func.count()).where(c.status == "candidate").group_by(c.source).order_by(c.source)
    return {str(s): int(n) for s, n in conn.execute(q)}


def meta_names(meta: sa.ColumnElement[object], key: str) -> sa.ColumnElement[bool]:
    """Whether the JSON text of ``meta`` (a ``meta`` column) names ``key`` as :func:`json.dumps` writes it: true
    for every row whose ``meta`` holds the key (and maybe a few more, to be checked once decoded), so only those
    rows' JSON need be sent and parsed."""
    return sa.cast(meta, sa.Text).contains(json.dumps(key), autoescape=True)


def pair_index(conn: Connection | Session, meta_key: str | None = None) -> list[tuple[str, str, Any]]:
    """``(pair_id, source, meta)`` of every stored sample (both sides of a pair appear), in the table's order.

    ``meta_key``: ``meta`` is read only where its JSON text names that key as :func:`json.dumps` writes it (every
    sample whose ``meta`` holds the key, and maybe a few more), ``None`` for the others, whose JSON is then
    neither sent nor parsed (most of the time of a read of every sample)."""
    meta = sample.c.meta
    if meta_key is not None:
        meta = sa.case((meta_names(sample.c.meta, meta_key), sample.c.meta), else_=sa.null()).label("meta")
    q = sa.select(sample.c.pair_id, sample.c.source, meta)
    return [(r[0], r[1], r[2]) for r in conn.execute(q)]


def latest_build_report(conn: Connection | Session) -> JSONObject | None:
    """The report of the newest ``build_log`` row (with its ``seed`` and ``created_at``), or ``None``."""
    row = conn.execute(sa.select(build_log).order_by(build_log.c.id.desc()).limit(1)).first()
    if row is None:
        return None
    return {
        **(row.report or {}),
        "seed": row.seed,
        "created_at": iso_utc(row.created_at),
    }


class SpanCounts(TypedDict):
    """Gold spans for ``stats`` (:func:`span_counts`): spans per source and provenance, samples with spans
    and misbehavior samples per source."""

    by_source: dict[str, dict[str, int]]
    samples_with_spans: dict[str, int]
    misbehavior_samples: dict[str, int]


def span_counts(conn: Connection | Session, split: str | None = None) -> SpanCounts:
    """Counts for ``stats``: ``{"by_source": {source: {provenance: spans}}, "samples_with_spans":
    {source: n}, "misbehavior_samples": {source: n}}`` over gold samples (of ``split`` when given)."""
    t, s = gold_span, sample
    where = [s.c.status == "gold"]
    if split is not None:
        where.append(s.c.split == split)
    by_source: dict[str, dict[str, int]] = {}
    for src, prov, n in conn.execute(
        sa.select(s.c.source, t.c.provenance, sa.func.count())
        .join(s, s.c.id == t.c.sample_id)
        .where(*where)
        .group_by(s.c.source, t.c.provenance)
    ).all():
        by_source.setdefault(src, {})[prov] = int(n)
    with_spans = {
        src: int(n)
        for src, n in conn.execute(
            sa.select(s.c.source, sa.func.count(sa.distinct(t.c.sample_id)))
            .join(s, s.c.id == t.c.sample_id)
            .where(*where)
            .group_by(s.c.source)
        ).all()
    }
    mis = {
        src: int(n)
        for src, n in conn.execute(
            sa.select(s.c.source, sa.func.count()).where(*where, s.c.label == "misbehavior").group_by(s.c.source)
        ).all()
    }
    return {"by_source": by_source, "samples_with_spans": with_spans, "misbehavior_samples": mis}


class StatsDoc(TypedDict):
    """The document :func:`stats` returns, declared here only: ``automonitor.analysis.report_schema.Stats`` (what
    ``stats --json`` prints) validates it, a field per key in this order, plus the core's ``errata``."""

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


def stats(conn: Connection | Session, split: str = "test", edition: str = "paper") -> StatsDoc:
    """The ``automonitor stats`` document of the CLI contract plus extra keys.

    Contract keys: ``total``, ``pairs``, ``by_category``, ``by_task``, ``by_label`` (gold samples of
    ``split``; every vocabulary value present, 0 when absent), ``by_split`` and ``candidates`` (whole
    store). Extra keys: ``split``, ``by_category_task`` (``{category: {task: n}}``), ``by_source``,
    ``candidates_by_source``, ``shortfalls`` (from the newest build log, ``[]`` when none),
    ``build_seed`` (``None`` when never built).

    Contract keys of the editions: ``edition`` (the test split counts only that edition's members),
    ``by_label_source`` (``{provenance: n}``) and ``by_category_task`` flat as ``{"cat/task": n}``;
    the nested form moved to ``by_category_task_nested``. ``controls``: samples of the controls slice.

    ``gold_spans`` (:func:`span_counts` over gold samples of
    ``split``, every edition): spans per source and provenance, samples with spans and misbehavior
    samples per source.

    Contract key ``paper_cell_deficit`` (``{"cat/task": pairs missing}`` for each paper cell the
    ``paper`` edition cannot fill, from the newest build log) and ``paper_cells`` (per cell: target,
    built, missing, pairs by source, why short).

    ``hard``: with ``--edition hard`` on the test split the newest build's filter summary
    (:func:`_hard_summary`; ``None`` when it has none), else ``None``.
    """
    check_edition(edition)
    comp = composition(conn, split, edition)
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
    report = latest_build_report(conn)
    doc: StatsDoc = {
        "total": sum(r["n"] for r in comp),
        "pairs": count_pairs(conn, split, edition),
        "by_category": by_cat,
        "by_task": by_task,
        "by_label": by_label,
        "by_split": counts_by_split(conn),
        "candidates": count_candidates(conn),
        "split": split,
        "edition": edition,
        "by_category_task": {f"{c}/{t}": n for c, ts in by_ct.items() for t, n in ts.items()},
        "by_category_task_nested": by_ct,
        "by_label_source": count_by(conn, "label_source", split, edition),
        "controls": count_controls(conn),
        "by_source": count_by(conn, "source", split, edition),
        "candidates_by_source": candidates_by_source(conn),
        "shortfalls": (report or {}).get("shortfalls", []),
        "build_seed": (report or {}).get("seed"),
        "gold_spans": span_counts(conn, None if split == "all" else split),
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
