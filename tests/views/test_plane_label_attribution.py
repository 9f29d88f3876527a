"""Every text label on the Trade-off plane reads as its own point's (trial 46, U1): on the demo store's plane
"thresholds far<=0.2: tfidf-lr direct" was drawn under rules-v1's marker and "cascade ..." by the thresholds
point, because the label layout assumed a 420 px tall plot where the page draws ~297 px and only kept labels
off other markers, not nearer their own point. Now the layout works at the figure's own height
(``label_plot_px``), keeps each label's box nearer its own point than any other by ``LABEL_CLEAR_PX``, inside
the plot, and breaks a label with no room on one line into two."""

from __future__ import annotations

import html

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor import views
from automonitor.views import figures as f

#: The demo store's direct runs as the trial's plane showed them (FAR, MR; labels as honest_points wrote them).
DEMO = [
    ("r1", "rules-v1", 0.033, 0.531, "rules-v1", "full"),
    ("r2", "thresholds", 0.179, 0.448, "thresholds far<=0.2: tfidf-lr direct", "full"),
    ("r3", "cascade", 0.113, 0.365, "cascade tfidf-lr → rules-v1 direct", "full"),
    ("r4", "tfidf-lr", 0.339, 0.329, "tfidf-lr direct [answer]", "answer"),
    ("r5", "tfidf-lr", 0.481, 0.471, "tfidf-lr direct [reasoning]", "reasoning"),
    ("r6", "tfidf-lr", 0.377, 0.289, "tfidf-lr direct", "full"),
    ("r7", "OR", 0.396, 0.157, "OR: rules-v1 + tfidf-lr direct", "full"),
]


def demo_points() -> pd.DataFrame:
    rows = [dict(run_id=r, monitor=m, template="direct", far=x, mr=y, label=t, view=v) for r, m, x, y, t, v in DEMO]
    return pd.DataFrame(rows)


def _labels(fig) -> list[tuple[str, float, float, tuple[float, float, float, float]]]:
    """``(text as drawn, its lines joined by a space, x, y, estimated pixel box)`` of every drawn label, at
    the layout's scale for the figure's height."""
    sx, sy = (p / f.LABEL_AXIS_SPAN for p in f.label_plot_px(fig.layout.height))
    out = []
    for t in fig.data:
        if not t.mode or "text" not in t.mode:
            continue
        for x, y, text, pos in zip(t.x, t.y, t.text, t.textposition):
            if text:
                lines = [html.unescape(line) for line in text.split("<br>")]  # as drawn: "&lt;" is one "<"
                box = f.label_box(pos, x * sx, y * sy, f.LABEL_CHAR_PX * max(map(len, lines)), len(lines))
                out.append((" ".join(lines), float(x), float(y), box))
    return out


def _misattributed(fig) -> list[str]:
    """The labels whose box is not nearer their own point than every other drawn point by LABEL_CLEAR_PX, or
    overlaps another label, or leaves the plot area."""
    sx, sy = (p / f.LABEL_AXIS_SPAN for p in f.label_plot_px(fig.layout.height))
    points = {(float(x), float(y)) for t in fig.data if t.mode and "markers" in t.mode for x, y in zip(t.x, t.y)}
    labels = _labels(fig)
    bad = []
    for i, (text, x, y, box) in enumerate(labels):
        own = f.box_distance(box, x * sx, y * sy)
        for px, py in points - {(x, y)}:
            if f.box_distance(box, px * sx, py * sy) < own + f.LABEL_CLEAR_PX:
                bad.append(f"{text} is as near ({px:.3f}, {py:.3f}) as its own ({x:.3f}, {y:.3f})")
        if any(box[0] < o[2] and o[0] < box[2] and box[1] < o[3] and o[1] < box[3] for _, _, _, o in labels[i + 1 :]):
            bad.append(f"{text} overlaps another label")
        pad = (f.LABEL_AXIS_SPAN - 1) / 2
        if box[0] < -pad * sx or box[2] > (1 + pad) * sx or box[1] < -pad * sy or box[3] > (1 + pad) * sy:
            bad.append(f"{text} leaves the plot")
    return bad


def test_the_demo_planes_labels_sit_by_their_own_points():
    """The page's 400 px plane and the HTML report's 560 px one: every one of the seven runs is labelled, at
    its own point (the trace's text belongs to the same x/y), and no label is nearer another point."""
    pts = demo_points()
    for height in (400, 560):  # pages/tradeoff.py, views.report_html
        fig = views.tradeoff_figure(pts, height=height)
        drawn = _labels(fig)
        assert sorted(t for t, _, _, _ in drawn) == sorted(pts["label"]), height
        at = {t: (x, y) for t, x, y, _ in drawn}
        for _, _, x, y, label, _ in DEMO:
            assert at[label] == (x, y)
        assert _misattributed(fig) == [], height
    # the trial's plane: "thresholds ..." left of its point ran under rules-v1's marker; now it is not there
    fig = views.tradeoff_figure(pts, height=400)
    (runs,) = [t for t in fig.data if t.name == "runs: direct"]
    pos = {c[0]: p for c, p in zip(runs.customdata, runs.textposition)}
    assert not pos["r2"].endswith("left")


def test_the_report_plane_json_keeps_the_rule():
    """The HTML report embeds tradeoff_figure_json (views.report_html, 560 px): the same labels at the same
    positions as the figure checked above."""
    import json

    spec = json.loads(f.tradeoff_figure_json(demo_points(), height=560, hover_action=""))
    fig = views.tradeoff_figure(demo_points(), height=560, hover_action="")
    drawn = [(t.get("text"), t.get("textposition")) for t in spec["data"] if "text" in t.get("mode", "")]
    direct = [(list(t.text), list(t.textposition)) for t in fig.data if t.mode and "text" in t.mode]
    assert drawn == direct and sum(1 for texts, _ in drawn for x in texts if x) == len(DEMO)
    assert _misattributed(fig) == []


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 1), st.floats(0, 1), st.text(alphabet="ab <>&→", min_size=1, max_size=40).map(str.strip)
        ),
        min_size=1,
        max_size=14,
    ),
    st.sampled_from([300, 400, 560]),
)
def test_every_drawn_label_is_nearer_its_own_point(rows, height):
    """Hostile planes (crowds, edges, long names, markup): a label is drawn only where it reads as its own
    point's, inside the plot and clear of the other labels."""
    rows = [(x, y, t or "x") for x, y, t in rows]
    pts = pd.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(len(rows))],
            "monitor": [f"m{i}" for i in range(len(rows))],
            "template": "direct",
            "far": [r[0] for r in rows],
            "mr": [r[1] for r in rows],
            "label": [r[2] for r in rows],
        }
    )
    pts = pts.drop_duplicates(["far", "mr"])  # coincident runs are spread apart by honest_points first
    assert _misattributed(views.tradeoff_figure(pts, height=height)) == []
