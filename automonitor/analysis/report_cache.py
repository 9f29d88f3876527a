"""The report cache: :func:`cached_report` keeps the document of
:func:`automonitor.analysis.from_store.report` on disk, keyed by a fingerprint of the store file and of
the code, so that ``automonitor report`` run again on an unchanged store reads it back instead of
loading 90,000 predictions and computing the analysis again.

The fingerprint (:func:`store_stamp`) is the size and modification time (nanoseconds) of a SQLite store's
file and of its write-ahead log (when not empty): every committed write changes one of them. A store written less than
:data:`SETTLE_S` seconds ago is not cached (file times advance in clock ticks of a few milliseconds, so
two writes in one tick could share a time); other databases (PostgreSQL) have no such fingerprint and
are not cached. The code's fingerprint (:func:`code_stamp`) covers the source files of ``automonitor``
and ``store``: an edited or upgraded analysis never reads an old document. Imports nothing heavy, so a
cached read starts fast.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence, TypeVar

from automonitor.data.cache_home import cache_home, write_entry

if TYPE_CHECKING:  # the report's models (pydantic) load where a document is validated, not for a text read back
    from sqlalchemy.engine import Engine

    from automonitor.analysis.report_schema import Report

#: A store written this recently (seconds) is not cached (see the module doc).
SETTLE_S = 2.0
#: Documents kept in the cache directory (the oldest are removed beyond this).
KEEP = 48
_FORMAT = 1
T = TypeVar("T")


def cache_dir() -> Path:
    """``$AUTOMONITOR_CACHE_DIR/reports`` (or ``~/.cache/automonitor/reports``)."""
    return cache_home() / "reports"


def store_stamp(engine: Engine) -> str | None:
    """``"path:size:mtime_ns|wal size:mtime_ns"`` of a SQLite store file, ``None`` for another database,
    an in-memory store, a missing file, or a store written in the last :data:`SETTLE_S` seconds."""
    url = engine.url
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    path = Path(url.database).resolve()
    parts, newest = [str(path)], 0
    for p in (path, Path(f"{path}-wal")):
        try:
            st = p.stat()
        except FileNotFoundError:
            if p == path:
                return None
            parts.append("0")  # no log, as an empty one: nothing written since the last checkpoint
            continue
        if p != path and st.st_size == 0:  # an empty log (made when a connection opens) holds no write
            parts.append("0")
            continue
        parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        newest = max(newest, st.st_mtime_ns)
    if time.time_ns() - newest < SETTLE_S * 1e9:
        return None
    return "|".join(parts)


def code_stamp() -> str:
    """A digest of the names, sizes and modification times of the ``.py`` files of ``automonitor`` and
    ``store`` (a changed analysis gets fresh documents)."""
    import store

    roots = [Path(__file__).resolve().parents[1], Path(store.__file__).resolve().parent]
    h = hashlib.sha256()
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(dirpath, name))
                    h.update(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


@contextlib.contextmanager
def gc_paused(*, settle: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (reference counting still frees everything
    acyclic). Computing a report allocates hundreds of thousands of rows, lists and tuples while as
    many stay alive, so the collector's automatic passes went over that whole heap again and again:
    about a quarter of the CPU of a cold ``report``. It is enabled again on leaving the block, unless
    it was already disabled on entering it (an enclosing or concurrent block enables it).

    ``settle``: on leaving, the objects the block left alive (every object made while the collector was
    paused is still in its youngest generation) are moved to the oldest generation at once
    (``gc.freeze()`` then ``gc.unfreeze()``, two list splices) instead of being traversed by the young
    pass that enabling the collector sets off (~0.07 s after ``report --format html`` imported pandas and
    SQLAlchemy in the block); a reference cycle among them is then freed by the next full pass. For a
    block that ends a command (``automonitor report``; the console script then freezes everything at exit,
    :func:`automonitor.cli.main`); no other block freezes objects."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if settle:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


@contextlib.contextmanager
def blas_one_thread() -> Iterator[None]:
    """BLAS (NumPy's OpenBLAS) on one thread for the block (``threadpoolctl``; NumPy must be imported
    already). A report's BLAS calls are small, and on a machine whose cores are shared the idle pool
    threads spinning for work cost more CPU than they save; results do not depend on the thread count
    here (the same report bytes)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def cached_report(
    engine: Engine,
    run_ids: Sequence[str] | None,
    options: Mapping[str, object],
    compute: Callable[[], Report],
) -> Report:
    """``compute()`` (a :class:`Report` of ``run_ids`` with ``options`` on ``engine``), read from the
    cache when the store, the code, the runs and the options are those of a cached document; otherwise
    computed and, when the store has a fingerprint (:func:`store_stamp`) that did not change while it
    was computed, written to the cache (atomically; an unwritable directory only disables the cache)."""
    from automonitor.analysis.report_schema import Report

    return cached_json(
        engine, [None if run_ids is None else list(run_ids), options], compute, Report.to_dict, Report.model_validate
    )


def cached_text(engine: Engine, key: object, compute: Callable[[], str]) -> str:
    """:func:`cached_json` of a text (``automonitor report --json``'s whole output): read back as it was
    written, so an unchanged store prints its document without building the report's models or encoding it
    again."""

    def load(doc: object) -> str:
        if not isinstance(doc, str):
            raise ValueError("not a text")  # another kind of document: computed again
        return doc

    return cached_json(engine, ["text", key], compute, load=load)


def cached_json(
    engine: Engine,
    key: object,
    compute: Callable[[], T],
    dump: Callable[[T], object] = lambda x: x,
    load: Callable[[object], T] = lambda x: x,  # type: ignore[assignment,return-value]
) -> T:
    """``compute()`` of the store ``engine`` for ``key`` (JSON-able: what the value depends on besides the
    store and the code), cached as :func:`cached_report`'s documents are; ``dump`` / ``load`` turn the value
    into JSON data and back (the identity for plain dicts and lists of strings and numbers)."""
    stamp = store_stamp(engine)
    if stamp is None:
        with gc_paused():
            return compute()
    path = cache_dir() / f"{_key(stamp, key)}.json"
    with contextlib.suppress(OSError, ValueError):  # no document, or one that cannot be read: compute
        return load(json.loads(path.read_text()))
    with gc_paused():  # the imports and the computation (see gc_paused)
        value = compute()
    if store_stamp(engine) != stamp:  # written meanwhile: the document may mix two states
        return value
    write_entry(path, dump(value))
    with contextlib.suppress(OSError):
        _prune(path.parent)
    return value


def _key(stamp: str, key: object) -> str:
    doc = [_FORMAT, code_stamp(), stamp, key]
    if metrics := _metric_stamps():  # a metric registered from outside the package: its code is part of the document
        doc.append(metrics)
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:40]


def _metric_stamps() -> list[str]:
    """The stamps of the registered run metrics (:mod:`automonitor.analysis.run_metrics`), without importing that
    package (pydantic) for a read: until it is imported no metric can have been registered from outside, and
    the metrics it ships are modules of ``automonitor``, whose code :func:`code_stamp` covers."""
    metrics = sys.modules.get("automonitor.analysis.run_metrics")
    return [m.stamp for m in metrics.REGISTRY.values()] if metrics is not None else []


def _prune(folder: Path) -> None:
    """Remove the oldest documents beyond :data:`KEEP`."""
    files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in files[KEEP:]:
        with contextlib.suppress(OSError):
            old.unlink()
