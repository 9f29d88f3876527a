"""The Trade-off plane's JSON written without plotly's objects (automonitor.views.figure_json) is plotly's own
text (``go.Figure(...).to_json()``) for the figures the plane draws: hollow and incomplete runs, view lines,
error bars, the paper's points, a title, the localisation colouring, markup and non-ASCII in names, a NaN."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from automonitor import analysis, views
from automonitor.views import figure_json as fj
from automonitor.views.figures import figure_of, tradeoff_specs
from automonitor.views.tradeoff import reported_for

ROOT = Path(__file__).resolve().parents[2]


def _points(n: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for i in range(n):
        mr, far = float(rng.uniform(0.02, 0.9)), float(rng.uniform(0.02, 0.9))
        rows.append(
            {
                "run_id": f"r{i}",
                "monitor": ["openai:gpt-<x>/y", "judge·ü", "rules & co"][i % 3],
                "template": ["direct", "evidence", "direct-fewshot"][i % 3],
                "mr": mr,
                "far": far,
                "mr_lo": max(0.0, mr - 0.05),
                "mr_hi": min(1.0, mr + 0.05),
                "far_lo": max(0.0, far - 0.04),
                "far_hi": min(1.0, far + 0.04),
                "n": 40 + 10 * i,
                "tp": 10 + i,
                "fn": 5,
                "fp": 3 + i,
                "tn": 20,
                "unscored": i % 2,
            }
        )
    return pd.DataFrame(rows)


def _reported() -> pd.DataFrame:
    rep = reported_for(analysis.reported_points(), None, None)
    rep["label"] = rep["monitor"] + " (" + rep["template"] + "), secondary summary"
    return rep


def _template() -> object:
    import plotly.graph_objects as go

    return json.loads(go.Figure().to_json())["layout"]["template"]


def _specs(points: pd.DataFrame, **kw: object) -> tuple[list[dict[str, object]], dict[str, object]]:
    args: dict[str, object] = dict(
        reported=None,
        front=None,
        title=None,
        height=560,
        size_col=None,
        localisation=None,
        include_incomplete=False,
        hover_action="",
        view_lines=True,
    )
    args.update(kw)
    return tradeoff_specs(points, **args)  # type: ignore[arg-type]


def _cases() -> dict[str, tuple[list[dict[str, object]], dict[str, object]]]:
    raw = _points()
    statuses = {"r1": "cancelled", "r4": "partial"}
    honest = views.honest_points(raw, min_n=60, statuses=statuses)  # labels, hollow runs, incomplete runs
    views_pts = honest.assign(view=(["full"] * 3 + ["answer"] * 3 + ["reasoning"] * 3)[: len(honest)])
    with_nan = raw.assign(n=[float("nan")] + [float(x) for x in raw["n"][1:]])
    return {
        "plain": _specs(raw),
        "honest, the paper's points": _specs(honest, reported=_reported()),
        "incomplete included, a click hint": _specs(
            views.honest_points(raw, min_n=60, statuses=statuses, include_incomplete=True),
            include_incomplete=True,
            hover_action=views.figures.CLICK_HINT,
        ),
        "view lines": _specs(views_pts),
        "title, marker sizes": _specs(
            raw.assign(usd=np.linspace(0, 3, len(raw))), title="A <plane> / of runs", size_col="usd"
        ),
        "a NaN in the hover": _specs(with_nan),
        "no run": _specs(raw.iloc[0:0], reported=_reported()),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_the_json_is_plotlys_text(case: str) -> None:
    traces, layout = _cases()[case]
    if case == "view lines":
        assert any(str(t["name"]).startswith("views:") for t in traces)
    template = _template()
    assert fj.figure_json(traces, layout, template) == figure_of(traces, layout).to_json()


def test_values_outside_the_cover_are_refused() -> None:
    template = _template()
    with pytest.raises(fj.Unsupported):
        fj.figure_json([{"x": pd.Series(["a", "b"]), "y": [1, 2]}], {}, template)
    with pytest.raises(fj.Unsupported):
        fj.figure_json([{"x": np.array([2**40, 1]), "y": [1, 2]}], {}, template)
    with pytest.raises(fj.Unsupported):
        fj.figure_json([{"x": [1], "y": [1], "marker": {}}], {}, template)
    # a colour scale's name, which plotly spells out (the localisation colouring; not on the HTML report's plane)
    loc = pd.DataFrame({"run_id": ["r0", "r2"], "localised_share": [0.5, 1.0], "localised": [1, 2], "loc_tp": [2, 2]})
    traces, layout = _specs(_points(), localisation=loc)
    with pytest.raises(fj.Unsupported):
        fj.figure_json(traces, layout, template)


def test_a_fresh_process_writes_the_plane_without_plotly_and_as_plotly_would(tmp_path: Path) -> None:
    """In a process that has not loaded plotly, tradeoff_figure_json neither imports plotly's figure machinery
    (plotly.io) nor differs from the figure's to_json(); the template is kept in the cache directory and read
    back by the next process."""
    script = """
import json, sys
import pandas as pd
sys.path.insert(0, sys.argv[1])
from test_figure_json import _points, _reported
from automonitor import views
from automonitor.views.figures import tradeoff_figure_json
pts = views.honest_points(_points(), min_n=60, statuses={"r1": "cancelled"})
text = tradeoff_figure_json(pts, reported=_reported(), height=560, hover_action="")
loaded = "plotly.io" in sys.modules
same = text == views.tradeoff_figure(pts, reported=_reported(), height=560, hover_action="").to_json()
print(json.dumps({"plotly_io_before": loaded, "same": same}))
"""
    env = {**os.environ, "AUTOMONITOR_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    got = []
    for _ in range(2):  # the template computed with plotly and kept, then read from the cache directory
        out = subprocess.run(
            [sys.executable, "-c", script, str(Path(__file__).parent)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        got.append(json.loads(out.stdout.strip().splitlines()[-1]))
        assert len(list(tmp_path.glob("plotly-*.template.json"))) == 1
    assert got == [{"plotly_io_before": True, "same": True}, {"plotly_io_before": False, "same": True}]
