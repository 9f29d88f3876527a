"""The plotly JSON of the report's MR-FAR plane without plotly's figure objects: :func:`scatter_figure_json` writes
the text that ``go.Figure`` with ``go.Scatter`` traces, :func:`PLANE_LAYOUT`'s layout and the ``plotly`` template
gives with ``to_json()``, from the same trace keyword arguments, or ``None`` when a trace holds anything it does not
write as plotly would (the caller then builds the figure objects).

Why: the first plotly object of a process loads plotly's validator table (``plotly/validators/_validators.json``),
and the template's validation, about 0.2 s of CPU of every ``report --format html`` (issue 38), for a figure whose
traces are a few lists of numbers and strings. What plotly does to such values, and what is written here the same
way: a trace's keys in its class's order (alphabetical) with ``type`` last, a nested property's keys (``marker``,
``line``, ``error_x``, ...) alphabetical too, ``None`` values left out, tuples as lists, a float ``Series`` as a
NumPy array written as plotly's base64 typed array, the text as ``to_json_plotly`` writes it (:func:`plotly_json`).
The template is plotly's ``plotly`` template as validated by plotly (:data:`TEMPLATE_FILE`, written by
:func:`write_template` for the installed plotly version; another version takes the figure objects' path).
``tests/views/test_figure_json.py`` holds the two paths to the same bytes.
"""

from __future__ import annotations

import base64
import functools
import json
import math
from pathlib import Path
from typing import Mapping, Sequence, cast

import numpy as np
import pandas as pd

from automonitor.errors import AutomonitorError

#: The validated ``plotly`` template and the plotly version it was taken from (:func:`write_template`).
TEMPLATE_FILE = Path(__file__).resolve().parents[1] / "data" / "plotly_template.json"

#: The keys a trace may have here, and for a nested property, the keys it may have (others: the objects' path).
_TRACE_KEYS = frozenset(
    "customdata error_x error_y hoverinfo hovertemplate legendgroup line marker mode name opacity showlegend "
    "text textfont textposition x y".split()
)
_NESTED_KEYS: dict[str, frozenset[str]] = {
    "line": frozenset("color dash width".split()),
    "marker": frozenset("color line opacity size symbol".split()),
    "marker.line": frozenset("color width".split()),
    "textfont": frozenset("color shadow size".split()),
    "error_x": frozenset("array arrayminus color thickness type visible width".split()),
    "error_y": frozenset("array arrayminus color thickness type visible width".split()),
}
#: the trace keys whose value may be a list (of numbers, strings, None or such lists) or a float ``Series``
_ARRAYS = frozenset(
    ("x", "y", "customdata", "error_x.array", "error_x.arrayminus", "error_y.array", "error_y.arrayminus")
)
_STRING_LISTS = frozenset(("text", "textposition"))


class _Unsupported(AutomonitorError):
    """A value this module does not write as plotly would (caught here: the caller gets ``None``)."""


def _scalar(v: object) -> object:
    if v is None or type(v) in (str, bool, int):
        return v
    if type(v) is float and math.isfinite(v):
        return v
    raise _Unsupported(repr(type(v)))


def _plain_list(v: object) -> list[object]:
    """A list or tuple of scalars (or of such lists) as plotly's ``to_scalar_or_list`` writes it."""
    if isinstance(v, (list, tuple)):
        return [_plain_list(e) if isinstance(e, (list, tuple)) else _scalar(e) for e in v]
    raise _Unsupported(repr(type(v)))


def _value(path: str, v: object) -> object:
    if path in _ARRAYS:
        if isinstance(v, pd.Series) and v.dtype == np.float64:
            return np.array(v.to_numpy(), dtype=np.float64)  # plotly's copy, written base64
        return _plain_list(v)
    if path in _STRING_LISTS and isinstance(v, (list, tuple)):
        if not all(type(e) is str for e in v):
            raise _Unsupported(path)
        return list(v)
    return _scalar(v)


def _props(spec: Mapping[str, object], keys: frozenset[str], prefix: str) -> dict[str, object]:
    """The properties of ``spec`` (keys alphabetical, ``None`` left out), nested ones as their own dicts."""
    out: dict[str, object] = {}
    for key in sorted(spec):
        if key not in keys:
            raise _Unsupported(prefix + key)
        v = spec[key]
        if v is None:
            continue
        path = prefix + key
        if path in _NESTED_KEYS:
            if not isinstance(v, dict):
                raise _Unsupported(path)
            out[key] = _props(v, _NESTED_KEYS[path], path + ".")
        else:
            out[key] = _value(path, v)
    return out


