"""Plotly figures of the Trade-off page: the MR-FAR scatter with its Pareto front and the paper's
reported points, and ROC curves with operating points. Every data text shown by plotly goes through
:func:`automonitor.escaping.plot_text`."""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, Mapping, Sequence, TypedDict

import pandas as pd

from automonitor.escaping import plot_text
from automonitor.views.honest_points import TOO_FEW
from automonitor.views.tradeoff import pareto_ids
from automonitor.vocab import VIEWS

if TYPE_CHECKING:  # plotly is imported where a figure object is built, not with this module
    import plotly.graph_objects as go
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11; the project allows 3.10

#: One trace as the keyword arguments of ``plotly.graph_objects.Scatter`` (what :func:`tradeoff_figure` builds
#: its traces from).
TraceSpec = dict[str, object]

TEMPLATE_COLORS: dict[str, str] = {
    "direct": "#2563eb",
    "evidence": "#dc2626",
    "direct-fewshot": "#0891b2",
    "evidence-fewshot": "#d97706",
}
_FRONT_DASHES = ["solid", "dash", "dot", "dashdot"]
_HOVER_COLUMNS = ("n", "tp", "fn", "fp", "tn", "unscored", "sample_set")
_RUN_HOVER = (
    "<b>%{customdata[1]}</b> · %{customdata[2]}<br>run %{customdata[12]}<br>"
    "FAR %{customdata[9]:.3f} · MR %{customdata[10]:.3f}<br>n %{customdata[3]} · TP "
    "%{customdata[4]} FN %{customdata[5]} FP %{customdata[6]} TN %{customdata[7]} · "
    "unscored %{customdata[8]}<br>sample set %{customdata[11]}"
)


#: The side text of a run's hover where clicking the point opens its drill-down (the app's pages).
CLICK_HINT = "click to drill down"

#: The Trade-off page's toggle that draws or hides the dotted lines joining one monitor's runs under several
#: monitor views (``tradeoff_figure(view_lines=...)``, :func:`_view_specs`).
VIEW_LINES_LABEL = "Join each monitor's views"


class PlaneOptions(TypedDict, total=False):
    """The options of the MR-FAR plane (:func:`plane_spec`, :func:`tradeoff_figure`, :func:`tradeoff_figure_json`),
    each optional; the default is given after its type.

    ``reported`` (frame or ``None``: none), ``front`` (run ids or ``None``: :func:`pareto_ids`), ``title`` (``None``:
    none), ``height`` (px, 520), ``size_col`` (``None``), ``localisation`` (``None``), ``include_incomplete``
    (``False``), ``hover_action`` (:data:`CLICK_HINT`), ``view_lines`` (``True``), ``plot_px`` (``None``:
    :func:`label_plot_px` of ``height``): their meaning is given under :func:`tradeoff_figure`."""

    reported: pd.DataFrame | None
    front: Sequence[str] | None
    title: str | None
    height: int
    size_col: str | None
    localisation: pd.DataFrame | None
    include_incomplete: bool
    hover_action: str
    view_lines: bool
    plot_px: tuple[float, float] | None


class PlaneSpec(TypedDict):
    """The plane as a plain plotly figure dict (:func:`plane_spec`): ``data``, its scatter traces (each a
    :data:`TraceSpec` with ``"type": "scatter"``), and ``layout``."""

    data: list[TraceSpec]
    layout: dict[str, object]


def tradeoff_figure(points: pd.DataFrame, **options: Unpack[PlaneOptions]) -> go.Figure:
    """The MR-FAR scatter: x = FAR, y = MR (both in [0, 1], lower is better).

    ``points`` columns: ``run_id, monitor, template, mr, far`` and optionally ``mr_lo, mr_hi, far_lo,
    far_hi`` (Wilson interval bounds, drawn as error bars), ``n, tp, fn, fp, tn, unscored`` (hover).
    Optional columns from ``automonitor.views.honest_points``: ``label`` (a short text drawn next to
    each point), ``eligible`` (``False``: drawn hollow in a trace named ``runs: <tpl> (too few
    samples)``), ``x_plot``/``y_plot`` (drawn position, so coincident points stay apart; hovers give
    the true rates), ``edition``/``sample_set`` (one front per edition, named in the legend when there
    are several).
    One trace per template (colour), ``customdata[0]`` = run id (used by the page to open the
    drill-down of a clicked point). The Pareto front (``front`` run ids, default
    :func:`pareto_ids`) is a staircase line (:func:`pareto_staircase`) with rings on its points;
    ``reported`` (columns ``label, mr, far`` and optionally ``monitor, template``; the paper's points)
    is drawn as black diamonds (open: direct, filled: evidence) with text labels and no run id.
    ``size_col`` (e.g. ``usd_per_1k``): marker area proportional to that column (cost), 8-34 px.
    ``localisation`` (frame ``run_id, localised_share, localised, loc_tp`` from
    :func:`automonitor.views.tradeoff.localisation_shares`): runs are also coloured by their localised
    hits share (:func:`_localisation_spec`, a 0-1 colour scale on top of their markers).
    ``include_incomplete``: cancelled / unfinished runs were allowed onto the Pareto front
    (``honest_points(include_incomplete=True)``); their legend and hover say so (:func:`_incomplete_spec`).
    ``hover_action``: the grey text at the side of each run's hover, :data:`CLICK_HINT` where a click opens
    the drill-down (the app); ``""`` where nothing happens on a click (a static HTML report).
    ``view_lines``: the runs of one monitor and template judged under several monitor views (column
    ``view``, ``run --view``) are joined by a dotted line in view order (:func:`_view_specs`).
    ``plot_px``: the plot area ``(width, height)`` in pixels the figure is drawn at (the Trade-off page measures
    it in the browser), where the text labels are laid out (:func:`place_labels`); default
    :func:`label_plot_px` of ``height``. A label with no room there is left out (:func:`hover_only_labels`
    counts them; the run's hover still names it). The figure's ``layout.meta[LAID_OUT_META]`` records that
    size.
    """
    import plotly.graph_objects as go

    return go.Figure(plane_spec(points, **options))


def plane_spec(points: pd.DataFrame, **options: Unpack[PlaneOptions]) -> PlaneSpec:
    """The plane of :func:`tradeoff_figure` (``points`` and :class:`PlaneOptions` as there) as a plain plotly
    figure dict ``{"data": [scatter trace dicts], "layout": {...}}``, no plotly object built: what
    :func:`tradeoff_figure` and :func:`tradeoff_figure_json` both draw. No template is set."""
    height = options.get("height", 520)
    traces, laid_out = _plane_traces(
        points,
        reported=options.get("reported"),
        front=options.get("front"),
        size_col=options.get("size_col"),
        localisation=options.get("localisation"),
        include_incomplete=options.get("include_incomplete", False),
        hover_action=options.get("hover_action", CLICK_HINT),
        view_lines=options.get("view_lines", True),
        plot_px=options.get("plot_px") or label_plot_px(height),
    )
    data: list[TraceSpec] = [{"type": "scatter", **t} for t in traces]
    return {"data": data, "layout": _plane_layout(height, laid_out, options.get("title"))}


