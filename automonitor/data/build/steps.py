"""The long stages of a build as counted steps, for a progress bar.

A build reports through one ``progress`` callable: ``progress(line)`` prints one line per stage with its
counts. A caller that can draw a bar (the CLI on a terminal) passes an object that is also a
:class:`StageProgress`; the build then announces each long stage with its number of steps (the sources read,
the detectors of the ladder, the phases of the store write) and calls the stage's ``step`` after each one.
A plain callable (a test's ``list.append``, the CLI without a terminal) sees only the lines.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Protocol, runtime_checkable

__all__ = ["StageProgress", "stage"]


@runtime_checkable
class StageProgress(Protocol):
    """A progress callable that also shows counted stages (see the module doc)."""

    def __call__(self, msg: str) -> None:
        """Print one progress line."""

    def begin_stage(self, name: str, total: int | None) -> Callable[[str], None]:
        """Start stage ``name`` of ``total`` steps (``None``: unknown); return ``step(what)``, called after each
        step with what it was (a source's or a detector's name)."""

    def end_stage(self, name: str) -> None:
        """Stage ``name`` is over (every step done, or none was needed: a cached result)."""


@contextlib.contextmanager
def stage(progress: Callable[[str], None] | None, name: str, total: int | None) -> Iterator[Callable[[str], None]]:
    """Stage ``name`` of ``total`` steps on ``progress`` when it is a :class:`StageProgress`: yields the stage's
    ``step`` (a no-op for any other ``progress``) and ends the stage on exit, also on an error."""
    if not isinstance(progress, StageProgress):
        yield lambda _what: None
        return
    step = progress.begin_stage(name, total)
    try:
        yield step
    finally:
        progress.end_stage(name)
