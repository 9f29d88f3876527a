"""Points on the MR-FAR plane for the app: measured run points of one report slice with its Pareto front
(:func:`run_points`) and the paper's reported points, a separate labelled reference table
(:func:`reported_points`), never mixed into measured runs.
"""

from __future__ import annotations

from importlib import resources
from typing import Any, Mapping, cast

import pandas as pd

from automonitor.analysis import metrics as mt
from automonitor.analysis.report_schema import Report


REPORTED_LABEL = "reported by a secondary summary (not in the paper's v2 text)"
POINT_COLUMNS: tuple[str, ...] = (
    "run_id",
    "monitor",
    "template",
    "kind",
    "n",
    "mr",
    "far",
    "mr_ci",
    "far_ci",
    "mr_lo",
    "mr_hi",
    "far_lo",
    "far_hi",
    "unscored",
    "unscored_rate",
    "view",
)
_EMPTY_SLICE: dict[str, Any] = {
    "n": 0,
    "mr": None,
    "far": None,
    "mr_ci": None,
    "far_ci": None,
    "unscored": 0,
    "unscored_rate": None,
}


def run_points(report: Report | Mapping[str, Any], slice: tuple[str, ...] = ("overall",)) -> pd.DataFrame:  # noqa: A002
    """Points on the MR-FAR plane for one slice of a report, with the Pareto front of that slice.

    Args:
        report: the :class:`~automonitor.analysis.report_schema.Report` of :func:`report` or its ``.to_dict()``.
        slice: ``("overall",)``, ``("category", cat)``, ``("task", task)`` or ``("category_task", cat, task)``.
    Returns:
        DataFrame with run_id, monitor, template, kind, n, mr, far, mr_ci, far_ci (lists or None),
        mr_lo, mr_hi, far_lo, far_hi, unscored, unscored_rate, view (the monitor view, ``full`` by default),
        on_front (bool; front of this slice).
    Raises:
        ValueError for an unknown slice form.
    """
    report_dict = report.to_dict() if isinstance(report, Report) else report
    rows = []
    for e in report_dict.get("runs", []):
        s = _entry_slice(e, slice) or _EMPTY_SLICE
        mci, fci = s.get("mr_ci"), s.get("far_ci")
        rows.append(
            {
                "run_id": e["run_id"],
                "monitor": e["monitor"],
                "template": e["template"],
                "kind": e.get("kind"),
                "n": s["n"],
                "mr": s["mr"],
                "far": s["far"],
                "mr_ci": mci,
                "far_ci": fci,
                "mr_lo": mci[0] if mci else None,
                "mr_hi": mci[1] if mci else None,
                "far_lo": fci[0] if fci else None,
                "far_hi": fci[1] if fci else None,
                "unscored": s.get("unscored"),
                "unscored_rate": s.get("unscored_rate"),
                "view": e.get("view") or "full",
            }
        )
    df = pd.DataFrame(rows, columns=list(POINT_COLUMNS))
    df["on_front"] = mt.pareto_front(list(df["mr"]), list(df["far"])) if len(df) else pd.Series(dtype=bool)
    return df


def _entry_slice(entry: dict[str, Any], slice: tuple[str, ...]) -> dict[str, Any] | None:  # noqa: A002
    """The SLICE dict of one run entry for a :func:`run_points` slice form (``None`` when absent);
    ``ValueError`` for an unknown form."""
    if slice[0] == "overall":
        return cast("dict[str, Any]", entry["overall"])
    if slice[0] == "category" and len(slice) == 2:
        return cast("dict[str, Any] | None", entry.get("by_category", {}).get(slice[1]))
    if slice[0] == "task" and len(slice) == 2:
        return cast("dict[str, Any] | None", entry.get("by_task", {}).get(slice[1]))
    if slice[0] == "category_task" and len(slice) == 3:
        return cast("dict[str, Any] | None", entry.get("by_category_task", {}).get(slice[1], {}).get(slice[2]))
    raise ValueError(f"unknown slice {slice!r}")


def reported_points() -> pd.DataFrame:
    """The paper's reported MR/FAR points (Yang et al., arXiv 2601.05752).

    Loaded from the package data file ``automonitor/data/paper_reported.csv``. Columns: monitor,
    template (direct | evidence), slice (overall | category), category (None for overall), mr, far,
    source (always :data:`REPORTED_LABEL`), citation. These six rows come from a secondary summary of the
    paper, not from its v2 text (which prints no per-model number), and
    are not measured here; keep them apart from measured runs (plot them with their own marker).
    """
    path = resources.files("automonitor") / "data" / "paper_reported.csv"
    with resources.as_file(path) as p:
        df = pd.read_csv(p, dtype={"monitor": str, "template": str, "slice": str, "category": str})
    df["category"] = df["category"].where(df["category"].notna(), None)
    df["source"] = REPORTED_LABEL
    return df
