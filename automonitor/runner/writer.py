"""The single store writer thread of an execution (group commit)."""

from __future__ import annotations

import queue as queue_mod
import threading
import time
from typing import Any

from sqlalchemy.engine import Engine

from store import session_scope
from store.models import Run
from store.queries import runs as q


WRITER_BACKLOG = 4000  # results queued for the store writer before the page reader waits


class _Writer(threading.Thread):
    """Single writer thread: commits queued results in small transactions (group commit).

    A result is committed at most ``min_interval`` (50 ms) plus one commit after it arrives: the writer
    takes everything queued at that moment into one transaction, which keeps the commit rate (and its
    CPU) bounded at hundreds of results per second.
    """

    STOP = object()

    def __init__(self, engine: Engine, run_id: str, min_interval: float = 0.05):
        super().__init__(daemon=True, name=f"writer-{run_id}")
        self.engine, self.run_id = engine, run_id
        self.q: queue_mod.Queue = queue_mod.Queue()
        self.error: BaseException | None = None
        self.committed = 0
        self.commits = 0
        self.min_interval = min_interval
        self._last_heartbeat = time.time()

    def put(self, pred: dict[str, Any], cache_row: dict[str, Any] | None, calls: int, hit: bool) -> None:
        if self.error is not None:
            raise RuntimeError(f"result writer failed: {self.error}") from self.error
        self.q.put((pred, cache_row, calls, hit))

    def put_calls(self, n: int = 1) -> None:
        """Count ``n`` requests as sent: committed at once (no group-commit wait), before their
        answers can arrive, so calls in flight at a kill are in ``run.api_calls``."""
        self.q.put((None, None, int(n), False))

    def run(self) -> None:
        stop = False
        last = 0.0
        while not stop:
            item = self.q.get()
            wait = self.min_interval - (time.monotonic() - last)
            if wait > 0 and item is not self.STOP and item[0] is not None:
                time.sleep(wait)
            last = time.monotonic()
            batch = []
            if item is self.STOP:
                stop = True
            else:
                batch.append(item)
            while len(batch) < 2000:
                try:
                    nxt = self.q.get_nowait()
                except queue_mod.Empty:
                    break
                if nxt is self.STOP:
                    stop = True
                    break
                batch.append(nxt)
            if batch:
                try:
                    self._write(batch)
                except BaseException as exc:  # noqa: BLE001
                    self.error = exc
                    return

    def _write(self, batch) -> None:
        preds = [b[0] for b in batch if b[0] is not None]
        caches = [b[1] for b in batch if b[1] is not None]
        calls = sum(b[2] for b in batch)
        hits = sum(1 for b in batch if b[3])
        with session_scope(self.engine) as s:
            if preds:
                q.update_predictions(s, preds)
            q.cache_insert(s, caches)
            q.add_run_counters(s, self.run_id, api_calls=calls, cache_hits=hits)
            if time.time() - self._last_heartbeat > 5:
                run = s.get(Run, self.run_id)
                if run is not None and (run.params or {}).get("lease"):
                    p = dict(run.params)
                    p["lease"] = {**p["lease"], "heartbeat": time.time()}
                    run.params = p
                    s.add(run)
                self._last_heartbeat = time.time()
        self.committed += len(preds)
        self.commits += 1

    def close(self) -> None:
        self.q.put(self.STOP)
        self.join()
        if self.error is not None:
            raise RuntimeError(f"result writer failed: {self.error}") from self.error

