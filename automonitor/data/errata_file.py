"""Where the errata in force are read from, without reading them: the shipped file's path (:func:`errata_path`)
and :func:`errata_stamp`, a digest of that file's bytes and of the store's ``erratum`` rows.

:mod:`automonitor.data.errata` validates each erratum (pydantic models); this module imports neither it nor
pydantic, so that a reader which only needs to know whether the errata changed (the audit's disk and memory
cache, :func:`automonitor.data.audit.cache.cached_audit`) starts without them.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from store.queries import errata as errata_queries

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session

__all__ = ["DEFAULT_ERRATA", "errata_path", "errata_stamp"]

#: The errata shipped with the package (package data; a link to ``seeds/errata.jsonl`` in the source tree).
DEFAULT_ERRATA = Path(str(resources.files("automonitor.data").joinpath("errata.jsonl")))


def errata_path(path: str | Path | None = None) -> Path:
    """The shipped errata file: ``path``, else ``$AUTOMONITOR_ERRATA``, else the package's
    ``automonitor/data/errata.jsonl``."""
    return Path(path or os.environ.get("AUTOMONITOR_ERRATA") or DEFAULT_ERRATA)


def errata_stamp(session: Connection | Session) -> str:
    """A SHA-256 (hex, 64 characters) of what :func:`automonitor.data.errata.errata_in_force` reads: the bytes
    of the shipped file (:func:`errata_path`; ``missing`` when it does not exist, ``unreadable`` with the error's
    class when it cannot be read) and every column of the store's ``erratum`` rows (``session``: a connection or
    a session), in the order entered.

    Nothing is validated or parsed: whenever the errata in force could differ, so does the stamp (the converse
    does not hold: a blank line added to the file changes the stamp, not the errata). A cache keyed by it must
    therefore compute, and so validate, on a miss; a file that fails validation never gets an entry, as its
    reader raises before writing one."""
    h = hashlib.sha256()
    p = errata_path()
    try:
        h.update(b"file\0" + p.read_bytes())
    except FileNotFoundError:
        h.update(b"missing\0")
    except OSError as exc:
        h.update(f"unreadable\0{type(exc).__name__}".encode())
    rows = errata_queries.rows(session)
    h.update(b"\0rows\0" + json.dumps([list(r.values()) for r in rows], default=str).encode())
    return h.hexdigest()
