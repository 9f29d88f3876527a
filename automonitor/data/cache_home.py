"""Where the data step caches what it recomputes often: one directory for every on-disk cache.

``$AUTOMONITOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/automonitor``, else ``~/.cache/automonitor``. The
caches under it (the audit's results, the static analysers' findings, the adversarial filter's results)
are keyed by their inputs and the code that computes them, so deleting the directory only costs time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["cache_home", "write_entry"]


def cache_home() -> Path:
    """The cache directory (module doc); not created here."""
    base = os.environ.get("AUTOMONITOR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "automonitor"
    )
    return Path(base)


def write_entry(path: Path, doc: Any) -> None:
    """Write one cache entry: ``doc`` as JSON to ``path``, atomically (a temporary file per process, then
    ``os.replace``), its directory created; an unwritable directory only disables the cache (no error)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
