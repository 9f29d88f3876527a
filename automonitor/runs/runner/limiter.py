"""AIMD concurrency limiter: halve on rate limits, add 1/limit per success."""

from __future__ import annotations

import asyncio
import time


class AIMDLimiter:
    """An async concurrency limit that backs off multiplicatively on rate limits and recovers additively.

    ``limit`` starts at ``max_limit``. :meth:`on_rate_limit` halves it (not below ``min_limit``; at most
    once per ``cooldown`` seconds, so one burst of 429s counts once); :meth:`on_success` adds
    ``1/limit``. ``async with limiter:`` waits while ``in_flight >= floor(limit)``.
    """

    def __init__(self, max_limit: int, min_limit: int = 1, cooldown: float = 1.0) -> None:
        self.max_limit = max(1, int(max_limit))
        self.min_limit = max(1, min(int(min_limit), self.max_limit))
        self.limit = float(self.max_limit)
        self.in_flight = 0
        self.cooldown = cooldown
        self.decreases = 0
        self.min_seen = self.limit
        self._last_decrease = -1e9
        self._cond: asyncio.Condition | None = None
        self._waiting = 0

    def _c(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    async def __aenter__(self) -> AIMDLimiter:
        cond = self._c()
        if self.in_flight < int(self.limit):
            self.in_flight += 1
            return self
        self._waiting += 1
        try:
            async with cond:
                await cond.wait_for(lambda: self.in_flight < int(self.limit))
                self.in_flight += 1
        finally:
            self._waiting -= 1
        return self

    async def __aexit__(self, *exc: object) -> bool:
        self.in_flight -= 1
        if self._waiting:
            cond = self._c()
            async with cond:
                cond.notify(max(1, int(self.limit) - self.in_flight))
        return False

    def on_success(self) -> None:
        """Additive increase: +1/limit, capped at ``max_limit``."""
        if self.limit < self.max_limit:
            self.limit = min(float(self.max_limit), self.limit + 1.0 / self.limit)

    def on_rate_limit(self) -> None:
        """Multiplicative decrease: halve the limit (once per cooldown)."""
        now = time.monotonic()
        if now - self._last_decrease >= self.cooldown:
            self.limit = max(float(self.min_limit), self.limit / 2.0)
            self._last_decrease = now
            self.decreases += 1
            self.min_seen = min(self.min_seen, self.limit)
