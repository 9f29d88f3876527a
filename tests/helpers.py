"""Small store-seeding helpers shared by the annotation tests (``from helpers import ...``; ``tests/`` is on
the import path, as for ``app_seed`` and ``servers``)."""

from __future__ import annotations

from typing import Any

from automonitor.hashing import content_hash, sha256_text
from store import session_scope

_HASH: list[str] = []


def fast_user(engine, name: str, role: str):
    """An account row with a shared precomputed argon2 hash (password ``pw``), returned as an ``Account``:
    these tests are not about hashing, and one argon2 hash per user would dominate their runtime."""
    from automonitor.accounts import Account, _hasher
    from store.models import Annotator

    if not _HASH:
        _HASH.append(_hasher.hash("pw"))
    with session_scope(engine) as s:
        row = Annotator(name=name, role=role, password_hash=_HASH[0])
        s.add(row)
        s.flush()
        return Account(id=row.id, name=name, role=role)


def candidate_row(*, request: str, response: str, label: str, status: str = "candidate",
                  **columns: Any) -> dict[str, Any]:
    """A ``Sample`` column dict for ``insert_samples``: ``columns`` (``id``, ``pair_id``, ``category``,
    ``task``, optionally ``source``...) plus the texts, ``status`` and their request/response/content
    hashes."""
    return dict(columns, label=label, request=request, response=response, status=status,
                request_hash=sha256_text(request), response_hash=sha256_text(response),
                content_hash=content_hash(request, response, label))
