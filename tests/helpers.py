"""Helpers shared by the test modules and tests/conftest.py (``from helpers import ...``; ``tests/`` is on
the import path, as for ``app_seed`` and ``servers``). Test modules import from here, never from
``conftest`` (two conftest.py files exist, so ``import conftest`` is ambiguous)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from automonitor.hashing import content_hash, sha256_text
from store import session_scope

REPO = Path(__file__).resolve().parents[1]
RAW = Path(os.environ.get("AUTOMONITOR_RAW", REPO.parent / "shared" / "raw")).resolve()
PG_ADMIN_URL = os.environ.get("AUTOMONITOR_TEST_PG", "postgresql+psycopg://127.0.0.1:5432/test")


def run_cli(
    args: list[str],
    *,
    db: str,
    env: dict | None = None,
    input: str | None = None,
    cwd: Path | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess:
    """Run the real ``automonitor`` console script in a subprocess against store ``db``."""
    full_env = {**os.environ, "AUTOMONITOR_DB": db, "AUTOMONITOR_RAW": str(RAW), **(env or {})}
    exe = Path(sys.executable).parent / "automonitor"
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, env=full_env, input=input, cwd=cwd, timeout=timeout
    )


_HASH: list[str] = []


def fast_user(engine, name: str, role: str):
    """An account row with a shared precomputed argon2 hash (password ``pw``), returned as an ``Account``:
    these tests are not about hashing, and one argon2 hash per user would dominate their runtime."""
    from automonitor.annotation.accounts import Account, _hasher
    from store.models import Annotator

    if not _HASH:
        _HASH.append(_hasher.hash("pw"))
    with session_scope(engine) as s:
        row = Annotator(name=name, role=role, password_hash=_HASH[0])
        s.add(row)
        s.flush()
        return Account(id=row.id, name=name, role=role)


def candidate_row(
    *, request: str, response: str, label: str, status: str = "candidate", **columns: Any
) -> dict[str, Any]:
    """A ``Sample`` column dict for ``insert_samples``: ``columns`` (``id``, ``pair_id``, ``category``,
    ``task``, optionally ``source``...) plus the texts, ``status`` and their request/response/content
    hashes."""
    return dict(
        columns,
        label=label,
        request=request,
        response=response,
        status=status,
        request_hash=sha256_text(request),
        response_hash=sha256_text(response),
        content_hash=content_hash(request, response, label),
    )
