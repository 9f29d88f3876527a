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
    the layout's scale: the plot area the figure records it was laid out for."""
    sx, sy = _scale(fig)
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


def _scale(fig) -> tuple[float, float]:
    """Pixels per unit of rate on each axis, in the plot area the figure's labels were laid out for."""
    w, h = fig.layout.meta[f.LAID_OUT_META]
    return w / f.LABEL_AXIS_SPAN, h / f.LABEL_AXIS_SPAN


def _misattributed(fig) -> list[str]:
    """The labels whose box is not nearer their own point than every other drawn point by LABEL_CLEAR_PX, or
    overlaps another label or the Pareto front's line, or leaves the plot area."""
    sx, sy = _scale(fig)
    points = {(float(x), float(y)) for t in fig.data if t.mode and "markers" in t.mode for x, y in zip(t.x, t.y)}
    rings = {(float(x), float(y)) for t in fig.data if t.name == "on the front" for x, y in zip(t.x, t.y)}
    labels = _labels(fig)
    bad = []
    for i, (text, x, y, box) in enumerate(labels):
        own = f.box_distance(box, x * sx, y * sy)
        for px, py in points - {(x, y)}:
            if f.box_distance(box, px * sx, py * sy) < own + f.LABEL_CLEAR_PX:
                bad.append(f"{text} is as near ({px:.3f}, {py:.3f}) as its own ({x:.3f}, {y:.3f})")
        for px, py in rings - {(x, y)}:
            if f.box_distance(box, px * sx, py * sy) < f.LABEL_RING_PX + 1:
                bad.append(f"{text} covers the front's ring at ({px:.3f}, {py:.3f})")
        if any(box[0] < o[2] and o[0] < box[2] and box[1] < o[3] and o[1] < box[3] for _, _, _, o in labels[i + 1 :]):
            bad.append(f"{text} overlaps another label")
        for line in [t for t in fig.data if (t.name or "").startswith("Pareto front")]:
            for (x0, y0), (x1, y1) in zip(zip(line.x, line.y), list(zip(line.x, line.y))[1:]):
                seg = (min(x0, x1) * sx - 1, min(y0, y1) * sy - 1, max(x0, x1) * sx + 1, max(y0, y1) * sy + 1)
                if box[0] < seg[2] and seg[0] < box[2] and box[1] < seg[3] and seg[1] < box[3]:
                    bad.append(f"{text} crosses the Pareto line")
        pad = (f.LABEL_AXIS_SPAN - 1) / 2
        if box[0] < -pad * sx or box[2] > (1 + pad) * sx or box[1] < -pad * sy or box[3] > (1 + pad) * sy:
            bad.append(f"{text} leaves the plot")
    return bad


#: The plot area (px) of the Trade-off page's 400 px plane at 1280x720, as the browser draws it (trial 47).
PAGE_PLOT_PX = (742.0, 297.0)


def test_the_demo_planes_labels_sit_by_their_own_points():
    """The page's 400 px plane at the plot area it draws at 1280x720 and the HTML report's 560 px one: every one
    of the seven runs is labelled, at its own point (the trace's text belongs to the same x/y), and no label is
    nearer another point."""
    pts = demo_points()
    for height, plot_px in ((400, PAGE_PLOT_PX), (560, None)):  # pages/tradeoff.py, views.report_html
        fig = views.tradeoff_figure(pts, height=height, plot_px=plot_px)
        assert fig.layout.meta[f.LAID_OUT_META] == list(plot_px or f.label_plot_px(height))
        drawn = _labels(fig)
        assert sorted(t for t, _, _, _ in drawn) == sorted(pts["label"]), height
        assert views.hover_only_labels(fig) == 0 and views.hover_only_note(0) == ""
        at = {t: (x, y) for t, x, y, _ in drawn}
        for _, _, x, y, label, _ in DEMO:
            assert at[label] == (x, y)
        assert _misattributed(fig) == [], height
    # the trial's plane: "thresholds ..." left of its point ran under rules-v1's marker; now it is not there
    fig = views.tradeoff_figure(pts, height=400, plot_px=PAGE_PLOT_PX)
    (runs,) = [t for t in fig.data if t.name == "runs: direct"]
    pos = {c[0]: p for c, p in zip(runs.customdata, runs.textposition)}
    assert not pos["r2"].endswith("left")


