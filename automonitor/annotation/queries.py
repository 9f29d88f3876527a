"""Permission-checked reads of the annotation workflow: the core's side of
:mod:`store.queries.annotation`.

The store runs the queries and checks nothing; every function here takes the acting account first,
enforces ownership (an annotator reads only their own assignments and labels; asking for anybody
else's, or for admin-only data, raises :class:`~automonitor.errors.PermissionDenied`) and then calls
the store query inside the caller's session. Signatures are those the store functions had before the
checks moved here.
"""

from __future__ import annotations

from typing import Iterable

from sqlmodel import Session

from automonitor.annotation.accounts import require_account, require_admin
from automonitor.errors import PermissionDenied
from store.queries import annotation as store
from store.queries.rowtypes import AdjudicationHistoryRow, AdjudicationRow, AssignmentRow, CandidateItem, LabelRow
from store.queries.annotation import upsert_label  # noqa: F401  (re-exported for callers)


def _read_scope(actor, annotator_id: int | None) -> int | None:
    """The annotator id a read is restricted to: ``annotator_id`` for an admin (``None`` = all),
    the actor's own id for an annotator.

    Raises:
        PermissionDenied: not logged in, or an annotator asking for anybody else's rows.
    """
    actor = require_account(actor)
    if actor.is_admin:
        return annotator_id
    if annotator_id is not None and annotator_id != actor.id:
        raise PermissionDenied("annotators can only read their own assignments and labels")
    return actor.id


def assignment_rows(session: Session, actor, annotator_id: int | None = None) -> list[AssignmentRow]:
    """:func:`store.queries.annotation.assignment_rows` restricted to the actor's own rows unless the
    actor is an admin (rows: ``id``, ``annotator_id``, ``annotator``, ``sample_id``, ``position``,
    ``seed``, ``batch``, ``submitted_at``, ``created_at``).

    Raises:
        PermissionDenied: see :func:`_read_scope`.
    """
    return store.assignment_rows(session, _read_scope(actor, annotator_id))


def label_rows(
    session: Session,
    actor,
    annotator_id: int | None = None,
    *,
    sample_ids: Iterable[str] | None = None,
    submitted_only: bool = False,
    with_sample: bool = False,
) -> list[LabelRow]:
    """:func:`store.queries.annotation.label_rows` restricted to the actor's own labels unless the
    actor is an admin; ``with_sample`` (item provenance) is admin only.

    Raises:
        PermissionDenied: an annotator asking for someone else's labels or for sample metadata.
    """
    who = _read_scope(actor, annotator_id)
    if with_sample and not actor.is_admin:
        raise PermissionDenied("item provenance is visible to admins only")
    return store.label_rows(session, who, sample_ids=sample_ids, submitted_only=submitted_only, with_sample=with_sample)


def candidate_samples(session: Session, actor, *, unassigned_only: bool = False) -> list[CandidateItem]:
    """:func:`store.queries.annotation.candidate_samples` (admin only).

    Raises:
        PermissionDenied: the actor is not an admin.
    """
    require_admin(actor)
    return store.candidate_samples(session, unassigned_only=unassigned_only)


def annotator_loads(session: Session, actor) -> dict[int, int]:
    """:func:`store.queries.annotation.annotator_loads` (admin only).

    Raises:
        PermissionDenied: the actor is not an admin.
    """
    require_admin(actor)
    return store.annotator_loads(session)


def latest_adjudications(
    session: Session, actor, sample_ids: Iterable[str] | None = None
) -> dict[str, AdjudicationRow]:
    """:func:`store.queries.annotation.latest_adjudications` (admin only).

    Raises:
        PermissionDenied: the actor is not an admin.
    """
    require_admin(actor)
    return store.latest_adjudications(session, sample_ids)


def adjudication_rows(session: Session, actor) -> list[AdjudicationHistoryRow]:
    """:func:`store.queries.annotation.adjudication_rows` (admin only).

    Raises:
        PermissionDenied: the actor is not an admin.
    """
    require_admin(actor)
    return store.adjudication_rows(session)
