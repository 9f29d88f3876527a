"""Queries for the benchmark audit (``automonitor audit``): the samples it reads and a fingerprint of them.

The store knows no domain rule: these functions only select rows; which rows form an edition's test set
when the edition has no membership rows is decided by the caller (:mod:`automonitor.data.audit`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import sqlalchemy as sa
from sqlmodel import col

from store.models import EditionSample, Sample

AUDIT_COLUMNS = (
    "id",
    "pair_id",
    "category",
    "task",
    "label",
    "request",
    "response",
    "source",
    "label_source",
    "split",
    "meta",
)


def edition_member_ids(conn, edition: str) -> set[str]:
    """Ids of the samples that are members of ``edition`` (rows of ``edition_sample``)."""
    q = sa.select(col(EditionSample.sample_id)).where(col(EditionSample.edition) == edition)
    return {r[0] for r in conn.execute(q)}


def gold_samples(conn, splits: tuple[str, ...]) -> pd.DataFrame:
    """Gold samples (``status == 'gold'``) whose split is one of ``splits``, columns :data:`AUDIT_COLUMNS`."""
    cols = [getattr(Sample, c) for c in AUDIT_COLUMNS]
    q = sa.select(*cols).where(col(Sample.status) == "gold", col(Sample.split).in_(splits))
    rows = conn.execute(q).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=list(AUDIT_COLUMNS))


def samples_by_ids(conn, ids: set[str]) -> pd.DataFrame:
    """Samples with the given ids (any status), columns :data:`AUDIT_COLUMNS`."""
    from store.queries import rows_by_ids

    cols = [getattr(Sample, c) for c in AUDIT_COLUMNS]
    rows = rows_by_ids(conn, cols, Sample.id, sorted(ids))
    return pd.DataFrame([tuple(r) for r in rows], columns=list(AUDIT_COLUMNS))


def sample_fingerprint(conn) -> tuple[Any, ...]:
    """A cheap fingerprint of everything the audit reads: sample counts by status x split x label
    x label_source, the newest sample ``created_at``, and edition membership counts per edition. It
    changes when samples are added, promoted/rejected (status/split change), relabelled or re-provenanced,
    or when edition membership changes."""
    groups = conn.execute(
        sa.select(
            col(Sample.status),
            col(Sample.split),
            col(Sample.label),
            col(Sample.label_source),
            sa.func.count(),
            sa.func.max(Sample.created_at),
        ).group_by(col(Sample.status), col(Sample.split), col(Sample.label), col(Sample.label_source))
    ).all()
    eds = conn.execute(
        sa.select(col(EditionSample.edition), sa.func.count(), sa.func.max(EditionSample.created_at)).group_by(
            col(EditionSample.edition)
        )
    ).all()
    g = sorted(tuple("" if v is None else str(v) for v in r) for r in groups)
    e = sorted(tuple("" if v is None else str(v) for v in r) for r in eds)
    return (tuple(g), tuple(e))
