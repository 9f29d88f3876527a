"""Queries for the benchmark audit (``automonitor audit``): the samples it reads and a fingerprint of them.

The store knows no domain rule: these functions only select rows; which rows form an edition's test set
when the edition has no membership rows is decided by the caller (:mod:`automonitor.data.audit`).
"""

from __future__ import annotations


from typing import Any, Iterable

import pandas as pd
import sqlalchemy as sa

from store.queries import rows_by_ids
from store.tables import edition_sample, sample

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
    q = sa.select(edition_sample.c.sample_id).where(edition_sample.c.edition == edition)
    return {r[0] for r in conn.execute(q)}


def gold_samples(conn, splits: tuple[str, ...]) -> pd.DataFrame:
    """Gold samples (``status == 'gold'``) whose split is one of ``splits``, columns :data:`AUDIT_COLUMNS`."""
    cols = [sample.c[c] for c in AUDIT_COLUMNS]
    q = sa.select(*cols).where(sample.c.status == "gold", sample.c.split.in_(splits))
    rows = conn.execute(q).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=list(AUDIT_COLUMNS))


def samples_by_ids(conn, ids: set[str]) -> pd.DataFrame:
    """Samples with the given ids (any status), columns :data:`AUDIT_COLUMNS`."""
    cols = [sample.c[c] for c in AUDIT_COLUMNS]
    rows = rows_by_ids(conn, cols, sample.c.id, sorted(ids))
    return pd.DataFrame([tuple(r) for r in rows], columns=list(AUDIT_COLUMNS))


def sample_meta_values(conn, ids: Iterable[str], key: str) -> dict[str, Any]:
    """``{sample_id: meta[key]}`` for the samples ``ids`` whose ``meta`` has ``key`` (read in chunks of 900 ids)."""
    rows = rows_by_ids(conn, [sample.c.id, sample.c.meta], sample.c.id, ids)
    return {sid: meta[key] for sid, meta in rows if isinstance(meta, dict) and key in meta}
