"""Queries of the training corpus (``automonitor.runs.probe.corpus``): the gold train samples it draws from and
the held-out texts it must not overlap."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlmodel import Session, col

from store.models import Sample


def gold_train_samples(session: Session) -> Sequence[Sample]:
    """Every gold ``train`` sample, sorted by id."""
    q = sa.select(Sample).where(col(Sample.status) == "gold", col(Sample.split) == "train").order_by(col(Sample.id))
    return session.execute(q).scalars().all()


def heldout_texts(session: Session) -> list[tuple[str, str, str]]:
    """``(sample_id, request, response)`` of every sample that is not gold ``train``."""
    q = sa.select(col(Sample.id), col(Sample.request), col(Sample.response)).where(
        sa.not_(sa.and_(col(Sample.status) == "gold", col(Sample.split) == "train"))
    )
    return [(a, b, c) for a, b, c in session.execute(q)]
