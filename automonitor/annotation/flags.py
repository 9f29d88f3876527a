"""Flags: annotators flag an item of their queue for the admin, admins list and resolve them."""

from __future__ import annotations

from typing import TypedDict

from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.annotation.accounts import Account, require_account, require_admin
from automonitor.annotation._common import clean_text, own_assignment, transaction
from automonitor.errors import InputError, NotFound
from automonitor.timestamps import iso_utc
from store.models import ItemFlag, utcnow
from store.queries import annotation as store


MAX_FLAG = 2000


class NewFlag(TypedDict):
    """A flag just raised (:func:`flag_item`); ``created_at`` ISO 8601 UTC."""

    id: int | None
    sample_id: str
    annotator: str
    comment: str
    created_at: str | None


class Flag(TypedDict):
    """A flag as the admin lists it (:func:`item_flags`); datetimes ISO 8601 UTC."""

    id: int
    sample_id: str
    pair_id: str
    annotator: str
    comment: str
    created_at: str | None
    resolved_at: str | None


def flag_item(engine: Engine, actor: Account, sample_id: str, comment: str | None) -> NewFlag:
    """Flag an item of the actor's own queue for the admin with a comment (any state, also after
    submission). Returns ``{"id", "sample_id", "annotator", "comment", "created_at"}``.

    Raises:
        PermissionDenied: the item is not assigned to the actor.
        InputError: empty comment or longer than 2000 characters (field ``comment``).
    """
    require_account(actor)
    text = clean_text(comment, "comment", MAX_FLAG)
    if not text:
        raise InputError("a flag needs a comment for the admin", field="comment")

    def work(s: Session) -> NewFlag:
        own_assignment(s, actor, sample_id)
        row = ItemFlag(annotator_id=actor.id, sample_id=sample_id, comment=text)
        s.add(row)
        s.flush()
        return NewFlag(
            id=row.id, sample_id=sample_id, annotator=actor.name, comment=text, created_at=iso_utc(row.created_at)
        )

    return transaction(engine, work, actor=actor)


def item_flags(engine: Engine, actor: Account, *, open_only: bool = True) -> list[Flag]:
    """Flags raised by annotators (admin only), oldest first: ``{"id", "sample_id", "pair_id",
    "annotator", "comment", "created_at", "resolved_at"}``; only unresolved ones unless ``open_only`` is
    false."""
    require_admin(actor)

    def work(s: Session) -> list[Flag]:
        return [
            {**r, "created_at": iso_utc(r["created_at"]), "resolved_at": iso_utc(r["resolved_at"])}
            for r in store.flag_rows(s, open_only=open_only)
        ]

    return transaction(engine, work, actor=actor)


def resolve_flag(engine: Engine, actor: Account, flag_id: int) -> None:
    """Mark a flag as handled (admin only). Raises :class:`NotFound` for an unknown flag id."""
    require_admin(actor)

    def work(s: Session) -> None:
        row = s.get(ItemFlag, flag_id)
        if row is None:
            raise NotFound(f"no flag {flag_id}")
        row.resolved_at = utcnow()
        s.add(row)

    transaction(engine, work, actor=actor)