def _plane_layout(height: int, laid_out: tuple[float, float], title: str | None = None) -> dict[str, object]:
    """The plane's layout as a plain dict (:func:`tradeoff_figure` and :func:`tradeoff_figure_json`): ``height`` in
    px, the axes' titles and ranges, the legend above the plot, ``title`` (none: left out), and ``layout.meta``
    recording the plot area ``laid_out`` (px) the labels were laid out for (:data:`LAID_OUT_META`)."""
    layout: dict[str, object] = {
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        "xaxis": {"title": {"text": _FAR_TITLE}, "range": [-0.03, 1.03], "zeroline": False},
        "yaxis": {"title": {"text": _MR_TITLE}, "range": [-0.03, 1.03], "zeroline": False},
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0, "font": {"size": 12}},
        "clickmode": "event+select",
        "dragmode": "pan",
        "hovermode": "closest",
        "meta": {LAID_OUT_META: [round(float(laid_out[0]), 1), round(float(laid_out[1]), 1)]},
    }
    if title:
        layout["title"] = title
    return layout


def _plane_traces(
    points: pd.DataFrame,
    *,
    reported: pd.DataFrame | None,
    front: Sequence[str] | None,
    size_col: str | None,
    localisation: pd.DataFrame | None,
    include_incomplete: bool,
    hover_action: str,
    view_lines: bool,
    plot_px: tuple[float, float],
) -> tuple[list[TraceSpec], tuple[float, float]]:
    """The traces of :func:`tradeoff_figure` as ``Scatter`` keyword arguments, and the plot area (px) their labels
    were laid out for (``plot_px``)."""
    traces: list[TraceSpec] = []
    pts = _drawable_points(points)
    if front is None and not pts.empty:
        front = pareto_ids(pts[pts["eligible"]])
    if view_lines and not pts.empty:
        traces += _view_specs(pts)
    if front:
        traces += _front_specs(pts, front)
    laid_out = plot_px
    pts, reported_pos = _with_label_layout(pts, reported, front, plot_px=laid_out)
    done = pts[~pts["incomplete"].astype(bool)] if "incomplete" in pts and not pts.empty else pts
    labelled = _labelled_positions(done, reported)
    for tpl, eligible, group in _template_groups(done):
        others = _others(labelled, group["x_plot"], group["y_plot"])
        traces.append(
            _run_spec(group, tpl, eligible, all_points=pts, size_col=size_col, hover_action=hover_action, others=others)
        )
    if done is not pts and len(pts) > len(done):
        incomplete = pts[pts["incomplete"].astype(bool)]
        traces.append(_incomplete_spec(incomplete, included=include_incomplete, hover_action=hover_action))
    if localisation is not None and not pts.empty:
        trace = _localisation_spec(pts, localisation, hover_action=hover_action)
        if trace is not None:
            traces.append(trace)
    if reported is not None and not reported.empty:
        others = _others(labelled, reported["far"], reported["mr"])
        traces += _reported_specs(reported, others=others, positions=reported_pos)
    return traces, laid_out


#: the plane's axis titles
_FAR_TITLE = "False alarm rate (FAR = FP / (TN + FP))"
_MR_TITLE = "Miss rate (MR = FN / (TP + FN))"

#: The key of the plane's ``layout.meta`` that records the plot area (px) its labels were laid out for.
LAID_OUT_META = "label_plot_px"


def tradeoff_figure_json(points: pd.DataFrame, **options: Unpack[PlaneOptions]) -> str:
    """The plane of :func:`tradeoff_figure` (``points`` and :class:`PlaneOptions` as there; the report passes
    ``reported``, ``front``, ``height`` and ``hover_action``) as plotly JSON text, which the HTML report embeds in a
    ``<script>`` (``<``, ``>`` and ``/`` escaped by plotly's serializer). The same traces and layout as the
    figure, as a plain figure dict written by ``plotly.io.to_json(..., validate=False)``: plotly's own
    serializer, without its figure objects, whose first use in a process loads plotly's validator table and
    validates the template (about 0.2 s CPU of a cold ``report --format html``, issue 38). The template is
    plotly's packaged ``plotly`` template (:func:`report_template`), whatever the process's default: importing
    Streamlit makes its theme plotly's default template, so without the pin the report built from the
    Trade-off page (in the Streamlit process) differed from ``report --format html``'s. plotly.js renders it as
    the figure (``tests/views/test_figures_json.py`` holds the two equal once plotly validates them)."""
    import plotly.io as pio

    figure = plane_spec(points, **options)
    figure["layout"] = {"template": report_template(), **figure["layout"]}
    return str(pio.to_json(figure, validate=False))


@functools.cache
def report_template() -> dict[str, object]:
    """plotly's ``plotly`` template as the installed plotly ships it (``plotly/package_data/templates/plotly.json``,
    a JSON object ``{"data": ..., "layout": ...}``), read once per process; the template of the report's plane
    (:func:`tradeoff_figure_json`)."""
    from importlib import resources

    path = resources.files("plotly") / "package_data" / "templates" / f"{REPORT_TEMPLATE}.json"
    return dict(json.loads(path.read_text(encoding="utf-8")))


#: The plotly template of the report's plane (:func:`tradeoff_figure_json`), whatever the process's default.
REPORT_TEMPLATE = "plotly"