def scatter_traces(specs: Sequence[Mapping[str, object]]) -> list[dict[str, object]] | None:
    """The traces of ``go.Scatter(**spec)`` for each spec as ``Figure.to_dict()`` holds them before its base64
    step (``type`` last), or ``None`` when one holds a key or value this module does not write (module doc)."""
    try:
        return [{**_props(spec, _TRACE_KEYS, ""), "type": "scatter"} for spec in specs]
    except _Unsupported:
        return None


@functools.lru_cache(maxsize=1)
def plotly_template() -> dict[str, object] | None:
    """The ``plotly`` template as plotly validates it (a dict in plotly's key order), or ``None`` when
    :data:`TEMPLATE_FILE` was written for another plotly version (or cannot be read)."""
    import plotly

    try:
        kept = json.loads(TEMPLATE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("plotly") != plotly.__version__:
        return None
    template = kept.get("template")
    return template if isinstance(template, dict) else None


def validated_template() -> dict[str, object]:
    """The ``plotly`` template through plotly's figure objects (what a figure's ``layout.template = "plotly"``
    holds): what :data:`TEMPLATE_FILE` keeps."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.layout.template = "plotly"
    return cast(dict[str, object], fig.to_dict()["layout"]["template"])


def write_template() -> Path:
    """Write :data:`TEMPLATE_FILE` for the installed plotly (after a plotly upgrade:
    ``python -c "from automonitor.views.figure_json import write_template; write_template()"``)."""
    import plotly

    TEMPLATE_FILE.write_text(
        json.dumps({"plotly": plotly.__version__, "template": validated_template()}, indent=1) + "\n", encoding="utf-8"
    )
    return TEMPLATE_FILE


def plane_layout(height: int, laid_out: tuple[float, float], meta_key: str) -> dict[str, object]:
    """The layout ``tradeoff_figure`` gives its figure with no title (``update_layout`` of its keyword arguments, then
    the ``plotly`` template), in the order plotly keeps it: the template, the nested properties (a string axis title
    becomes ``{"text": ...}``; a legend's ``font`` before its other keys), the title left empty, then the rest."""
    return {
        "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
        "xaxis": {
            "title": {"text": "False alarm rate (FAR = FP / (TN + FP))"},
            "range": [-0.03, 1.03],
            "zeroline": False,
        },
        "yaxis": {"title": {"text": "Miss rate (MR = FN / (TP + FN))"}, "range": [-0.03, 1.03], "zeroline": False},
        "legend": {
            "font": {"size": 12},
            "orientation": "h",
            "yanchor": "bottom",
            "y": 1.0,
            "xanchor": "left",
            "x": 0,
        },
        "title": {},
        "height": height,
        "clickmode": "event+select",
        "dragmode": "pan",
        "hovermode": "closest",
        "meta": {meta_key: [round(float(laid_out[0]), 1), round(float(laid_out[1]), 1)]},
    }


def scatter_figure_json(specs: Sequence[Mapping[str, object]], layout: dict[str, object]) -> str | None:
    """``Figure(data=[Scatter(**s) for s in specs], layout with the plotly template).to_json()`` (``layout``: the
    layout's properties after the template, as :func:`plane_layout` gives them), or ``None`` when a trace holds what
    this module does not write or the kept template is for another plotly version."""
    traces = scatter_traces(specs)
    template = plotly_template()
    if traces is None or template is None:
        return None
    return plotly_json({"data": traces, "layout": {"template": template, **layout}})


#: plotly's ``_swap_json``: characters ``to_json`` writes escaped (the figure's JSON may sit in a ``<script>``)
_SWAP = (("<", "\\u003c"), (">", "\\u003e"), ("/", "\\u002f"))


def plotly_json(fig: dict[str, object]) -> str:
    """plotly's ``to_json_plotly(fig)`` with its ``json`` engine, for a figure dict of JSON values and float64 NumPy
    arrays (each written as plotly's base64 typed array, ``convert_to_base64``) without importing plotly (its
    ``_plotly_utils`` import narwhals, about 0.1 s)."""
    text = json.dumps(fig, separators=(",", ":"), default=_typed_array)
    if "NaN" in text or "Infinity" in text:  # PlotlyJSONEncoder: such constants become null (a false alarm is kept)
        text = json.dumps(json.loads(text, parse_constant=lambda c: None), separators=(",", ":"))
    for unsafe, safe in _SWAP:
        if unsafe in text:
            text = text.replace(unsafe, safe)
    return text


def _typed_array(v: object) -> object:
    """plotly's typed array of a float64 array: ``{"dtype": "f8", "bdata": <base64 of its bytes>}`` (an empty one:
    ``[]``)."""
    if isinstance(v, np.ndarray) and v.dtype == np.float64 and v.ndim == 1:
        return {"dtype": "f8", "bdata": base64.b64encode(v.tobytes()).decode("ascii")} if v.size else []
    raise TypeError(f"Object of type {type(v).__name__} is not JSON serializable")
