"""Points on the MR-FAR plane for the app: measured run points of one report slice with its Pareto front
(:func:`run_points`) and the paper's reported points, a separate labelled reference table
(:func:`reported_points`), never mixed into measured runs.
"""

from __future__ import annotations

from importlib import resources
import pandas as pd

from automonitor.analysis import metrics as mt
from automonitor.analysis.report_schema import ReportLike, as_report


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
_SLICE_FORMS = {"overall": 1, "category": 2, "task": 2, "category_task": 3}


def run_points(report: ReportLike, slice: tuple[str, ...] = ("overall",)) -> pd.DataFrame:  # noqa: A002
    """Points on the MR-FAR plane for one slice of a report, with the Pareto front of that slice.

    Args:
        report: the :class:`~automonitor.analysis.report_schema.Report` of :func:`report` or its ``.to_dict()``
            (validated).
        slice: ``("overall",)``, ``("category", cat)``, ``("task", task)`` or ``("category_task", cat, task)``.
    Returns:
        DataFrame with run_id, monitor, template, kind, n, mr, far, mr_ci, far_ci (lists or None),
        mr_lo, mr_hi, far_lo, far_hi, unscored, unscored_rate, view (the monitor view, ``full`` by default),
        on_front (bool; front of this slice). A run without the slice has n = 0, unscored = 0 and no rates.
    Raises:
        ValueError for an unknown slice form.
    """
    if not slice or _SLICE_FORMS.get(slice[0]) != len(slice):
        raise ValueError(f"unknown slice {slice!r}")
    cat = slice[1] if slice[0] in ("category", "category_task") else None
    task = slice[-1] if slice[0] in ("task", "category_task") else None
    rows = []
    for e in as_report(report).runs:
        s = e.slice(cat, task)
        mci, fci = (s.mr_ci, s.far_ci) if s else (None, None)
        rows.append(
            {
                "run_id": e.run_id,
                "monitor": e.monitor,
                "template": e.template,
                "kind": e.kind,
                "n": s.n if s else 0,
                "mr": s.mr if s else None,
                "far": s.far if s else None,
                "mr_ci": mci,
                "far_ci": fci,
                "mr_lo": mci[0] if mci else None,
                "mr_hi": mci[1] if mci else None,
                "far_lo": fci[0] if fci else None,
                "far_hi": fci[1] if fci else None,
                "unscored": s.unscored if s else 0,
                "unscored_rate": s.unscored_rate if s else None,
                "view": e.view or "full",
            }
        )
    df = pd.DataFrame(rows, columns=list(POINT_COLUMNS))
    df["on_front"] = mt.pareto_front(list(df["mr"]), list(df["far"])) if len(df) else pd.Series(dtype=bool)
    return df


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
