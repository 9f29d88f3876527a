"""Where the data step caches what it recomputes often: one directory for every on-disk cache.

``$AUTOMONITOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/automonitor``, else ``~/.cache/automonitor``. The
caches under it (the audit's results, the static analysers' findings, the adversarial filter's results)
are keyed by their inputs and the code that computes them, so deleting the directory only costs time.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["cache_home", "code_digest", "frame_digest", "write_entry", "write_text_entry"]


def cache_home() -> Path:
    """The cache directory (module doc); not created here."""
    base = os.environ.get("AUTOMONITOR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "automonitor"
    )
    return Path(base)


def write_entry(path: Path, doc: Any) -> None:
    """Write one cache entry: ``doc`` as JSON to ``path`` (:func:`write_text_entry`)."""
    write_text_entry(path, json.dumps(doc))


def write_text_entry(path: Path, text: str) -> None:
    """Write one cache entry's ``text`` to ``path``, atomically (a temporary file per process and thread, then
    ``os.replace``: the app's sessions are threads of one process), its directory created; an unwritable
    directory only disables the cache (no error)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


def code_digest(files: Iterable[Path], libs: Iterable[str]) -> str:
    """SHA-256 (hex) of the code that computes a cache entry: each file's name and bytes, in the order given
    (a missing file is left out), then each library's installed version (``-`` when not installed)."""
    h = hashlib.sha256()
    for p in files:
        if p.is_file():
            h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    for lib in libs:
        try:
            v = version(lib)
        except PackageNotFoundError:
            v = "-"
        h.update(f"{lib}={v}\0".encode())
    return h.hexdigest()


def frame_digest(part: pd.DataFrame) -> str:
    """SHA-256 (hex) of a frame's column names, row order and values (no index)."""
    import pandas as pd

    h = hashlib.sha256(json.dumps(list(part.columns)).encode())
    h.update(pd.util.hash_pandas_object(part, index=False).to_numpy().tobytes())
    return h.hexdigest()
