"""Sample queries shared by ``build``, ``import`` and the app."""

from __future__ import annotations

from typing import Any, Iterable

import sqlalchemy as sa
from sqlmodel import Session

from store.models import EditionSample, Sample
from store.queries import rows_by_ids

EDITION_CHOICES = ("paper", "verified")

_COLUMNS = [c.name for c in Sample.__table__.columns]


def existing_ids(session: Session, ids: Iterable[str]) -> set[str]:
    """The subset of ``ids`` already present in the ``sample`` table."""
    return {r[0] for r in rows_by_ids(session, [Sample.id], Sample.id, ids)}


def insert_samples(session: Session, rows: list[dict[str, Any]]) -> int:
    """Bulk-insert sample rows (dicts with ``Sample`` column names) that are not present yet.

    Rows whose ``id`` already exists are skipped (idempotent re-import). Runs inside the caller's
    transaction: nothing is committed here. Returns the number of rows inserted.
    """
    if not rows:
        return 0
    have = existing_ids(session, [r["id"] for r in rows])
    new = [r for r in rows if r["id"] not in have]
    if not new:
        return 0
    from store.models import utcnow

    now = utcnow()
    payload = []
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
    """``edition`` if it is ``paper`` or ``verified``; raises ``InputError`` (field ``--edition``)."""
    if edition not in EDITION_CHOICES:
        from automonitor.errors import InputError

        raise InputError(
            f"unknown edition {edition!r}; expected one of {', '.join(EDITION_CHOICES)}", field="--edition"
        )
    return edition


def edition_has_rows(session: Session, edition: str) -> bool:
    """True when ``edition_sample`` holds at least one row for ``edition``."""
    q = sa.select(EditionSample.sample_id).where(EditionSample.edition == edition).limit(1)
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
    members = sa.select(EditionSample.sample_id).where(EditionSample.edition == edition)
    return conds + [Sample.id.in_(members)]  # type: ignore[union-attr]


def edition_sample_ids(session: Session, edition: str) -> set[str]:
    """Ids of the test samples of ``edition`` (see :func:`edition_filter`)."""
    return set(session.execute(sa.select(Sample.id).where(*edition_filter(session, edition))).scalars())


def control_samples(session: Session) -> list[dict[str, Any]]:
    """The controls slice (gold, split ``controls``): dicts with id, pair_id, category, task, label,
    content_hash, id order."""
    rows = session.execute(
        sa.select(Sample.id, Sample.pair_id, Sample.category, Sample.task, Sample.label, Sample.content_hash)
        .where(Sample.split == "controls", Sample.status == "gold")
        .order_by(Sample.id)
    ).all()
    return [dict(r._mapping) for r in rows]


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
    annotation are gold test samples of edition ``verified`` only (INTERFACES.md), so the paper
    mirror (status gold, split test) never picks them up, with or without ``edition_sample`` rows."""
    return Sample.label_source != "adjudicated"


def composition(session: Session, split: str = "test", edition: str | None = None) -> list[dict[str, Any]]:
    """Counts of gold samples of ``split`` by category x task x label.

    Returns rows ``{"category", "task", "label", "n"}`` sorted by category, task, label; only
    combinations present in the store. Raises ``InputError`` for an unknown split.
    """
    q = (
        sa.select(Sample.category, Sample.task, Sample.label, sa.func.count())
        .where(*_gold_filter(split, session, edition))
        .group_by(Sample.category, Sample.task, Sample.label)
        .order_by(Sample.category, Sample.task, Sample.label)
    )
    return [{"category": c, "task": t, "label": lab, "n": int(n)} for c, t, lab, n in session.execute(q)]


def count_by(session: Session, column: str, split: str = "test", edition: str | None = None) -> dict[str, int]:
    """Gold samples of ``split`` counted by one ``Sample`` column (``category``, ``task``, ``label``,
    ``source``...). Returns ``{value: n}`` sorted by value."""
    col = getattr(Sample, column)
    q = sa.select(col, sa.func.count()).where(*_gold_filter(split, session, edition)).group_by(col).order_by(col)
    return {str(v): int(n) for v, n in session.execute(q)}


def count_pairs(session: Session, split: str = "test", edition: str | None = None) -> int:
    """Number of distinct ``pair_id`` among gold samples of ``split``."""
    q = sa.select(sa.func.count(sa.distinct(Sample.pair_id))).where(*_gold_filter(split, session, edition))
    return int(session.execute(q).scalar() or 0)


def counts_by_split(session: Session) -> dict[str, int]:
    """Gold samples of the whole store by split: ``{"test": n, "train": n}`` (0 when absent; a gold
    sample without split is counted under ``"none"`` if any)."""
    out = {"test": 0, "train": 0}
    q = sa.select(Sample.split, sa.func.count()).where(Sample.status == "gold").group_by(Sample.split)
    for split, n in session.execute(q):
        out[split if split else "none"] = int(n)
    return out


def count_candidates(session: Session) -> int:
    """Samples of the whole store waiting for annotation (``status == 'candidate'``)."""
    q = sa.select(sa.func.count()).select_from(Sample).where(Sample.status == "candidate")
    return int(session.execute(q).scalar() or 0)


def candidates_by_source(session: Session) -> dict[str, int]:
    """Candidate samples of the whole store by source."""
    q = (
        sa.select(Sample.source, sa.func.count())
        .where(Sample.status == "candidate")
        .group_by(Sample.source)
        .order_by(Sample.source)
    )
    return {str(s): int(n) for s, n in session.execute(q)}


def latest_build_report(session: Session) -> dict[str, Any] | None:
    """The report of the newest ``BuildLog`` row (with its ``seed`` and ``created_at``), or ``None``."""
    from store.models import BuildLog

    row = session.execute(sa.select(BuildLog).order_by(BuildLog.id.desc()).limit(1)).scalars().first()  # type: ignore[union-attr]
    if row is None:
        return None
    return {
        **(row.report or {}),
        "seed": row.seed,
        "created_at": row.created_at.isoformat() if row.created_at else None,
    }


def stats(session: Session, split: str = "test", edition: str = "paper") -> dict[str, Any]:
    """The ``automonitor stats`` document (``../shared/CONTRACT.md``) plus extra keys.

    Contract keys: ``total``, ``pairs``, ``by_category``, ``by_task``, ``by_label`` (gold samples of
    ``split``; every vocabulary value present, 0 when absent), ``by_split`` and ``candidates`` (whole
    store). Extra keys: ``split``, ``by_category_task`` (``{category: {task: n}}``), ``by_source``,
    ``candidates_by_source``, ``shortfalls`` (from the newest build log, ``[]`` when none),
    ``build_seed`` (``None`` when never built).

    Round 2 (CONTRACT): ``edition`` (the test split counts only that edition's members),
    ``by_label_source`` (``{provenance: n}``) and ``by_category_task`` flat as ``{"cat/task": n}``;
    the nested form moved to ``by_category_task_nested``. ``controls``: samples of the controls slice.
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
    return {
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
    }
