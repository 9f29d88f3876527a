"""A scatter figure's JSON written as plotly writes it (``go.Figure(...).to_json()``), without building plotly's
objects: the HTML report's plane (:func:`automonitor.views.figures.tradeoff_figure_json`) in a process that has
not loaded plotly. Building the figure object was most of the HTML report's own time on a new store version
(plotly loads its validators' 3 MB JSON description and imports its class tree on the first figure: ~0.2 s CPU,
for a figure whose JSON then takes 2 ms).

Covered: ``Scatter`` traces given as keyword dicts (:data:`automonitor.views.figures.TraceSpec`) whose values are
strings, numbers, booleans, ``None``, lists and tuples of them, nested dicts (compound properties), and float or
integer pandas Series / NumPy arrays (written as plotly's typed arrays, ``{"dtype", "bdata"}``); a layout given as
``update_layout`` keywords; plotly's default template, as a fresh process gets it. Anything else raises
:class:`Unsupported` and the caller builds the figure with plotly. ``tests/views/test_figure_json.py`` holds the
text equal to plotly's for the Trade-off plane's figures.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from typing import Mapping, Sequence

import numpy as np

from automonitor.data.cache_home import cache_home
from automonitor.errors import AutomonitorError

#: plotly's JSON escapes (``plotly.io._json._swap_json``), applied to the whole text.
_SWAP = (("<", "\\u003c"), (">", "\\u003e"), ("/", "\\u002f"))
#: layout properties that are compound (a dict), and of those, the ones a string or ``None`` sets as a title
_TITLES = {"title"}
#: properties whose values plotly's validators rewrite (a colour scale's name becomes its colour list)
_REWRITTEN = {"colorscale"}
#: keys plotly never turns into typed arrays (``_plotly_utils.utils.is_skipped_key``)
_SKIPPED = {"geojson", "layer", "layers", "range"}
_INT_RANGES = (("i1", np.int8), ("i2", np.int16), ("i4", np.int32))


class Unsupported(AutomonitorError):
    """A value this module does not write as plotly would; build the figure with plotly instead (never leaves
    :func:`automonitor.views.figures.tradeoff_figure_json`)."""


def figure_json(traces: Sequence[Mapping[str, object]], layout: Mapping[str, object], template: object) -> str:
    """The text of ``go.Figure()`` + ``add_traces([go.Scatter(**t) for t in traces])`` +
    ``update_layout(**layout)`` + ``.to_json()`` with plotly's default JSON engine (the standard library's; the
    caller checks that orjson is absent), ``template`` being the layout's template as plotly writes it
    (:func:`default_template`). Raises :class:`Unsupported` for a value outside the module's cover."""
    doc: dict[str, object] = {"data": [_trace(t) for t in traces], "layout": {"template": template, **_layout(layout)}}
    text = json.dumps(doc, separators=(",", ":"))
    if "NaN" in text or "Infinity" in text:  # PlotlyJSONEncoder.encode: strict JSON, null for those
        text = json.dumps(json.loads(text, parse_constant=_strict), separators=(",", ":"))
    for unsafe, safe in _SWAP:
        if unsafe in text:
            text = text.replace(unsafe, safe)
    return text


def default_template() -> object:
    """The template a fresh process's ``go.Figure()`` carries (plotly's default, ``"plotly"``), as JSON data; kept
    in the cache directory per plotly version (``plotly-<version>.template.json``), computed with plotly once."""
    import plotly  # the version only (plotly/__init__ is light; the graph objects are not imported)

    path = cache_home() / f"plotly-{plotly.__version__}.template.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))["template"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    import plotly.graph_objects as go

    template = json.loads(go.Figure().to_json())["layout"]["template"]
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"template": template}), encoding="utf-8")
        os.replace(tmp, path)
    return template


def _strict(const: str) -> None:
    """``PlotlyJSONEncoder.coerce_to_strict``: every constant it is called for (NaN, Infinity) becomes null."""
    return None