def test_the_labels_are_laid_out_for_the_plot_the_page_draws():
    """Trial 47: the layout assumed a 640 px wide plot where the page draws ~742 px at 1280x720, so a point
    with free space beside it on the screen got no label. Laid out for the plot the page measures, all seven
    are drawn; laid out for 640 px (clear of the Pareto line and the front's rings too), the front's
    "tfidf-lr direct" has no room, and the page is told so (hover_only_labels, hover_only_note)."""
    pts = demo_points()
    narrow = views.tradeoff_figure(pts, height=400, plot_px=(640.0, 297.0))
    assert sorted(set(pts["label"]) - {t for t, _, _, _ in _labels(narrow)}) == ["tfidf-lr direct"]
    assert views.hover_only_labels(narrow) == 1 and _misattributed(narrow) == []
    assert views.hover_only_note(1).startswith("1 point's label had no room beside the point at this width")
    assert "hover over a point to read its name" in views.hover_only_note(3)
    assert views.hover_only_note(3).startswith("3 points' labels")
    wide = views.tradeoff_figure(pts, height=400, plot_px=PAGE_PLOT_PX)
    assert len(_labels(wide)) == len(DEMO) and views.hover_only_labels(wide) == 0


def test_no_label_crosses_the_pareto_line_or_a_ring():
    """A run just above a horizontal step of the front and one beside a front point: their labels take a
    place off the green line and off the front's rings, or none (then hover_only_labels counts them)."""
    pts = pd.DataFrame(
        [
            dict(run_id="a", monitor="a", template="direct", far=0.10, mr=0.40, label="front a"),
            dict(run_id="b", monitor="b", template="direct", far=0.60, mr=0.10, label="front b"),
            dict(run_id="c", monitor="c", template="direct", far=0.35, mr=0.42, label="just above the step c"),
            dict(run_id="d", monitor="d", template="direct", far=0.63, mr=0.135, label="by the ring d"),
        ]
    )
    for plot_px in (PAGE_PLOT_PX, (480.0, 200.0)):
        fig = views.tradeoff_figure(pts, height=400, plot_px=plot_px)
        assert [t for t in fig.data if t.name == "Pareto front"], "a front is drawn"
        assert _misattributed(fig) == [], plot_px
        assert views.hover_only_labels(fig) == len(pts) - len(_labels(fig))


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


def test_the_report_plane_is_the_same_from_the_app_as_from_the_cli():
    """The Trade-off page's "HTML report" button builds the report in the Streamlit process, where importing
    Streamlit made its theme plotly's default template: the plane's JSON carried Streamlit's template where
    ``report --format html`` (a CLI process) carries plotly's own (trial 47). The report's figure pins plotly's."""
    import json

    import plotly.io as pio
    import streamlit  # noqa: F401  (the app's process: Streamlit's plotly theme becomes the default template)

    assert pio.templates.default == "streamlit"
    in_app = f.tradeoff_figure_json(demo_points(), height=560, hover_action="")
    was = pio.templates.default
    pio.templates.default = "plotly"  # a CLI process's default, where streamlit is never imported
    try:
        in_cli = f.tradeoff_figure_json(demo_points(), height=560, hover_action="")
    finally:
        pio.templates.default = was
    assert in_app == in_cli
    import plotly.graph_objects as go

    def template_of(name: str) -> dict:
        return json.loads(go.Figure(layout=dict(template=name)).to_json())["layout"]["template"]

    assert json.loads(in_app)["layout"]["template"] == template_of("plotly") != template_of("streamlit")


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
    st.sampled_from([None, (742.0, 297.0), (560.0, 297.0), (1040.0, 455.0)]),
)
def test_every_drawn_label_is_nearer_its_own_point(rows, height, plot_px):
    """Hostile planes (crowds, edges, long names, markup), laid out at the figure's default size or at a plot
    area the page measured: a label is drawn only where it reads as its own point's, inside the plot, clear of
    the other labels, of the front's rings and of the Pareto line (its staircase over the front that
    tradeoff_figure works out), and hover_only_labels counts exactly the labels left out."""
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
    fig = views.tradeoff_figure(pts, height=height, plot_px=plot_px)
    assert _misattributed(fig) == []
    assert views.hover_only_labels(fig) == len(pts) - len(_labels(fig))


