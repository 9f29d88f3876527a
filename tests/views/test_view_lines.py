"""The plane's dotted view lines (``automonitor.views.figures``): one per monitor and template whose runs cover
two monitor views or more, none for a group under one view, whatever the other groups hold."""

from __future__ import annotations

import pandas as pd

from automonitor import views


def _points(rows: list[tuple[str, str, str, str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["run_id", "monitor", "template", "view", "mr", "far"])


def _lines(fig) -> list:
    return [t for t in fig.data if str(getattr(t, "name", "")).startswith("views: ")]


def test_only_the_groups_under_several_views_get_a_line():
    pts = _points(
        [
            ("r1", "judge-a", "direct", "full", 0.2, 0.1),
            ("r2", "judge-a", "direct", "reasoning", 0.5, 0.2),
            ("r3", "judge-a", "direct", "reasoning", 0.4, 0.3),  # the newest run of a view stands for it
            ("r4", "judge-a", "evidence", "full", 0.3, 0.1),
            ("r5", "judge-b", "direct", "full", 0.6, 0.4),
            ("r6", "judge-b", "direct", "full", 0.7, 0.5),
        ]
    )
    (line,) = _lines(views.tradeoff_figure(pts))
    assert list(line.text) == ["judge-a direct [full]", "judge-a direct [reasoning]"]
    assert list(line.x) == [0.1, 0.3] and list(line.y) == [0.2, 0.4]
    assert views.view_line_count(pts) == 1


def test_no_line_when_every_run_judged_one_view():
    pts = _points([(f"r{i}", f"judge-{i % 3}", "direct", "full", 0.1 * i, 0.05 * i) for i in range(1, 7)])
    assert _lines(views.tradeoff_figure(pts)) == []
    assert views.view_line_count(pts) == 0


def test_the_line_takes_no_hover_or_click_and_lies_under_the_points():
    """Trial 46 (U2): the dotted line caught the hover ("monitor views ...") over the reasoning-view point and a
    click on the point opened no drill-down. The line skips hover and clicks, and is drawn before (under) the
    runs' markers, whose hover and run id (customdata[0], what a click opens) stay."""
    pts = _points([("r1", "judge-a", "direct", "full", 0.2, 0.1), ("r2", "judge-a", "direct", "reasoning", 0.5, 0.2)])
    fig = views.tradeoff_figure(pts)
    (line,) = _lines(fig)
    assert line.hoverinfo == "skip" and not line.hovertemplate and line.mode == "lines"
    names = [t.name for t in fig.data]
    runs = names.index("runs: direct")
    assert names.index(line.name) < runs
    assert [c[0] for c in fig.data[runs].customdata] == ["r1", "r2"] and fig.data[runs].hoverinfo != "skip"