def _trace(kw: Mapping[str, object]) -> dict[str, object]:
    """A ``Scatter``'s dict: its properties in plotly's order (by name), unset ones (``None``) left out, nested
    properties likewise, ``type`` last."""
    out = _compound(kw)
    if "type" in out:
        raise Unsupported("a trace keyword 'type'")
    out["type"] = "scatter"
    return out


def _compound(kw: Mapping[str, object]) -> dict[str, object]:
    """A compound property given to a constructor: by name, ``None`` left out."""
    out: dict[str, object] = {}
    for key in sorted(kw):
        v = kw[key]
        if v is None:
            continue
        if key in _REWRITTEN:
            raise Unsupported(f"a {key!r}")
        if isinstance(v, Mapping):
            if not v:
                raise Unsupported(f"an empty {key!r}")
            out[key] = _compound(v)
        else:
            out[key] = _value(key, v)
    return out


def _layout(kw: Mapping[str, object]) -> dict[str, object]:
    """``update_layout(**kw)`` on a new figure's layout: plotly updates in a batch, so the compound properties
    given as dicts come first (created as they are reached), then the other values in the order given; a title
    given as text is ``{"text": ...}``, ``None`` an empty title."""
    out: dict[str, object] = {}
    for key, v in kw.items():
        if isinstance(v, Mapping):
            if not v:
                raise Unsupported(f"an empty {key!r}")
            out[key] = _layout(v)
    for key, v in kw.items():
        if isinstance(v, Mapping):
            continue
        if key in _TITLES:
            if v is None:
                out[key] = {}
            elif isinstance(v, str):
                out[key] = {"text": v}
            else:
                raise Unsupported(f"a {key!r} of type {type(v).__name__}")
        elif key in _REWRITTEN:
            raise Unsupported(f"a {key!r}")
        elif v is not None:
            out[key] = _value(key, v)
    return out


def _value(key: str, v: object) -> object:
    """A property's value as plotly's validators and ``to_dict`` leave it."""
    if isinstance(v, (str, bool, int, float)) and not isinstance(v, np.generic):
        return v
    if isinstance(v, np.generic):
        item = v.item()
        if not isinstance(item, (str, bool, int, float)):
            raise Unsupported(f"a NumPy scalar of {v.dtype}")
        return item
    if isinstance(v, (list, tuple)):
        return [None if e is None else _value(key, e) for e in v]
    arr = _array(v)
    if arr is None:
        raise Unsupported(f"a value of type {type(v).__name__} for {key!r}")
    if key in _SKIPPED:
        raise Unsupported(f"an array for {key!r}")
    return _typed(arr)


def _array(v: object) -> np.ndarray | None:
    """A pandas Series' or NumPy array's values (plotly takes the values, not the index), else ``None``."""
    if isinstance(v, np.ndarray):
        return v
    import sys

    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(v, pd.Series):
        values: np.ndarray = v.to_numpy()
        return values
    return None


def _typed(arr: np.ndarray) -> object:
    """plotly's typed array (``_plotly_utils.utils.to_typed_array_spec``) of a float64 or int64 array: 64-bit
    integers in the narrowest of int8/16/32 holding them; an empty array is ``[]``."""
    if arr.ndim != 1:
        raise Unsupported("an array of more than one dimension")
    if arr.size == 0:
        return []
    if arr.dtype == np.float64:
        short = "f8"
    elif arr.dtype == np.int64:
        lo, hi = arr.min(), arr.max()
        for short, t in _INT_RANGES:
            info = np.iinfo(t)
            if info.min <= lo and hi <= info.max:
                arr = arr.astype(t)
                break
        else:
            raise Unsupported("64-bit integers beyond int32")
    else:
        raise Unsupported(f"an array of {arr.dtype}")
    data = np.ascontiguousarray(arr)
    if data.dtype.byteorder == ">":
        raise Unsupported("a big-endian array")
    return {"dtype": short, "bdata": base64.b64encode(data.tobytes()).decode("ascii")}


__all__ = ["Unsupported", "default_template", "figure_json"]
