"""Where the data step caches what it recomputes often: one directory for every on-disk cache.

``$AUTOMONITOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/automonitor``, else ``~/.cache/automonitor``. The
caches under it (the audit's results, the static analysers' findings, the adversarial filter's results)
are keyed by their inputs and the code that computes them, so deleting the directory only costs time.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_home"]


def cache_home() -> Path:
    """The cache directory (module doc); not created here."""
    base = os.environ.get("AUTOMONITOR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "automonitor"
    )
    return Path(base)