#: The demo store's plane once the LLM phase's first two runs are in (gemma3-270m direct and evidence beside the
#: fast phase's seven): nine points. The greedy layout (each label its first free place, the front first) left
#: two of them to the hover at 1280x720, the answer view's among them with room beside it.
DEMO9 = DEMO + [
    ("r8", "gemma3-270m", 0.256, 0.217, "gemma3-270m direct", "full"),
    ("r9", "gemma3-270m", 0.701, 0.460, "gemma3-270m evidence", "full"),
]


def _demo9_points() -> pd.DataFrame:
    tpl = {"r9": "evidence"}
    rows = [
        dict(run_id=r, monitor=m, template=tpl.get(r, "direct"), far=x, mr=y, label=t, view=v)
        for r, m, x, y, t, v in DEMO9
    ]
    return pd.DataFrame(rows)


def _why_not(fig, x: float, y: float, text: str) -> list[str]:
    """For a point drawn without its label: why each place beside it (every position, on one line or two) is
    taken, checked on the figure as drawn: ``""`` for a place that was free (then the label had room)."""
    sx, sy = _scale(fig)
    pad = (f.LABEL_AXIS_SPAN - 1) / 2
    cx, cy = x * sx, y * sy
    points = {(float(a), float(b)) for t in fig.data if t.mode and "markers" in t.mode for a, b in zip(t.x, t.y)}
    lines = [t for t in fig.data if (t.name or "").startswith("Pareto front")]
    drawn = [box for *_, box in _labels(fig)]
    out = []
    for form in [text] + [t for t in [f.two_lines(text)] if t]:
        rows = form.split("\n")
        for v in ("top", "bottom", "middle"):
            for h in ("center", "right", "left"):
                if (v, h) == ("middle", "center"):
                    continue
                edge = (x < 0.12 and h != "right") or (x > 0.88 and h != "left")
                if edge or (y > 0.94 and v == "top") or (y < 0.06 and v == "bottom"):
                    out.append("points off the plane's edge")
                    continue
                box = f.label_box(f"{v} {h}", cx, cy, f.LABEL_CHAR_PX * max(map(len, rows)), len(rows))
                own = f.box_distance(box, cx, cy) + f.LABEL_CLEAR_PX
                if box[0] < -pad * sx or box[2] > (1 + pad) * sx or box[1] < -pad * sy or box[3] > (1 + pad) * sy:
                    out.append("leaves the plot")
                elif any(
                    f.box_distance(box, a * sx, b * sy) < max(own, f.LABEL_RING_PX + 1) for a, b in points - {(x, y)}
                ):
                    out.append("as near another point")
                elif any(
                    box[0] < max(x0, x1) * sx + 2
                    and min(x0, x1) * sx - 2 < box[2]
                    and box[1] < max(y0, y1) * sy + 2
                    and min(y0, y1) * sy - 2 < box[3]
                    for ln in lines
                    for (x0, y0), (x1, y1) in zip(zip(ln.x, ln.y), list(zip(ln.x, ln.y))[1:])
                ):
                    out.append("crosses the Pareto line")
                elif any(box[0] < o[2] and o[0] < box[2] and box[1] < o[3] and o[1] < box[3] for o in drawn):
                    out.append("over another label")
                else:
                    out.append("")
    return out


def test_the_nine_point_demo_plane_labels_every_point_with_room():
    """The demo plane of nine runs at the plot area the page draws at 1280x720: the layout places as many labels
    as fit together (a search, not the first free place of each in turn): every point is labelled, or each place
    beside it is taken (plot edge, the Pareto line, another point or another label) and the page says that its
    name is in the hover. The greedy layout left the answer view's "tfidf-lr direct [answer]" out with room."""
    pts = _demo9_points()
    fig = views.tradeoff_figure(pts, height=400, plot_px=PAGE_PLOT_PX)
    drawn = {t: (x, y) for t, x, y, _ in _labels(fig)}
    assert _misattributed(fig) == []
    assert "tfidf-lr direct [answer]" in drawn and len(drawn) >= len(DEMO9) - 1, sorted(drawn)
    missing = [(x, y, t) for _, _, x, y, t, _ in DEMO9 if t not in drawn]
    for x, y, text in missing:
        reasons = _why_not(fig, x, y, text)
        assert "" not in reasons, (text, reasons)  # no free place beside it
    assert views.hover_only_labels(fig) == len(missing)
    assert bool(views.hover_only_note(len(missing))) == bool(missing)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(0.02, 0.98), st.floats(0.02, 0.98)), min_size=1, max_size=4))
