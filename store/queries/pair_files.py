"""Store reads of the pair-file importer and exporter (``automonitor.data.pairfiles``): which samples and pairs of
a file are already stored, stored pairs by request, and the samples an export writes."""

from __future__ import annotations

from typing import Any, Iterable

import sqlalchemy as sa
from sqlmodel import Session, col

from store.models import Sample
from store.queries import rows_by_ids


def stored_samples(session: Session, ids: Iterable[str]) -> dict[str, Any]:
    """``{sample_id: row}`` of the stored samples among ``ids``; a row has ``id``, ``pair_id``,
    ``category``, ``task``, ``label``, ``request_hash``, ``response_hash``, ``status``, ``split``."""
    columns = [
        Sample.id,
        Sample.pair_id,
        Sample.category,
        Sample.task,
        Sample.label,
        Sample.request_hash,
        Sample.response_hash,
        Sample.status,
        Sample.split,
    ]
    return {row.id: row for row in rows_by_ids(session, columns, col(Sample.id), ids)}


def stored_pair_members(session: Session, pair_ids: Iterable[str]) -> dict[str, set[str]]:
    """``{pair_id: {sample_id, ...}}`` of the stored samples of the pairs ``pair_ids``."""
    out: dict[str, set[str]] = {}
    for pair_id, sample_id in rows_by_ids(session, [Sample.pair_id, Sample.id], col(Sample.pair_id), pair_ids):
        out.setdefault(pair_id, set()).add(sample_id)
    return out


def pairs_by_request_hash(session: Session, request_hashes: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """``{pair_id: [(request_hash, response_hash), ...]}`` of the stored samples whose request hash is one
    of ``request_hashes`` (one entry a sample)."""
    out: dict[str, list[tuple[str, str]]] = {}
    columns = [Sample.pair_id, Sample.request_hash, Sample.response_hash]
    for pair_id, request_hash, response_hash in rows_by_ids(session, columns, col(Sample.request_hash), request_hashes):
        out.setdefault(pair_id, []).append((request_hash, response_hash))
    return out


def export_samples(
    session: Session, *, split: str, status: str, edition: str | None = None, label_source: str | None = None
) -> list[Sample]:
    """The samples a pair-file export writes, unordered. ``status``: ``gold`` | ``candidate`` |
    ``rejected`` | ``all``; ``split``: ``test`` | ``train`` | ``controls`` | ``all``, ``test`` and ``train``
    filtering only samples that have a split (candidates have none), ``controls`` only the controls; ``edition`` (gold ``test`` only): that edition's members
    (:func:`store.queries.samples.edition_filter`, which raises ``InputError`` for an unknown edition);
    ``label_source``: only that provenance. Without ``edition``, gold ``test`` samples leave adjudicated pairs
    out (the paper mirror); with one, its membership alone decides (``verified`` holds the adjudicated pairs).
    The values are trusted (the caller checks them)."""
    from store.queries.samples import edition_filter

    q = sa.select(Sample)
    if label_source is not None:
        q = q.where(col(Sample.label_source) == label_source)
    if edition is not None and split == "test" and status == "gold":
        q = q.where(*edition_filter(session, edition))
    if status != "all":
        q = q.where(col(Sample.status) == status)
    if split == "controls":  # the benign-only controls only: never a candidate (no split) beside them
        q = q.where(col(Sample.split) == split)
    elif split != "all":
        q = q.where(sa.or_(col(Sample.split) == split, col(Sample.split).is_(None)))
    if split == "test" and status == "gold" and edition is None:
        q = q.where(col(Sample.label_source) != "adjudicated")
    return list(session.execute(q).scalars())
