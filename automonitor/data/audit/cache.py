"""The audit cache: :func:`cached_audit` memoises :func:`~automonitor.data.audit.editions.run_audit` in memory
(``memo``), on disk (:func:`cache_dir`) and in the store itself (:func:`keep_audits`, which ``automonitor
build`` calls, and every computation), each keyed by the samples' fingerprint and the edition: memory and disk by
the bytes the errata are read from (:func:`automonitor.data.errata_file.errata_stamp`, so a cached read neither
imports pydantic nor validates the errata file), the store by the errata in force (validated).

The copy in the store is what a cold reader (a new cache directory, another machine, a copied store)
reads instead of computing the audit (5-10 s CPU for 3,010 samples, 15-30 s per edition of a full build):
the build keeps the default edition's (and the one it shows), and the first computation of any edition
after the samples change (an import, a promotion) keeps that one, so that only one reader pays. The
store keeps the document's JSON text under ``audit:<edition>`` with :func:`content_fingerprint`
(:data:`AUDIT_VERSION`, the edition, :func:`store.queries.fingerprints.sample_state` and a digest of the errata in
force, not the store's URL: a copy of a store holds the same samples); this module decides whether it still matches.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

from sqlalchemy.engine import Engine

from automonitor.jsontypes import json_safe
from automonitor.data.cache_home import cache_home, write_entry
from automonitor.data.errata_file import errata_stamp
from store.queries.fingerprints import sample_state
from automonitor.data.audit.params import AUDIT_VERSION, EDITIONS, check_edition

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session

#: the store key of an edition's audit (:func:`store.queries.documents.read_document`)
STORE_KEY = "audit:{edition}"
_State = tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...], str, str]
#: an audit document (:func:`~automonitor.data.audit.document.audit_frame`, JSON-safe)
AuditDoc = dict[str, Any]


def _state(engine: Engine) -> _State:
    """:func:`session_state` on a connection of its own (Core: a report reads the state without the ORM)."""
    with engine.connect() as c:
        return session_state(c)


def _read_state(engine: Engine) -> _State:
    """What the disk and memory caches are keyed by, on a connection of its own: :func:`session_state` with
    :func:`automonitor.data.errata_file.errata_stamp` (the errata's file bytes and rows, not validated) in
    place of the digest of the errata in force, so that a cached read neither imports pydantic nor validates
    the errata file (about a quarter of a cached ``automonitor audit``). It changes whenever
    :func:`session_state` can; :func:`cached_audit` computes :func:`session_state` itself on a miss, where an
    invalid errata file raises as before."""
    with engine.connect() as c:
        samples, editions, archived = sample_state(c)
        return samples, editions, archived, errata_stamp(c)


def session_state(session: Connection | Session) -> _State:
    """:func:`store.queries.fingerprints.sample_state` plus a digest of the errata in force (the shipped file's
    and the store's, :func:`automonitor.data.errata.errata_in_force`), read in ``session`` (a session or a
    connection; inside a writer's transaction it sees what that transaction wrote): the audit counts errata and marks the test pairs they
    name, so an ``errata add`` (or a new shipped errata file) makes every kept copy stale."""
    from automonitor.data.errata import errata_in_force

    samples, editions, archived = sample_state(session)
    errata = errata_in_force(session)
    digest = hashlib.sha256("\n".join(e.line() for e in errata).encode()).hexdigest()[:12]
    return samples, editions, archived, digest


def _disk_fingerprint(engine: Engine, state: _State) -> str:
    url = engine.url.render_as_string(hide_password=True)
    return hashlib.sha256(json.dumps([AUDIT_VERSION, url, state], default=str).encode()).hexdigest()


def fingerprint(engine: Engine) -> str:
    """Hex digest identifying the audited content of a store (:func:`store.queries.fingerprints.sample_state`
    and the errata's sources, :func:`_read_state`) plus the store URL (password hidden) and
    :data:`AUDIT_VERSION`: the disk cache's key."""
    return _disk_fingerprint(engine, _read_state(engine))


def content_fingerprint(state: _State, edition: str) -> str:
    """Hex digest (64 characters) of :data:`AUDIT_VERSION`, ``edition`` and a store's ``state``
    (:func:`store.queries.fingerprints.sample_state`): the key under which the store keeps an audit. Unlike
    :func:`fingerprint` it leaves out the URL, so a copy of a store reads the audit its source kept."""
    return hashlib.sha256(json.dumps([AUDIT_VERSION, edition, state], default=str).encode()).hexdigest()


def cache_dir() -> Path:
    """Where audit results are cached: ``$AUTOMONITOR_CACHE_DIR/audit`` or ``~/.cache/automonitor/data/audit``."""
    return cache_home() / "audit"


memo: dict[str, AuditDoc] = {}


def _read_kept(engine: Engine, edition: str, content_fp: str) -> AuditDoc | None:
    """The audit of ``edition`` the store keeps for ``content_fp``; ``None`` when it keeps none (or an
    unreadable one) for that content."""
    from store.queries.documents import read_document

    with engine.connect() as c:
        text = read_document(c, STORE_KEY.format(edition=edition), content_fp)
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _keep(engine: Engine, edition: str, content_fp: str, doc: AuditDoc) -> str | None:
    """Keep ``doc`` in the store as the audit of ``edition`` for ``content_fp``, unless the samples changed
    since ``content_fp`` was taken (the document could then mix two states). Returns ``None`` when kept,
    else why not (the samples changed, or the database refused the write: a read-only store)."""
    import sqlalchemy.exc

    from store import session_scope
    from store.queries.documents import write_document

    if content_fingerprint(_state(engine), edition) != content_fp:
        return "the samples changed while it was computed"
    try:
        with session_scope(engine) as s:
            write_document(s, STORE_KEY.format(edition=edition), content_fp, json.dumps(doc))
    except sqlalchemy.exc.SQLAlchemyError as e:
        return f"the store refused the write ({type(e.__cause__ or e).__name__})"
    return None


def cached_audit(
    engine: Engine,
    edition: str = "paper",
    *,
    use_cache: bool = True,
    progress: Callable[[str], None] | None = None,
) -> AuditDoc:
    """:func:`run_audit` of ``edition``, read from memory, else from the disk cache (one JSON file per store
    fingerprint and edition, written atomically), else from the store (the copy :func:`keep_audits` or an
    earlier computation kept there for the same samples), else computed, then memoised, written to the
    disk cache and kept in the store (when the store takes the write: a read-only store only loses that
    copy). A changed store (other samples, memberships or archived runs) gets a fresh audit; an unwritable
    cache directory only disables the disk cache. ``use_cache=False`` recomputes (and refreshes the three
    copies). ``progress``, when given, is called with one line saying where the audit comes from (and, when
    computed, how long it took). Raises ``InputError`` for an unknown edition."""
    say = progress or (lambda _msg: None)
    check_edition(edition)
    key = f"{fingerprint(engine)[:32]}-{edition}"
    if use_cache and key in memo:
        say(f"audit of edition {edition}: from memory (store unchanged)")
        return memo[key]
    path = cache_dir() / f"{key}.json"
    if use_cache and path.is_file():
        try:
            cached: AuditDoc = json.loads(path.read_text())
            memo[key] = cached
            say(f"audit of edition {edition}: from the cache {path} (store unchanged)")
            return cached
        except (OSError, ValueError):
            pass
    content_fp = content_fingerprint(_state(engine), edition)  # the errata validated here (InputError)
    if use_cache and (kept := _read_kept(engine, edition, content_fp)) is not None:
        memo[key] = kept
        write_entry(path, kept)
        say(f"audit of edition {edition}: from the store (kept for these samples)")
        return kept
    from automonitor.data.audit.editions import run_audit  # here: reading a cached audit needs none of it

    say(f"audit of edition {edition}: computing (trivial baselines trained per slice, leakage, controls) ...")
    t0 = time.perf_counter()
    doc = cast(AuditDoc, json_safe(run_audit(engine, edition)))  # a dict stays a dict
    say(f"audit of edition {edition}: computed in {time.perf_counter() - t0:.1f} s (cached until the store changes)")
    memo[key] = doc
    write_entry(path, doc)
    why = _keep(engine, edition, content_fp, doc)
    if why is not None:
        say(f"audit of edition {edition}: not kept in the store: {why}")
    return doc


def keep_audits(
    engine: Engine, editions: tuple[str, ...] = EDITIONS, *, progress: Callable[[str], None] | None = None
) -> dict[str, str]:
    """Make the store keep the audit of each of ``editions`` for its current samples (what ``automonitor
    build`` calls for ``paper`` and its ``--edition`` once it has written), so that a report, the audit command and the app read it
    instead of computing it. An audit the store already keeps for these samples is left as it is; one in
    memory or in the disk cache is copied; any other is computed (:func:`cached_audit`).

    Returns ``{edition: how}``, ``how`` one of ``"kept already"``, ``"kept"``, or ``"not kept: <why>"``
    (the samples changed meanwhile, or the store refused the write). Raises ``InputError`` for an unknown
    edition."""
    out: dict[str, str] = {}
    for edition in editions:
        check_edition(edition)
        content_fp = content_fingerprint(_state(engine), edition)
        if _read_kept(engine, edition, content_fp) is not None:
            out[edition] = "kept already"
            continue
        doc = cached_audit(engine, edition, progress=progress)
        why = _keep(engine, edition, content_fp, doc)
        out[edition] = "kept" if why is None else f"not kept: {why}"
    return out
