"""Readings of ``hard`` pairs: a pair enters edition ``hard`` only after someone read it in full and found the
label right (:mod:`automonitor.data.build.hard`).

``automonitor/data/hard_readings.jsonl`` (package data; ``$AUTOMONITOR_READINGS`` overrides it): one JSON object a line with exactly
the fields of :class:`Reading`: ``pair_id``, ``reader``, ``verdict`` (``ok`` | ``wrong`` | ``doubtful``),
``reason`` (why; for ``ok`` what was checked) and ``date`` (``YYYY-MM-DD``). A later line for the same pair
replaces an earlier one. A ``wrong`` or ``doubtful`` reading also needs an erratum (``seeds/errata.jsonl``,
:mod:`automonitor.data.errata`), which takes the pair out of ``verified`` altogether (a test checks that
every such reading has one). A bad line is an ``InputError`` naming the file,
the line and the field; nothing is built then.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from automonitor.data.records import LineDate, LineText, model_lines

DEFAULT_READINGS = Path(__file__).resolve().parent / "hard_readings.jsonl"  # package data


class Reading(BaseModel):
    """One line of the readings file (unknown fields are an error)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pair_id: LineText = Field(min_length=1)
    reader: LineText = Field(min_length=1)
    verdict: Literal["ok", "wrong", "doubtful"]
    reason: LineText = Field(min_length=1)
    date: LineDate


def readings_path(path: str | Path | None = None) -> Path:
    """``path``, else ``$AUTOMONITOR_READINGS``, else the package's ``hard_readings.jsonl``."""
    return Path(path or os.environ.get("AUTOMONITOR_READINGS") or DEFAULT_READINGS)


def load_readings(path: str | Path | None = None) -> dict[str, Reading]:
    """The reading in force per ``pair_id`` (a later line replaces an earlier one); ``{}`` without a file.

    Raises:
        InputError: a line that is not a JSON object or fails :class:`Reading` (file, line and field named).
    """
    p = readings_path(path)
    if not p.exists():
        return {}
    return {r.pair_id: r for r in model_lines(p, Reading, "readings")}
