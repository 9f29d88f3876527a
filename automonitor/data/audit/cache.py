"""The audit cache: :func:`cached_audit` memoises :func:`~automonitor.data.audit.editions.run_audit` in memory
(``memo``) and on disk (:func:`cache_dir`), keyed by the store's :func:`fingerprint` and the edition.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Callable, cast

from automonitor.jsontypes import json_safe
from automonitor.data.cache_home import cache_home, write_entry
from store.queries.fingerprints import sample_state
from automonitor.data.audit.params import AUDIT_VERSION, check_edition


def fingerprint(engine) -> str:
    """Hex digest identifying the audited content of a store (:func:`store.queries.fingerprints.sample_state`)
    plus the store URL (password hidden) and :data:`AUDIT_VERSION`."""
    with engine.connect() as c:
        fp = sample_state(c)
    url = engine.url.render_as_string(hide_password=True)
    return hashlib.sha256(json.dumps([AUDIT_VERSION, url, fp], default=str).encode()).hexdigest()


def cache_dir() -> Path:
    """Where audit results are cached: ``$AUTOMONITOR_CACHE_DIR/audit`` or ``~/.cache/automonitor/data/audit``."""
    return cache_home() / "audit"


memo: dict[str, dict[str, Any]] = {}


def cached_audit(
    engine, edition: str = "paper", *, use_cache: bool = True, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """:func:`run_audit`, memoised in memory and on disk (one JSON file per store fingerprint and edition,
    written atomically) so ``report`` stays fast; a changed store gets a fresh audit. An unwritable cache
    directory only disables the disk cache. ``progress``, when given, is called with one line saying
    whether the audit comes from the cache or is being computed (and, then, how long it took)."""
    say = progress or (lambda _msg: None)
    check_edition(edition)
    key = f"{fingerprint(engine)[:32]}-{edition}"
    if use_cache and key in memo:
        say(f"audit of edition {edition}: from memory (store unchanged)")
        return memo[key]
    path = cache_dir() / f"{key}.json"
    if use_cache and path.is_file():
        try:
            cached: dict[str, Any] = json.loads(path.read_text())
            memo[key] = cached
            say(f"audit of edition {edition}: from the cache {path} (store unchanged)")
            return cached
        except (OSError, ValueError):
            pass
    from automonitor.data.audit.editions import run_audit  # here: reading a cached audit needs none of it

    say(f"audit of edition {edition}: computing (trivial baselines trained per slice, leakage, controls) ...")
    t0 = time.perf_counter()
    doc = cast("dict[str, Any]", json_safe(run_audit(engine, edition)))  # a dict stays a dict
    say(f"audit of edition {edition}: computed in {time.perf_counter() - t0:.1f} s (cached until the store changes)")
    memo[key] = doc
    write_entry(path, doc)
    return doc
