"""Content-keyed results of a report's parts, kept on disk so that a new store version pays only for what changed.

The report cache (:mod:`automonitor.analysis.report_cache`) keeps whole documents per store version: a store
that gained or finished a run misses it and the report used to compute every run's evidence grounding and
every paired comparison again, though most of them had the same inputs as before. :func:`recall` keeps such a
part under a key that is a digest of **everything its value is computed from**, handed over by the caller as
the inputs themselves (the run's sample ids and evidence lists and the samples' texts; the two runs' cell
codes, the pair counts and the bootstrap parameters), plus the code: :func:`automonitor.analysis.report_cache.
code_stamp` (every ``.py`` file of ``automonitor`` and ``store``), the Python, NumPy and SciPy versions, and the
part's ``kind`` with this module's format number. Nothing about the store goes into a key, so a key matches
only when the computation would get the same inputs, on SQLite or PostgreSQL alike; a part whose inputs a
caller cannot list completely must not use it.

Active only inside a :func:`memo_block` (:func:`automonitor.analysis.from_store.report` opens one); elsewhere
:func:`recall` just computes. Entries are JSON files under ``$AUTOMONITOR_CACHE_DIR/memo/<kind>/`` (written
atomically; an unreadable entry is computed again, an unwritable directory only disables the memo); each kind
keeps its newest :data:`KEEP` entries.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from contextvars import ContextVar
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

from automonitor.data.cache_home import cache_home, write_text_entry

#: Entries kept per kind (the oldest are removed beyond this; a report of 100 runs uses ~150).
KEEP = 4096
_FORMAT = 1
T = TypeVar("T")

#: the salt of the block (code and library versions), or ``None`` outside a :func:`memo_block`
_SALT: ContextVar[bytes | None] = ContextVar("_SALT", default=None)
_WRITTEN: ContextVar[set[str] | None] = ContextVar("_WRITTEN", default=None)


def memo_folder() -> Path:
    """``$AUTOMONITOR_CACHE_DIR/memo`` (or ``~/.cache/automonitor/memo``)."""
    return cache_home() / "memo"


@contextlib.contextmanager
def memo_block() -> Iterator[None]:
    """Within the block :func:`recall` reads and keeps entries (module doc). The code's fingerprint is taken
    once, on entering; on leaving, each kind written to is pruned to :data:`KEEP` entries. Nested blocks
    share the outer one."""
    if _SALT.get() is not None:
        yield
        return
    import numpy
    import scipy

    from automonitor.analysis.report_cache import code_stamp

    versions = [_FORMAT, code_stamp(), sys.version, numpy.__version__, scipy.__version__]
    salt_token = _SALT.set(hashlib.sha256(json.dumps(versions).encode()).digest())
    written: set[str] = set()
    written_token = _WRITTEN.set(written)
    try:
        yield
    finally:
        _SALT.reset(salt_token)
        _WRITTEN.reset(written_token)
        for kind in written:
            with contextlib.suppress(OSError):
                _prune(memo_folder() / kind)


def memo_active() -> bool:
    """Whether :func:`recall` keeps entries here (inside a :func:`memo_block`)."""
    return _SALT.get() is not None


def recall(kind: str, inputs: Iterable[bytes | str], compute: Callable[[], T]) -> T:
    """``compute()``, or the value kept for the same ``kind`` and ``inputs`` by an earlier call (in this or another
    process) with the same code (module doc). ``inputs``: byte or text strings that together determine
    ``compute()``'s value completely and unambiguously (each is length-prefixed in the digest; the caller
    encodes each input so that different values give different strings: ``repr`` of JSON values, an array's
    dtype, shape and bytes). The value must be JSON data that reads back equal (``dict``/``list``/``str``/``int``/
    ``float``/``bool``/``None``; no tuples); one that ``json.dumps`` refuses is returned but not kept. Outside a
    :func:`memo_block`: ``compute()``."""
    return recall_many(kind, [inputs], lambda todo: [compute()])[0]


def recall_many(
    kind: str, inputs: Sequence[Iterable[bytes | str]], compute: Callable[[list[int]], Sequence[T]]
) -> list[T]:
    """:func:`recall` of several values at once: ``inputs[i]`` are the inputs of value ``i``; ``compute(todo)`` gets
    the indices of the values not kept (ascending) and returns those values, in that order (one call, so a
    vectorised computation stays vectorised; each value must depend on its own inputs only)."""
    salt = _SALT.get()
    if salt is None:
        return list(compute(list(range(len(inputs)))))
    paths = [_path(salt, kind, parts) for parts in inputs]
    out: list[T | None] = [None] * len(paths)
    todo = []
    for i, path in enumerate(paths):
        try:
            out[i] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # no entry, or one that cannot be read: compute
            todo.append(i)
    if todo:
        values = compute(todo)
        if len(values) != len(todo):
            raise ValueError(f"compute gave {len(values)} values for {len(todo)}")
        for i, value in zip(todo, values):
            out[i] = value
            try:
                text = json.dumps(value)
            except (TypeError, ValueError):  # not JSON data: not kept
                continue
            write_text_entry(paths[i], text)
        written = _WRITTEN.get()
        if written is not None:
            written.add(kind)
    return out  # type: ignore[return-value]  # every slot is filled: read back or computed


def _path(salt: bytes, kind: str, inputs: Iterable[bytes | str]) -> Path:
    """The entry of ``kind`` for ``inputs``: a digest of the salt, the kind and each input, length-prefixed."""
    h = hashlib.sha256(salt)
    h.update(kind.encode() + b"\0")
    for part in inputs:
        b = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(b"%d:" % len(b))
        h.update(b)
    return memo_folder() / kind / f"{h.hexdigest()[:40]}.json"


def _prune(folder: Path) -> None:
    """Remove the oldest entries of ``folder`` beyond :data:`KEEP` (only when there are more than that)."""
    with os.scandir(folder) as it:
        names = [e.name for e in it if e.name.endswith(".json")]
    if len(names) <= KEEP:
        return
    by_age = sorted(names, key=lambda n: os.stat(folder / n).st_mtime_ns, reverse=True)
    for old in by_age[KEEP:]:
        with contextlib.suppress(OSError):
            os.unlink(folder / old)
