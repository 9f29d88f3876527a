"""Progress of ``automonitor run`` as plain lines, for a run whose stderr is not a terminal (a log file, a
pipe: ``make demo``'s ``demo-llm.log``, a run started from the app). Rich's progress bar draws nothing
there until the run ends, so a local model judging for minutes looked stuck (fresh-user trial of
``make demo``). :class:`ProgressLines` writes one line when the run starts judging, then one at most every
:func:`progress_every_s` seconds (``$AUTOMONITOR_PROGRESS_EVERY_S``, default 20) and one at the end:
``run RUN_ID: 40/120 judged (33%), 0.7/s, 57 s elapsed, about 2 min left``. ``--quiet`` shows none.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Callable

#: Seconds between two progress lines of a non-interactive run (``$AUTOMONITOR_PROGRESS_EVERY_S``)
PROGRESS_EVERY_S = 20.0


def progress_every_s() -> float:
    """Seconds between two progress lines: ``$AUTOMONITOR_PROGRESS_EVERY_S`` (a number >= 0; 0 writes a line
    per judged sample), else :data:`PROGRESS_EVERY_S`; an unreadable or negative value gives the default."""
    raw = os.environ.get("AUTOMONITOR_PROGRESS_EVERY_S", "").strip()
    try:
        value = float(raw) if raw else PROGRESS_EVERY_S
    except ValueError:
        return PROGRESS_EVERY_S
    return value if math.isfinite(value) and value >= 0 else PROGRESS_EVERY_S


def _duration(seconds: float) -> str:
    """``"57 s"``, ``"4 min"``, ``"1.5 h"``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class ProgressLines:
    """A ``progress(done, total)`` callback of :func:`automonitor.runs.runner.execute_run` that writes plain
    progress lines through ``write`` (one text line per call).

    Args:
        run_id: the run named in each line.
        write: where a line goes (the CLI: stderr).
        every_s: seconds between two lines (>= 0); the first call and the call that reaches ``total`` always
            write one.
        clock: monotonic seconds (``time.monotonic``).

    A line: ``run RUN_ID: DONE/TOTAL judged (P%)``, then, once samples were judged in this session, the rate
    (samples a second, or a minute below one a second), the time elapsed and the time left at that rate.
    ``done`` counts earlier sessions of the run (``--resume``); the rate counts this session's only.
    """

    def __init__(
        self,
        run_id: str,
        write: Callable[[str], None],
        *,
        every_s: float = PROGRESS_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.run_id, self.write, self.every_s, self.clock = run_id, write, max(0.0, every_s), clock
        self._start: float | None = None
        self._done0 = 0
        self._last = -math.inf
        self._ended = False
        self._lock = threading.Lock()  # the runner may report from its worker threads

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            now = self.clock()
            if self._start is None:
                self._start, self._done0 = now, done
            end = total > 0 and done >= total
            if self._ended or not (end or self._last == -math.inf or now - self._last >= self.every_s):
                return
            self._last, self._ended = now, end
            self.write(self.line(done, total, now))

    def line(self, done: int, total: int, now: float) -> str:
        """The progress line for ``done`` of ``total`` samples at clock time ``now``."""
        text = f"run {self.run_id}: {done}/{total} judged" + (f" ({done / total:.0%})" if total else "")
        start = self._start if self._start is not None else now
        elapsed, judged = now - start, done - self._done0
        if judged <= 0 or elapsed <= 0:
            return text + (", starting" if done < total else "")
        rate = judged / elapsed
        text += f", {rate:.1f}/s" if rate >= 1 else f", {60 * rate:.1f}/min"
        text += f", {_duration(elapsed)} elapsed"
        if done < total:
            text += f", about {_duration((total - done) / rate)} left"
        return text


__all__ = ["PROGRESS_EVERY_S", "ProgressLines", "progress_every_s"]