def _with_label_layout(
    pts: pd.DataFrame,
    reported: pd.DataFrame | None,
    front: Sequence[str] | None,
    *,
    plot_px: tuple[float, float] | None = None,
) -> tuple[pd.DataFrame, list[tuple[str, str] | None] | None]:
    """The runs ``pts`` with ``label_pos`` and ``label_drawn`` columns (:func:`place_labels` over every labelled point of the
    plane: the runs, then the ``reported`` points; the Pareto ``front`` placed first, then the other
    eligible runs, the reported points, the rest) and the reported points' positions (``None`` when there
    are none), in the plot area ``plot_px`` (px), clear of the front's staircase lines (:func:`_front_lines`) and of
    the other points' markers (a front point's ring: :data:`LABEL_RING_PX`). ``pts`` without a ``label`` column
    is returned as is."""
    has_runs = not pts.empty and "label" in pts
    has_rep = reported is not None and not reported.empty
    if not (has_runs or has_rep):
        return pts, None
    xs: list[float] = []
    ys: list[float] = []
    texts: list[str] = []
    centers: list[tuple[float, float]] = []
    rank: list[int] = []
    if has_runs:
        on_front = set(front or ())
        xs += [float(v) for v in pts["x_plot"]]
        ys += [float(v) for v in pts["y_plot"]]
        texts += [str(t) for t in pts["label"]]
        centers += [(float(a), float(b)) for a, b in zip(pts["far"], pts["mr"])]
        rank += [0 if r in on_front else 1 if bool(e) else 3 for r, e in zip(pts["run_id"], pts["eligible"])]
    if reported is not None and has_rep:
        rx = [float(v) for v in reported["far"]]
        ry = [float(v) for v in reported["mr"]]
        xs += rx
        ys += ry
        texts += [str(t) for t in (reported["monitor"] if "monitor" in reported else reported["label"])]
        centers += list(zip(rx, ry))
        rank += [2] * len(rx)
    order = sorted(range(len(xs)), key=lambda i: (rank[i], i))
    radii = [LABEL_RING_PX if r == 0 else LABEL_MARKER_PX for r in rank]  # the front's points wear a ring
    lines = _front_lines(pts, front) if has_runs else []
    placed = place_labels(xs, ys, texts, order=order, centers=centers, plot_px=plot_px, lines=lines, radii=radii)
    n = len(pts) if has_runs else 0
    if has_runs:
        pts = pts.copy()
        pts["label_pos"] = [p[0] if p else None for p in placed[:n]]
        pts["label_drawn"] = [p[1] if p else "" for p in placed[:n]]
    return pts, (placed[n:] if has_rep else None)


def _front_lines(pts: pd.DataFrame, front: Sequence[str] | None) -> list[tuple[float, float, float, float]]:
    """The segments ``(x0, y0, x1, y1)`` (plot coordinates) of the Pareto front's staircase lines that
    :func:`_front_specs` draws for the ``front`` run ids of ``pts``: one staircase per edition."""
    if not front or pts.empty:
        return []
    on = pts[pts["run_id"].isin(set(front))]
    out: list[tuple[float, float, float, float]] = []
    for _, f in on.groupby("edition", sort=True):
        f = f.sort_values("far")
        xs, ys = pareto_staircase([float(v) for v in f["far"]], [float(v) for v in f["mr"]])
        out += [(xs[k], ys[k], xs[k + 1], ys[k + 1]) for k in range(len(xs) - 1)]
    return out


def hover_only_labels(fig: go.Figure) -> int:
    """How many labelled points of a :func:`tradeoff_figure` are drawn without their text label (no room
    beside them in the plot area it was laid out for, :func:`place_labels`): their runs are named in their hover
    only. Counts the empty texts of the traces drawn with text (runs, cancelled runs, reported points)."""
    return sum(1 for t in fig.data if t.mode and "text" in t.mode and t.text is not None for text in t.text if not text)


def hover_only_note(count: int) -> str:
    """The Trade-off page's line under the plane when :func:`hover_only_labels` is ``count`` (``""`` for 0)."""
    if not count:
        return ""
    which = "1 point's label" if count == 1 else f"{count:,} points' labels"
    return (
        f"{which} had no room beside the point at this width (clear of the other labels, markers and the "
        "Pareto line): hover over a point to read its name."
    )


def _text_and_positions(d: pd.DataFrame, fallback: Sequence[str]) -> tuple[list[str], list[str]]:
    """The escaped label texts of ``d`` (``label_drawn``: in the lines :func:`place_labels` chose) and their
    positions: ``label_pos`` where it placed them (a label it found no room for is left out: empty text, the hover names the run), else ``fallback``."""
    if "label_pos" not in d:
        return [plot_text(t) for t in d["label"]], list(fallback)
    pos = [p if isinstance(p, str) else None for p in d["label_pos"]]  # pandas may hold None as NaN
    drawn = d["label_drawn"] if "label_drawn" in d else d["label"]
    return [_drawn_text(t) if p else "" for t, p in zip(drawn, pos)], [p or "top center" for p in pos]


def _drawn_text(text: object) -> str:
    """A label as plotly draws it: each line of ``text`` (lines joined by ``"\\n"``, :func:`place_labels`)
    escaped by :func:`plot_text`, joined by ``<br>``."""
    return "<br>".join(plot_text(line) for line in str(text).split("\n"))


def _labelled_positions(done: pd.DataFrame, reported: pd.DataFrame | None) -> list[tuple[float, float]]:
    """The drawn ``(x, y)`` of every point that carries a text label on the plane: the finished runs with
    a ``label`` column (at ``x_plot``/``y_plot``) and the reported points (at ``far``/``mr``)."""
    out: list[tuple[float, float]] = []
    if not done.empty and "label" in done:
        out += [(float(a), float(b)) for a, b in zip(done["x_plot"], done["y_plot"])]
    if reported is not None and not reported.empty:
        out += [(float(a), float(b)) for a, b in zip(reported["far"], reported["mr"])]
    return out


def _others(labelled: list[tuple[float, float]], xs: Sequence[float], ys: Sequence[float]) -> list[tuple[float, float]]:
    """The labelled positions that are not one of the trace's own points ``zip(xs, ys)``."""
    own = {(float(x), float(y)) for x, y in zip(xs, ys)}
    return [xy for xy in labelled if xy not in own]


def _drawable_points(points: pd.DataFrame) -> pd.DataFrame:
    """The points with MR and FAR defined, with the optional columns filled in: ``x_plot``/``y_plot``
    (the true FAR/MR), ``eligible`` (``True``), ``edition`` (``""``). An empty frame is returned as is."""
    if points.empty:
        return points
    pts = points.dropna(subset=["mr", "far"])
    if pts.empty:
        return pts
    pts = pts.copy()
    if "x_plot" not in pts:
        pts["x_plot"], pts["y_plot"] = pts["far"], pts["mr"]
    if "eligible" not in pts:
        pts["eligible"] = True
    if "edition" not in pts:
        pts["edition"] = ""
    return pts


