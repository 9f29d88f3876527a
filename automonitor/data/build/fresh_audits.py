"""The audits a build into a new store keeps, read from an earlier build of the same plan.

A store that held no sample before a build holds, once the build is written, exactly what the plan says: its
sample rows, edition memberships, ladder runs and build report (none of them from the store's past), under the
errata the plan was made with. So the audit of an edition there is a function of the plan's cache key
(:func:`~automonitor.data.build.plan_cache.plan_key`: raw data, seed, errata, code, libraries) and the edition,
and an audit computed after one such build is the audit of the next. The store's own fingerprint
(:func:`automonitor.data.audit.cache.content_fingerprint`) cannot say so: it holds the rows' creation times.

:func:`keep_from_cache` writes, inside the build's transaction, the audit text kept for an earlier fresh build of
the same plan (``<cache home>/audit/built-<key>.json``) under the store's fingerprint of what the transaction
wrote; :func:`remember` copies the text the store keeps after :func:`automonitor.data.audit.cache.keep_audits`
computed it into that file. A store that held any sample before the build never uses these files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from automonitor.data.audit.cache import STORE_KEY, cache_dir, content_fingerprint, session_state
from automonitor.data.audit.params import AUDIT_VERSION
from automonitor.data.cache_home import write_text_entry

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine
    from sqlmodel import Session

__all__ = ["built_path", "keep_from_cache", "remember"]


def built_path(plan_key: str, edition: str) -> Path:
    """The file of the audit of ``edition`` after a fresh build of the plan with key ``plan_key``."""
    key = hashlib.sha256(json.dumps([AUDIT_VERSION, plan_key, edition]).encode()).hexdigest()
    return cache_dir() / f"built-{key}.json"


def _read_text(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
        return text if isinstance(json.loads(text), dict) else None
    except (OSError, ValueError):
        return None


def keep_from_cache(session: Session, editions: tuple[str, ...], plan_key: str) -> dict[str, str]:
    """Inside the transaction of a build into a store that held no sample: keep (``derived_document``) the
    audit of each of ``editions`` that an earlier fresh build of ``plan_key`` left in the cache, under the
    fingerprint of what this transaction wrote. Returns ``{edition: that fingerprint}`` for every edition (kept
    or not: :func:`remember` takes it)."""
    from store.queries.documents import write_document

    state = session_state(session)
    fps = {ed: content_fingerprint(state, ed) for ed in editions}
    for ed, fp in fps.items():
        text = _read_text(built_path(plan_key, ed))
        if text is not None:
            write_document(session, STORE_KEY.format(edition=ed), fp, text)
    return fps


def remember(engine: Engine, fps: dict[str, str], plan_key: str) -> None:
    """After the build and :func:`~automonitor.data.audit.cache.keep_audits`: copy into the cache each audit the
    store keeps for the fingerprint the build's transaction had (``fps``, :func:`keep_from_cache`), when the
    cache lacks it. An audit kept for other content (the samples changed since) is not copied; an unwritable
    cache directory only disables this."""
    from store.queries.documents import read_document

    for ed, fp in fps.items():
        path = built_path(plan_key, ed)
        if path.is_file():
            continue
        with engine.connect() as c:
            text = read_document(c, STORE_KEY.format(edition=ed), fp)
        if text is None:
            continue
        write_text_entry(path, text)
