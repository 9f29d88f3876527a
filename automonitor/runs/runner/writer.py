"""The single store writer thread of an execution (group commit)."""

from __future__ import annotations

import contextlib
import queue as queue_mod
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Tuple

from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session

from store.models import Run
from store.queries import runs as q

WRITER_BACKLOG = 4000  # results queued for the store writer before the page reader waits
#: the lease heartbeat is refreshed with the first commit after this many seconds, and by a commit of its
#: own when no result came for that long (a slow judge: the lease must not look stale while the run lives)
HEARTBEAT_S = 5.0
MAX_GROUP = 2000  # queued items committed in one transaction at most
#: the least time between two commits of results: a result is committed at most this plus one commit after
#: it arrives (all a kill can lose); each commit costs about 1 ms of the writer's CPU whatever its size
#: (bench_scale at concurrency 64: 0.05 s gave ~190 commits per 3,010 results, 0.1 s ~120)
MIN_INTERVAL_S = 0.1

# (prediction row or None, cache row or None, requests sent, cache hit)
Entry = Tuple[dict[str, object] | None, dict[str, object] | None, int, bool]


class ResultWriter(threading.Thread):
    """Single writer thread: commits queued results in small transactions (group commit).

    A result is committed at most ``min_interval`` (:data:`MIN_INTERVAL_S`) plus one commit after it arrives: the writer
    takes everything queued at that moment into one transaction, which keeps the commit rate (and its
    CPU) bounded at hundreds of results per second. Each transaction also adds the run's call and hit
    counters and, every :data:`HEARTBEAT_S`, refreshes the lease heartbeat.
    """

    def __init__(self, engine: Engine, run_id: str, min_interval: float = MIN_INTERVAL_S):
        super().__init__(daemon=True, name=f"writer-{run_id}")
        self.engine, self.run_id = engine, run_id
        # None: stop. A SimpleQueue (C): a put costs the event loop no Python-level lock and condition
        self.q: queue_mod.SimpleQueue[Entry | None] = queue_mod.SimpleQueue()
        self.error: BaseException | None = None
        self.committed = 0
        self.commits = 0
        self.min_interval = min_interval
        self._last_heartbeat = time.time()
        self._conn: Connection | None = None  # the writer's own connection, opened on its first write

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """One transaction on the writer's own connection (opened once and kept until :meth:`run` ends:
        no pool checkout, reset and return per commit), begun and committed on the connection itself (no
        ORM session per commit: the writes are Core and driver-level statements): committed on success,
        rolled back on any exception."""
        if self._conn is None:
            self._conn = self.engine.connect()
        with self._conn.begin():
            yield self._conn

    def _release(self) -> None:
        """Return the writer's connection to the engine's pool (if one was opened)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def put(self, pred: dict[str, object], cache_row: dict[str, object] | None, calls: int, hit: bool) -> None:
        """Queue one prediction row (with its cache row, requests not yet counted, cache hit or not).

        Raises:
            RuntimeError: the writer failed earlier (its error chained).
        """
        if self.error is not None:
            raise RuntimeError(f"result writer failed: {self.error}") from self.error
        self.q.put((pred, cache_row, calls, hit))

    def put_calls(self, n: int = 1) -> None:
        """Count ``n`` requests as sent: committed at once (no group-commit wait), before their
        answers can arrive, so calls in flight at a kill are in ``run.api_calls``."""
        self.q.put((None, None, int(n), False))

    def run(self) -> None:
        """Commit groups of queued entries until :meth:`close`; the first failure is kept in ``error``."""
        try:
            self._loop()
        finally:
            with contextlib.suppress(Exception):  # the results are committed; a close failure loses nothing
                self._release()

    def _loop(self) -> None:
        """The writer's loop (see :meth:`run`). Requests counted as sent (entries of no row: :meth:`put_calls`)
        that reach an idle writer are committed at once, alone; rows wait until :attr:`min_interval` has passed
        since the last commit of rows, and whatever is queued by then (rows and counts) goes in one commit. A
        commit of counts alone changes one row (the run's counters), while rows that rode along with it would
        split the group commit: each small group rewrites pages (the prediction and cache tables and their
        indexes) that the next group rewrites again."""
        stop = False
        last = 0.0  # the last commit of rows (time.monotonic())
        while not stop:
            try:
                item = self.q.get(timeout=HEARTBEAT_S)
            except queue_mod.Empty:  # nothing to commit for a while: keep the lease alive
                try:
                    with self._transaction() as conn:
                        self._heartbeat(conn)
                except BaseException as exc:  # noqa: BLE001
                    self.error = exc
                    return
                continue
            batch: list[Entry] = []
            stop = item is None or self._group(item, batch)
            try:
                if any(e[0] is not None or e[1] is not None for e in batch):
                    wait = self.min_interval - (time.monotonic() - last)
                    if wait > 0 and not stop:
                        counts = [e for e in batch if e[0] is None and e[1] is None]
                        if counts:  # the requests counted now are committed at once; the rows wait
                            self._write(counts)
                            batch = [e for e in batch if e[0] is not None or e[1] is not None]
                        time.sleep(wait)
                        stop = self._group(None, batch)
                    last = time.monotonic()
                if batch:
                    self._write(batch)
            except BaseException as exc:  # noqa: BLE001
                self.error = exc
                return

    def _group(self, first: Entry | None, batch: list[Entry]) -> bool:
        """Append ``first`` (unless None) and whatever else is queued now to ``batch`` (at most :data:`MAX_GROUP`
        in all); True when the stop mark (None) was seen."""
        if first is not None:
            batch.append(first)
        while len(batch) < MAX_GROUP:
            try:
                nxt = self.q.get_nowait()
            except queue_mod.Empty:
                break
            if nxt is None:
                return True
            batch.append(nxt)
        return False

    def _write(self, batch: list[Entry]) -> None:
        """One transaction: prediction updates, cache inserts, counters, maybe the heartbeat."""
        preds = [pred for pred, _, _, _ in batch if pred is not None]
        caches = [cache_row for _, cache_row, _, _ in batch if cache_row is not None]
        calls = sum(n for _, _, n, _ in batch)
        hits = sum(1 for _, _, _, hit in batch if hit)
        with self._transaction() as conn:
            if preds:
                q.update_predictions(conn, preds)
            q.cache_insert(conn, caches)
            q.add_run_counters(conn, self.run_id, api_calls=calls, cache_hits=hits)
            if time.time() - self._last_heartbeat > HEARTBEAT_S:
                self._heartbeat(conn)
        self.committed += len(preds)
        self.commits += 1

    def _heartbeat(self, conn: Connection) -> None:
        """Refresh the lease heartbeat of the run (when it still has a lease), inside the transaction open on
        ``conn`` (an ORM session joins it and flushes; the transaction's commit makes it durable)."""
        with Session(bind=conn, expire_on_commit=False) as s:
            run = s.get(Run, self.run_id)
            if run is not None and (run.params or {}).get("lease"):
                p = dict(run.params)
                p["lease"] = {**p["lease"], "heartbeat": time.time()}
                run.params = p
                s.add(run)
                s.flush()
        self._last_heartbeat = time.time()

    def close(self) -> None:
        """Stop after committing everything queued; wait for the thread.

        Raises:
            RuntimeError: the writer failed (its error chained).
        """
        self.q.put(None)
        self.join()
        if self.error is not None:
            raise RuntimeError(f"result writer failed: {self.error}") from self.error