def _view_specs(points: pd.DataFrame) -> list[TraceSpec]:
    """One dotted grey line (``Scatter`` keyword arguments, :data:`TraceSpec`) per (monitor, template) whose
    runs in ``points`` cover at least two monitor views (column ``view``): through its points in
    :data:`automonitor.vocab.VIEWS` order (the newest run of a view, i.e. the last row, stands for it), at
    their drawn positions, under the runs' markers; its ``text`` names the views. It takes no hover and no
    click (``hoverinfo="skip"``): a point on it is hovered and clicked as the run it is (trial 46: the line's
    "monitor views" hover covered the reasoning-view point and a click opened nothing). ``[]`` without a
    ``view`` column or such a group."""
    if "view" not in points or points.empty:
        return []
    # only the groups under two views or more draw a line: the others (every group, when all runs judged one
    # view) are left out in one grouped count instead of a drop_duplicates per group (a pandas call each)
    several = points.groupby(["monitor", "template"], sort=False)["view"].transform("nunique") >= 2
    if not several.any():
        return []
    order = {v: i for i, v in enumerate(VIEWS)}
    traces = []
    for (mon, tpl), g in points[several].groupby(["monitor", "template"], sort=True):
        g = g.drop_duplicates("view", keep="last")
        if g["view"].nunique() < 2:
            continue
        g = g.sort_values("view", key=lambda s: s.map(order))
        traces.append(
            dict(
                x=list(g["x_plot"]),
                y=list(g["y_plot"]),
                mode="lines",
                name=plot_text(f"views: {mon} {tpl}"),
                showlegend=False,
                line=dict(color="#6b7280", width=1.5, dash="dot"),
                text=[plot_text(f"{mon} {tpl} [{v}]") for v in g["view"]],
                hoverinfo="skip",  # the runs' points under it take the hover and the click (their labels say the view)
            )
        )
    return traces


def view_line_count(points: pd.DataFrame) -> int:
    """How many view lines :func:`tradeoff_figure` draws for ``points`` with ``view_lines=True`` (one per
    monitor and template judged under at least two views; :func:`_view_specs`): the Trade-off page offers
    its :data:`VIEW_LINES_LABEL` toggle only where this is above 0."""
    pts = _drawable_points(points)
    return len(_view_specs(pts)) if not pts.empty else 0


def _front_specs(points: pd.DataFrame, front: Sequence[str]) -> list[TraceSpec]:
    """Per edition among the ``front`` run ids of ``points``: the staircase line of its Pareto front
    (dashed differently per edition, named "Pareto front (<edition>)" when there are several) and green
    rings on its points (at their drawn positions). As ``Scatter`` keyword arguments (:data:`TraceSpec`)."""
    on = points[points["run_id"].isin(set(front))]
    editions = sorted(on["edition"].unique())
    traces: list[TraceSpec] = []
    for i, edition in enumerate(editions):
        f = on[on["edition"] == edition].sort_values("far")
        if not len(f):
            continue
        xs, ys = pareto_staircase(list(f["far"]), list(f["mr"]))
        name = "Pareto front" + (f" ({edition})" if len(editions) > 1 else "")
        traces.append(
            dict(
                x=xs,
                y=ys,
                mode="lines",
                name=name,
                line=dict(color="#16a34a", width=2, dash=_FRONT_DASHES[i % len(_FRONT_DASHES)]),
                hoverinfo="skip",
            )
        )
        traces.append(
            dict(
                x=f["x_plot"],
                y=f["y_plot"],
                mode="markers",
                name="on the front",
                showlegend=False,
                hoverinfo="skip",
                marker=dict(symbol="circle-open", size=19, color="#16a34a", line=dict(width=2)),
            )
        )
    return traces


def _template_groups(points: pd.DataFrame) -> list[tuple[str, bool, pd.DataFrame]]:
    """``(template, eligible, rows)`` for every non-empty group of the points, templates sorted,
    eligible rows before ineligible ones."""
    groups = []
    if not points.empty:
        for tpl in sorted(points["template"].unique()):
            for ok in (True, False):
                d = points[(points["template"] == tpl) & (points["eligible"] == ok)]
                if len(d):
                    groups.append((tpl, ok, d))
    return groups


def _ci_err(df: pd.DataFrame, v: str, lo: str, hi: str) -> tuple[list[float], list[float]] | None:
    """Error bar lengths ``(plus, minus)`` of column ``v`` from its interval columns ``lo``/``hi``
    (``None`` without those columns)."""
    if lo not in df or hi not in df:
        return None
    plus = (df[hi] - df[v]).clip(lower=0).fillna(0).tolist()
    minus = (df[v] - df[lo]).clip(lower=0).fillna(0).tolist()
    return plus, minus


def _error_bar(err: tuple[list[float], list[float]] | None, eligible: bool) -> dict[str, Any] | None:
    """The plotly ``error_x``/``error_y`` of an interval (only for eligible points)."""
    if not err or not eligible:
        return None
    return dict(type="data", array=err[0], arrayminus=err[1], thickness=1, width=0, color="rgba(100,100,100,0.45)")


