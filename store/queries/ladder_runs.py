"""Queries for the detector ladder's runs (``Run.kind == 'ladder'``): which are stored with which fingerprint,
and deleting them. Every function runs inside the caller's transaction and commits nothing; the build writes
them (:func:`automonitor.data.build.ladder_runs.write_runs`)."""

from __future__ import annotations

from typing import Iterable

import sqlalchemy as sa
from sqlmodel import Session, col

from automonitor.vocab import RunKind
from store.models import Prediction, Run
from store.queries import chunks

KIND: RunKind = "ladder"


def stored_fingerprints(session: Session) -> dict[str, str | None]:
    """``{run_id: params["ladder"]["fingerprint"]}`` of every ladder run (``None`` where it has none)."""
    rows = session.execute(sa.select(col(Run.id), col(Run.params)).where(col(Run.kind) == KIND)).all()
    return {rid: ((params or {}).get("ladder") or {}).get("fingerprint") for rid, params in rows}


def delete_runs(session: Session, run_ids: Iterable[str]) -> int:
    """Delete the ladder runs ``run_ids`` with their predictions (a run of another kind is left alone);
    returns how many runs were deleted."""
    ids = sorted(set(run_ids))
    gone = 0
    for part in chunks(ids):
        mine = list(
            session.execute(sa.select(col(Run.id)).where(col(Run.id).in_(part), col(Run.kind) == KIND)).scalars()
        )
        if mine:
            session.execute(sa.delete(Prediction).where(col(Prediction.run_id).in_(mine)))
            session.execute(sa.delete(Run).where(col(Run.id).in_(mine)))
            gone += len(mine)
    return gone