def test_a_label_left_out_had_no_free_place(extra):
    """Any plane (the seven demo runs and up to four more) at the page's 1280x720 plot area: a label is left out
    only where every place beside its point is taken (by the plot's edge, the Pareto line, another point or a drawn
    label), so that the hover is the fallback of a label with no room, never of one the layout did not try."""
    rows = [dict(run_id=r, monitor=m, template="direct", far=x, mr=y, label=t, view=v) for r, m, x, y, t, v in DEMO]
    rows += [
        dict(run_id=f"x{i}", monitor=f"m{i}", template="direct", far=a, mr=b, label=f"extra monitor {i} direct")
        for i, (a, b) in enumerate(extra)
    ]
    fig = views.tradeoff_figure(pd.DataFrame(rows), height=400, plot_px=PAGE_PLOT_PX)
    drawn = {t for t, *_ in _labels(fig)}
    assert _misattributed(fig) == []
    for r in rows:
        if r["label"] not in drawn:
            # the drawn position of a point spread from a coincident one is not its rate: checked where it is drawn
            (x, y) = next(
                (float(a), float(b))
                for t in fig.data
                if t.mode and "text" in t.mode
                for a, b, c in zip(t.x, t.y, t.customdata)
                if c[0] == r["run_id"]
            )
            assert "" not in _why_not(fig, x, y, r["label"]), r["label"]


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([(0.0, 1.0), (0.5, 0.5), (1.0, 0.0), (0.3, 0.7)]),
    st.integers(2, 4),
    st.lists(st.tuples(st.floats(0.02, 0.98), st.floats(0.02, 0.98)), max_size=5),
    st.lists(
        st.sampled_from(["ok direct", "slowok direct", "good-one direct", "tfidf-lr direct [answer]"]),
        min_size=9,
        max_size=9,
    ),
)
def test_a_label_off_its_own_quadrant_keeps_clear_of_its_coincident_siblings_markers(centre, k, extra, names):
    """Trial 52: three coincident runs near (0, 1), spread apart around one centre, drew "slowok direct" over its
    sibling's marker: a label of a spread run may lie over a sibling's marker only in its own quadrant (the
    preferred place, pointing away from the centre); any other place the layout search picks keeps clear of it."""
    d = 0.012
    spread = [(-d, -d), (d, d), (d, -d), (-d, d)][:k]
    x = [min(1.0, max(0.0, centre[0] + a)) for a, _ in spread] + [a for a, _ in extra]
    y = [min(1.0, max(0.0, centre[1] + b)) for _, b in spread] + [b for _, b in extra]
    centers = [centre] * k + list(extra)
    texts = names[: len(x)]
    placed = f.place_labels(x, y, texts, centers=centers)
    preferred = f.label_positions(x, y, centers=centers)
    sx, sy = (f.LABEL_PLOT_PX[0] / f.LABEL_AXIS_SPAN, f.LABEL_PLOT_PX[1] / f.LABEL_AXIS_SPAN)
    px = [(a * sx, b * sy) for a, b in zip(x, y)]
    for i, got in enumerate(placed):
        if got is None or got[0] == preferred[i]:
            continue
        rows = got[1].split("\n")
        box = f.label_box(got[0], *px[i], f.LABEL_CHAR_PX * max(len(r) for r in rows), len(rows))
        over = [
            j
            for j in range(len(x))
            if j != i and px[j] != px[i] and f.box_distance(box, *px[j]) < f.LABEL_MARKER_PX + 1
        ]
        assert not over, (texts[i], got, [texts[j] for j in over])
