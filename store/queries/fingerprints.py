"""The store's content fingerprint: one cheap summary that changes whenever what the audit, the app's
caches and the analysis read changes. Aggregates only (``COUNT``/``MAX`` per group), no row scan."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from store.tables import edition_sample, run, sample

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

__all__ = ["sample_state"]


def sample_state(conn: Connection | Session) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...], str]:
    """``(sample groups, edition groups, archived runs)``:

    - sample groups: ``(status, split, label, label_source, count, newest created_at)`` per group, as
      strings, sorted;
    - edition groups: ``(edition, members, newest membership created_at)`` per edition, sorted;
    - the first 12 hex digits of the sha256 of the newline-joined archived run ids.

    It changes when samples are added, promoted or rejected (status/split), relabelled or re-provenanced,
    when an edition gains or loses members, and when a run is archived or unarchived. ``conn``: an open
    connection or session."""
    keys = [sample.c[n] for n in ("status", "split", "label", "label_source")]
    groups = conn.execute(sa.select(*keys, sa.func.count(), sa.func.max(sample.c.created_at)).group_by(*keys)).all()
    es = edition_sample.c
    eds = conn.execute(sa.select(es.edition, sa.func.count(), sa.func.max(es.created_at)).group_by(es.edition)).all()
    archived = conn.execute(sa.select(run.c.id).where(run.c.archived.is_(True)).order_by(run.c.id)).scalars().all()

    def text(rows: Any) -> tuple[tuple[str, ...], ...]:
        return tuple(sorted(tuple("" if v is None else str(v) for v in r) for r in rows))

    return text(groups), text(eds), hashlib.sha256("\n".join(archived).encode()).hexdigest()[:12]