def _hover_customdata(d: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Per point: ``(run id, monitor, template, n, tp, fn, fp, tn, unscored, far, mr, sample set, run
    id)``. ``[0]`` stays the raw run id (the page opens its drill-down); the texts shown in the hover
    (``[1]``, ``[2]``, ``[11]``, ``[12]``) go through :func:`plot_text`, so names never render as markup.
    Missing optional columns give ``None``."""
    extra = {c: (d[c] if c in d else pd.Series([None] * len(d), index=d.index)) for c in _HOVER_COLUMNS}
    return list(
        zip(
            d["run_id"],
            map(plot_text, d["monitor"]),
            map(plot_text, d["template"]),
            extra["n"],
            extra["tp"],
            extra["fn"],
            extra["fp"],
            extra["tn"],
            extra["unscored"],
            d["far"],
            d["mr"],
            [plot_text(x) if x is not None else "" for x in extra["sample_set"]],
            map(plot_text, d["run_id"]),
        )
    )


def hollow_legend(d: pd.DataFrame) -> str:
    """The legend's words for a template's hollow runs ``d`` (their ``not_eligible`` reasons, empty or missing
    for too few judged samples): ``too few samples`` when every run is hollow for that, ``partial import`` when
    every run is a partial imported file, ``not eligible`` for a mix (each hover gives its own reason)."""
    from automonitor.runs.coverage import PARTIAL_NOT_ELIGIBLE

    why = set(d["not_eligible"].fillna("").replace(TOO_FEW, "")) if "not_eligible" in d else {""}
    if why <= {""}:
        return "too few samples"
    return "partial import" if why == {PARTIAL_NOT_ELIGIBLE} else "not eligible"


def _run_spec(
    d: pd.DataFrame,
    template: str,
    eligible: bool,
    *,
    all_points: pd.DataFrame,
    size_col: str | None = None,
    hover_action: str = CLICK_HINT,
    others: Sequence[tuple[float, float]] = (),
) -> TraceSpec:
    """The trace of one template's eligible (filled markers, error bars) or ineligible (hollow markers,
    :func:`hollow_legend` in the name, each run's ``not_eligible`` reason in its hover: too few judged samples or a
    partial import) runs ``d``, at their drawn positions, with text labels
    when ``d`` has a ``label`` column and marker sizes by ``size_col`` scaled over ``all_points``. As
    ``Scatter`` keyword arguments (:data:`TraceSpec`)."""
    color = TEMPLATE_COLORS.get(template, "#6b7280")
    has_text = "label" in d
    custom = _hover_customdata(d)
    if not eligible:  # why each is hollow ([13]): too few judged samples, or a partial import (honest_points)
        why = d["not_eligible"] if "not_eligible" in d else pd.Series([""] * len(d), index=d.index)
        custom = [(*c, plot_text(w or TOO_FEW)) for c, w in zip(custom, why)]
    size: float | list[float] = marker_sizes(d, size_col, all_points) if size_col else 11
    if eligible:
        marker = dict(size=size, color=color, line=dict(width=1, color="white"))
    else:
        marker = dict(size=size, symbol="circle-open", color=color, line=dict(width=2, color=color))
    text, textposition = (
        _text_and_positions(
            d,
            label_positions(list(d["x_plot"]), list(d["y_plot"]), others=others, centers=list(zip(d["far"], d["mr"])))
            if "label_pos" not in d
            else [],
        )
        if has_text
        else (None, None)
    )
    return dict(
        x=d["x_plot"],
        y=d["y_plot"],
        mode="markers+text" if has_text else "markers",
        name=f"runs: {plot_text(template)}" + ("" if eligible else f" ({hollow_legend(d)})"),
        text=text,
        textposition=textposition,
        textfont=dict(size=10, color=color, shadow="auto"),  # a halo keeps labels legible over lines and markers
        marker=marker,
        error_x=_error_bar(_ci_err(d, "far", "far_lo", "far_hi"), eligible),
        error_y=_error_bar(_ci_err(d, "mr", "mr_lo", "mr_hi"), eligible),
        customdata=custom,
        hovertemplate=(_RUN_HOVER + ("" if eligible else "<br><i>%{customdata[13]}</i>") + _extra(hover_action)),
    )


LOCALISATION_LEGEND = "colour: localised hits share (runs with gold spans)"


def _localisation_spec(
    pts: pd.DataFrame, localisation: pd.DataFrame, *, hover_action: str = CLICK_HINT
) -> TraceSpec | None:
    """Runs coloured by the share of their true positives whose evidence overlaps a gold span (issue
    21.3): markers at the runs' drawn positions, colour = ``localised_share`` on a 0-1 scale (Viridis,
    colour bar "localised hits"), hover with localised / TP, ``customdata[0]`` the run id (a click opens
    the drill-down as for any run). Runs without a share (no evidence, no gold spans, no TP) are not in
    it and keep their template colour. ``None`` when no run has a share. As ``Scatter`` keyword arguments
    (:data:`TraceSpec`)."""
    d = pts.merge(localisation, on="run_id", how="inner")
    d = d[d["localised_share"].notna()]
    if d.empty:
        return None
    custom = [tuple(c) + (int(a), int(b)) for c, a, b in zip(_hover_customdata(d), d["localised"], d["loc_tp"])]
    return dict(
        x=d["x_plot"],
        y=d["y_plot"],
        mode="markers",
        name=LOCALISATION_LEGEND,
        marker=dict(
            size=15,
            color=list(d["localised_share"]),
            colorscale="Viridis",
            cmin=0.0,
            cmax=1.0,
            showscale=True,
            colorbar=dict(title=dict(text="localised hits"), thickness=12, len=0.6),
            line=dict(width=1, color="#111827"),
        ),
        customdata=custom,
        hovertemplate=(
            _RUN_HOVER
            + "<br>localised hits %{customdata[13]} of %{customdata[14]} TP (%{marker.color:.0%})"
            + _extra(hover_action)
        ),
    )


REPORTED_LEGEND = "secondary summary (not in paper v2)"


#: The legend of the cancelled / unfinished runs, by whether they may enter the Pareto front.
INCOMPLETE_LEGEND = {
    False: "runs: cancelled / unfinished (not on the front)",
    True: "runs: cancelled / unfinished (may enter the front)",
}


def _incomplete_spec(d: pd.DataFrame, *, included: bool = False, hover_action: str = CLICK_HINT) -> TraceSpec:
    """Cancelled or unfinished runs (``status_text`` from ``honest_points``): grey crosses in one trace, no
    error bars, named in the legend by :data:`INCOMPLETE_LEGEND` of ``included`` ("(not on the front)",
    or "(may enter the front)" when the page lets them enter the Pareto front); the hover says which
    (e.g. "cancelled"), that its rates rest on the samples judged before it stopped, and whether it is
    left off the front or, ``included``, allowed on it. As ``Scatter`` keyword arguments (:data:`TraceSpec`)."""
    status = [plot_text(x) for x in (d["status_text"] if "status_text" in d else [""] * len(d))]
    custom = [tuple(c) + (s,) for c, s in zip(_hover_customdata(d), status)]
    front = " included in the Pareto front on request (Options)" if included else " not on the front unless included"
    text, textposition = _text_and_positions(d, ["top center"] * len(d)) if "label" in d else (None, None)
    return dict(
        x=d["x_plot"],
        y=d["y_plot"],
        mode="markers+text" if "label" in d else "markers",
        name=INCOMPLETE_LEGEND[bool(included)],
        text=text,
        textposition=textposition,
        textfont=dict(size=10, color="#6b7280", shadow="auto"),
        marker=dict(size=12, symbol="x-thin-open", color="#6b7280", line=dict(width=2, color="#6b7280")),
        customdata=custom,
        hovertemplate=(
            _RUN_HOVER
            + "<br><b>%{customdata[13]}</b> run: its rates rest on the samples judged before it stopped;"
            + front
            + _extra(hover_action)
        ),
    )


def _reported_specs(
    reported: pd.DataFrame,
    others: Sequence[tuple[float, float]] = (),
    positions: Sequence[tuple[str, str] | None] | None = None,
) -> list[TraceSpec]:
    """The six reported points, one trace per template: black diamonds (filled for ``evidence*``, open
    otherwise) labelled with the monitor (or ``label``), no run id; legend :data:`REPORTED_LEGEND` and a
    hover saying they come from a secondary summary, not the paper's v2 text, and are not measured.
    ``positions``: each point's label position and drawn text from :func:`place_labels` (``None``: no room,
    no label),
    else :func:`label_positions` among ``others``. As ``Scatter`` keyword arguments (:data:`TraceSpec`)."""
    reported = reported.reset_index(drop=True)
    names_all = reported["monitor"] if "monitor" in reported else reported["label"]
    placed: Sequence[tuple[str, str] | None] = (
        positions
        if positions is not None
        else [
            (p, str(t))
            for p, t in zip(label_positions(list(reported["far"]), list(reported["mr"]), others=others), names_all)
        ]
    )
    groups = list(reported.groupby("template", sort=True)) if "template" in reported else [(None, reported)]
    traces = []
    for tpl, d in groups:
        text = [_drawn_text(placed[i][1]) if placed[i] else "" for i in d.index]
        traces.append(
            dict(
                x=d["far"],
                y=d["mr"],
                mode="markers+text",
                name=REPORTED_LEGEND + (f": {plot_text(tpl)}" if tpl else ""),
                text=text,
                textposition=[p[0] if (p := placed[i]) else "top center" for i in d.index],
                textfont=dict(size=10, color="#374151", shadow="auto"),
                customdata=[plot_text(t) for t in d["label"]],
                marker=dict(
                    symbol="diamond" if str(tpl).startswith("evidence") else "diamond-open",
                    size=11,
                    color="#111827",
                    line=dict(width=1.5, color="#111827"),
                ),
                hovertemplate="<b>%{customdata}</b><br>secondary summary: FAR %{x:.2f} · MR %{y:.2f}"
                "<br>from a secondary summary of the paper, not its v2 text"
                "<extra>reported, not measured</extra>",
            )
        )
    return traces


def marker_sizes(d: pd.DataFrame, col: str, all_points: pd.DataFrame) -> list[float]:
    """Marker diameters (px) for ``d[col]`` with area proportional to the value, scaled to the largest
    value in ``all_points`` (8 px for zero/missing, 34 px for the maximum)."""
    top = float(pd.to_numeric(all_points.get(col), errors="coerce").max() or 0.0) if col in all_points else 0.0
    vals = pd.to_numeric(d[col], errors="coerce").fillna(0.0) if col in d else pd.Series([0.0] * len(d))
    if top <= 0:
        return [11.0] * len(d)
    return [8.0 + 26.0 * (max(0.0, float(v)) / top) ** 0.5 for v in vals]


def pareto_staircase(far: Sequence[float], mr: Sequence[float]) -> tuple[list[float], list[float]]:
    """The Pareto front (points sorted by FAR ascending, MR descending) as a staircase polyline
    bounding the dominated region: down from MR = 1 at the first point's FAR, then right to the next
    point's FAR and down to its MR, ..., then right to FAR = 1 at the last point's MR."""
    xs, ys = [far[0]], [1.0]
    for i, (x, y) in enumerate(zip(far, mr)):
        if i:
            xs.append(x)
            ys.append(ys[-1])
        xs.append(x)
        ys.append(y)
    xs.append(1.0)
    ys.append(ys[-1])
    return xs, ys


def label_positions(
    x: Sequence[float],
    y: Sequence[float],
    near: float = 0.07,
    edge: float = 0.12,
    *,
    others: Sequence[tuple[float, float]] = (),
    centers: Sequence[tuple[float, float]] | None = None,
) -> list[str]:
    """Text positions (plotly ``textposition`` strings) for labelled markers at plot coordinates
    ``x``/``y`` (rates in [0, 1]): below a point when a close neighbour sits above it (or to its upper
    right), else above; left/right chosen to push apart neighbours at the same height. ``others``: the
    ``(x, y)`` of the plane's other labelled points (other traces: the other template's runs, the reported
    points), which count as neighbours too, so labels of different traces are pushed apart as well (a point
    of ``others`` at exactly a point's own position is that point and is skipped). Near an edge of
    the plane (within ``edge`` of 0 or 1) the label always points inward, so a name such as
    ``rules-v1`` at FAR 0 is never cut off by the plot's border. ``centers``: each point's true position
    when coincident points were spread on a small circle (:func:`automonitor.views.spread_coincident`);
    a spread point's label then points away from the centre, into its own quadrant, so up to four
    coincident runs get four labels that do not overlap."""
    own = list(zip(x, y))
    out = []
    for i, (xi, yi) in enumerate(own):
        vert, horiz = "top", "center"
        neighbours = [(xj, yj, (yj == yi and j < i)) for j, (xj, yj) in enumerate(own) if j != i]
        neighbours += [(xj, yj, (yj == yi and xj < xi)) for xj, yj in others if (xj, yj) != (xi, yi)]
        for xj, yj, tie_above in neighbours:
            if abs(xi - xj) > near or abs(yi - yj) > near:
                continue
            if yj > yi or tie_above:
                vert = "bottom"
            horiz = "left" if xj > xi else ("right" if xj < xi else horiz)
        if centers is not None and (xi, yi) != tuple(centers[i]):  # spread apart from coincident runs
            vert = "top" if yi > centers[i][1] else "bottom"
            horiz = "right" if xi > centers[i][0] else "left"
        if xi < edge:
            horiz = "right"
        elif xi > 1 - edge:
            horiz = "left"
        if yi > 1 - edge / 2:
            vert = "bottom"
        elif yi < edge / 2:
            vert = "top"
        out.append(f"{vert} {horiz}")
    return out


#: The label layout's idea of the plane (:func:`place_labels`): the plot area in pixels at the Trade-off page's
#: 1280x720 (narrower than the real one, so a label's estimated box is never smaller than its drawn one),
#: the axis span (``range=[-0.03, 1.03]``), the text's size (font 10 px: at most ~6 px a character, 13 px a
#: line) and a marker's half width (px).
LABEL_PLOT_PX = (640.0, 420.0)
#: The figure's height (px) around its plot area: margins, the legend above the plot and the x axis's ticks and
#: title below it (the Trade-off page's 400 px figure has a ~297 px plot area at 1280x720). The layout takes
#: the plot area as ``height - LABEL_FRAME_PX`` (:func:`label_plot_px`): never taller than the drawn one, so two
#: points are never farther apart in the layout than on the screen.
LABEL_FRAME_PX = 105.0
#: How much nearer (px) a label's box must be to its own point than to any other point (:func:`place_labels`),
#: so a reader attributes every label to its own point without hovering (trial 46: "thresholds ..." was drawn
#: as far from its own point as from rules-v1's, right under rules-v1's marker).
LABEL_CLEAR_PX = 3.0
LABEL_AXIS_SPAN = 1.06
LABEL_CHAR_PX = 6.2
LABEL_LINE_PX = 13.0
LABEL_MARKER_PX = 6.0
#: The radius (px) of the green ring around a point on the Pareto front (``_front_specs``: size 19, line 2): another
#: point's label keeps off it as off a marker (:func:`place_labels`' ``radii``).
LABEL_RING_PX = 10.5
#: Half the drawn width (px) of the Pareto front's line (width 2) plus a pixel: a label's box keeps this far from it.
LABEL_LINE_PAD_PX = 2.0
_VERTS = ("top", "bottom", "middle")
_HORIZS = ("center", "right", "left")


def label_box(pos: str, cx: float, cy: float, width: float, lines: int = 1) -> tuple[float, float, float, float]:
    """The pixel box ``(x0, y0, x1, y1)`` (y up) of a label of ``width`` px and ``lines`` lines at plotly
    ``textposition`` ``pos`` next to a marker at ``(cx, cy)`` px."""
    vert, horiz = pos.split()
    r, h = LABEL_MARKER_PX, LABEL_LINE_PX * lines
    side = 0.7 * r if vert != "middle" else r  # a corner position sits off the marker's diagonal
    x0 = {"center": cx - width / 2, "right": cx + side, "left": cx - side - width}[horiz]
    y0 = {"top": cy + r, "bottom": cy - r - h, "middle": cy - h / 2}[vert]
    return x0, y0, x0 + width, y0 + h


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def label_plot_px(height: float) -> tuple[float, float]:
    """The plot area ``(width, height)`` in pixels that :func:`place_labels` assumes for a plane figure
    ``height`` px tall: :data:`LABEL_PLOT_PX`'s width (narrower than the page's plot) and ``height -``
    :data:`LABEL_FRAME_PX` (at least 100 px)."""
    return LABEL_PLOT_PX[0], max(100.0, float(height) - LABEL_FRAME_PX)


def box_distance(box: tuple[float, float, float, float], cx: float, cy: float) -> float:
    """The distance (px) from the point ``(cx, cy)`` to the nearest point of ``box`` ``(x0, y0, x1, y1)``;
    0 inside it."""
    dx = max(box[0] - cx, 0.0, cx - box[2])
    dy = max(box[1] - cy, 0.0, cy - box[3])
    return float((dx * dx + dy * dy) ** 0.5)


def two_lines(text: str) -> str | None:
    """``text`` broken at the space nearest its middle into two lines joined by ``"\\n"``; ``None`` without
    a space."""
    spaces = [i for i, c in enumerate(text) if c == " "]
    if not spaces:
        return None
    cut = min(spaces, key=lambda i: abs(2 * i - len(text)))
    return text[:cut] + "\n" + text[cut + 1 :]


def place_labels(
    x: Sequence[float],
    y: Sequence[float],
    texts: Sequence[str],
    *,
    order: Sequence[int] | None = None,
    centers: Sequence[tuple[float, float]] | None = None,
    edge: float = 0.12,
    plot_px: tuple[float, float] | None = None,
    wrap: bool = True,
    lines: Sequence[tuple[float, float, float, float]] = (),
    radii: Sequence[float] | None = None,
) -> list[tuple[str, str] | None]:
    """Where each point's text label goes so that no two labels are drawn over each other: a plotly
    ``textposition`` per point, or ``None`` where no side of the point has room (that label is left out;
    the point's hover still names it).

    Points at plot coordinates ``x``/``y`` (rates in [0, 1]) with label ``texts`` are placed in ``order``
    (indices, first placed first: the caller puts the Pareto front first; default: as given). Each point
    first tries the position :func:`label_positions` prefers (below a close neighbour above it, inward near
    the plane's edges, away from the centre of coincident points spread by ``centers``), then the other
    corners, then beside it, keeping the edge rule; it takes the first whose estimated box (the text's
    width at :data:`LABEL_CHAR_PX` a character in the plot area ``plot_px``, :func:`label_plot_px` of the
    figure's height; default :data:`LABEL_PLOT_PX`) overlaps no label placed before it and is nearer its own point than any other point by
    :data:`LABEL_CLEAR_PX` at least (:func:`box_distance`; the points coincident with it, spread apart around
    the same ``centers`` entry, excepted: they share its place), so each label reads as its own point's, and
    clear of every other point's marker (``radii``: each point's marker radius in px, default
    :data:`LABEL_MARKER_PX`; a pixel more). A box must also lie inside the plot area (plotly clips a label at its
    border) and cross none of the ``lines`` (segments ``(x0, y0, x1, y1)`` in plot coordinates, horizontal or
    vertical: the Pareto front's staircase, :data:`LABEL_LINE_PAD_PX` either side). ``wrap``: a label with no room
    on one line then tries every position again broken into two lines (:func:`two_lines`). Returns one entry per
    point, in input order: ``(textposition, text as drawn: its lines joined by "\\n")``, or ``None`` (no room:
    left out)."""
    n = len(x)
    preferred = label_positions(x, y, centers=centers, edge=edge)
    plot_px = plot_px or LABEL_PLOT_PX
    sx = plot_px[0] / LABEL_AXIS_SPAN
    sy = plot_px[1] / LABEL_AXIS_SPAN
    pad = (LABEL_AXIS_SPAN - 1) / 2  # the axis range is [-pad, 1 + pad]
    lo_x, hi_x, lo_y, hi_y = -pad * sx, (1 + pad) * sx, -pad * sy, (1 + pad) * sy
    px = [(float(a) * sx, float(b) * sy) for a, b in zip(x, y)]
    # the points a label must keep away from: not those at its own place (coincident runs, spread apart around
    # one centre by honest_points: their labels point away from it, each into its own quadrant)
    at = list(centers) if centers is not None else px
    apart = [[j for j in range(n) if j != i and at[j] != at[i] and px[j] != px[i]] for i in range(n)]
    # the coincident runs spread around its own centre: only its preferred place (its own quadrant, away from
    # the centre) may lie over their markers; any other place must keep clear of them too
    siblings = [[j for j in range(n) if j != i and at[j] == at[i] and px[j] != px[i]] for i in range(n)]
    radius = [float(r) for r in radii] if radii is not None else [LABEL_MARKER_PX] * n
    lp = LABEL_LINE_PAD_PX
    walls = [
        (min(a, c) * sx - lp, min(b, d) * sy - lp, max(a, c) * sx + lp, max(b, d) * sy + lp) for a, b, c, d in lines
    ]
    # every position a label may take whatever the other labels do (inside the plot, off the front's line, nearer
    # its own point than any other, off the other markers), in the order it prefers them
    cands: list[list[tuple[str, str, tuple[float, float, float, float]]]] = [[] for _ in range(n)]
    for i in range(n):
        text = str(texts[i])
        if not text:
            continue
        pos_order = [preferred[i]] + [f"{v} {h}" for v in _VERTS for h in _HORIZS if (v, h) != ("middle", "center")]
        forms = [text] + ([t] if wrap and (t := two_lines(text)) else [])
        tries = [(form, pos) for form in forms for pos in dict.fromkeys(pos_order)]  # preferred first, no repeats
        for form, pos in tries:
            rows = form.split("\n")
            width = LABEL_CHAR_PX * max(len(row) for row in rows)
            v, h = pos.split()
            if (x[i] < edge and h != "right") or (x[i] > 1 - edge and h != "left"):
                continue
            if (y[i] > 1 - edge / 2 and v == "top") or (y[i] < edge / 2 and v == "bottom"):
                continue
            box = label_box(pos, *px[i], width, len(rows))
            if not (lo_x <= box[0] and box[2] <= hi_x and lo_y <= box[1] and box[3] <= hi_y):
                continue  # plotly clips a label at the plot's border
            if any(_overlap(box, w) for w in walls):
                continue  # over the Pareto front's line
            near = box_distance(box, *px[i]) + LABEL_CLEAR_PX
            if any(box_distance(box, *px[j]) < max(near, radius[j] + 1) for j in apart[i]):
                continue
            if pos != preferred[i] and any(box_distance(box, *px[j]) < radius[j] + 1 for j in siblings[i]):
                continue  # off its own quadrant, over a spread sibling's marker
            cands[i].append((pos, form, box))
    seq = [i for i in (order if order is not None else range(n)) if cands[i]]
    choice = _most_labels(seq, cands)
    out: list[tuple[str, str] | None] = [None] * n
    for i, k in choice.items():
        out[i] = (cands[i][k][0], cands[i][k][1])
    return out


#: How many partial layouts :func:`_most_labels` may try before it keeps the best found (a plane of a few dozen
#: labels is solved well within it; a crowded one keeps at least the greedy layout).
LABEL_SEARCH_NODES = 1_000


def _most_labels(
    seq: Sequence[int], cands: Sequence[Sequence[tuple[str, str, tuple[float, float, float, float]]]]
) -> dict[int, int]:
    """The candidate (index into ``cands[i]``) of each label of ``seq`` that gets one, so that no two chosen boxes
    overlap and as many labels as possible are placed: a depth-first search over the labels in ``seq``'s order,
    each trying its candidates in its order of preference before going without, cut where it cannot beat the
    best layout found (branch and bound) or after :data:`LABEL_SEARCH_NODES` steps. Its first complete layout is
    the greedy one (each label its first free candidate), so the result never places fewer; among layouts that
    place as many, the first found keeps the earlier labels (the Pareto front's) at their preferred places."""
    n = len(seq)
    best: list[dict[int, int]] = [{}]
    chosen: dict[int, int] = {}
    boxes: list[tuple[float, float, float, float]] = []
    budget = [LABEL_SEARCH_NODES]

    def walk(k: int) -> bool:  # True: stop searching (all placed, or out of budget)
        if len(chosen) + (n - k) <= len(best[0]):
            return False  # cannot place more than the best layout found
        if k == n:
            best[0] = dict(chosen)
            return len(chosen) == n
        budget[0] -= 1
        if budget[0] < 0:
            return True
        i = seq[k]
        for c, (_, _, box) in enumerate(cands[i]):
            if any(_overlap(box, b) for b in boxes):
                continue
            chosen[i] = c
            boxes.append(box)
            done = walk(k + 1)
            boxes.pop()
            del chosen[i]
            if done:
                return True
        return walk(k + 1)  # this label without a place

    walk(0)
    return best[0]


def _operating_trace(label: str, color: str, op: Mapping[str, float]) -> go.Scatter | None:
    """The marker of one operating point (dict with ``far``/``fpr`` and ``mr``/``tpr``; optional
    ``threshold``), ``None`` when it lacks a coordinate."""
    x = op.get("fpr", op.get("far"))
    y = op.get("tpr", 1 - op["mr"] if op.get("mr") is not None else None)
    if x is None or y is None:
        return None
    import plotly.graph_objects as go

    thr = op.get("threshold")
    return go.Scatter(
        x=[x],
        y=[y],
        mode="markers",
        name=f"operating point: {plot_text(label)}",
        marker=dict(symbol="x", size=14, color=color, line=dict(width=2)),
        hovertemplate=(f"threshold {thr:.3f}<br>" if thr is not None else "")
        + "FAR %{x:.3f} · MR %{customdata:.3f}<extra>operating point</extra>",
        customdata=[1 - y],
    )


def roc_figure(
    curves: Mapping[str, pd.DataFrame],
    *,
    operating: Mapping[str, Mapping[str, float]] | None = None,
    height: int = 460,
    full_labels: Mapping[str, str] | None = None,
) -> go.Figure:
    """ROC curves (x = FPR = FAR, y = TPR = 1 - MR), one per ``curves`` entry (label -> frame with
    columns ``fpr, tpr``; the label, e.g. :func:`automonitor.views.run_option_label`, names the curve
    in the legend), the chance diagonal, and for each label in ``operating`` a marker at its
    operating point (dict with ``far``/``fpr`` and ``mr``/``tpr``; optional ``threshold``).
    ``full_labels`` (label -> long text, e.g. :func:`automonitor.views.run_full_label`): shown whole
    in the curve's hover (default: the label). Every text goes through :func:`plot_text`."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, 1], y=[0, 1], mode="lines", name="chance", line=dict(color="#9ca3af", dash="dot"), hoverinfo="skip"
        )
    )
    palette = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777"]
    for i, (label, df) in enumerate(curves.items()):
        color = palette[i % len(palette)]
        fig.add_trace(
            go.Scatter(
                x=df["fpr"],
                y=df["tpr"],
                mode="lines",
                name=plot_text(label),
                line=dict(color=color, width=2, shape="hv"),
                hovertemplate=plot_text((full_labels or {}).get(label, label))
                + "<br>FPR %{x:.3f} · TPR %{y:.3f}<extra></extra>",
            )
        )
        op = (operating or {}).get(label)
        point = _operating_trace(label, color, op) if op else None
        if point is not None:
            fig.add_trace(point)
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=10, b=10),
        xaxis=dict(title="False alarm rate (FPR)", range=[0, 1]),
        yaxis=dict(title="Detection rate (TPR = 1 - MR)", range=[0, 1.02]),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0),
    )
    return fig


def _extra(text: str) -> str:
    """A hover's ``<extra>`` box holding ``text`` (escaped for plotly's hover markup); an empty box hides it."""
    return f"<extra>{plot_text(text)}</extra>"
