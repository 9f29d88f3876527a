"""The plot area of a plotly chart as the browser really draws it, for the Trade-off plane's label layout
(``automonitor.views.figures.place_labels``): the page's chart stretches over the column, so its width
depends on the window (about 742 px at 1280x720 with the sidebar open, where the layout used to assume
640 px and left out labels that had room). A small ``st.components.v2`` component with no markup reads the
chart's plot area (plotly's ``_fullLayout`` axis lengths) once the chart is drawn and whenever it is resized,
and hands it back as its state ``plot`` (a rerun) when it differs from the size the page laid the labels out
for. The browser keeps the last size measured in a cookie (:func:`cookie_name`), so that a new session (a reload,
a link, the app started again) lays the labels out for it on its first run and needs no rerun when the window
has kept its size. Without a browser (``AppTest``) or before the first measure in a browser without that cookie,
:func:`measured_plot` returns ``None`` and the figure keeps its default (``views.label_plot_px`` of its
height)."""

from __future__ import annotations

import math
import streamlit as st

NAME = "automonitor.plot_size"

#: Reads ``_fullLayout.xaxis._length`` / ``yaxis._length`` of the plotly chart inside the element whose CSS
#: class is ``data.chart`` (Streamlit's ``st-key-<key>``), after it is drawn, after each resize of its box and
#: each new drawing or relayout of the plot (debounced), and every 1.5 s in case an event was missed,
#: and sets the state ``plot`` to ``[width, height]`` (whole px) when it differs by more than 1 px from
#: ``data.used`` (the size the page drew with; ``null`` when it used the default). Each size measured is also
#: written to the cookie ``data.cookie`` as ``WIDTHxHEIGHT`` (a year, path ``/``, SameSite Strict), which the
#: server reads when a new session starts (:func:`kept_plot`). Sends nothing else and reads nothing but the
#: chart's layout.
JS = r"""
export default function (component) {
  const { data, setStateValue } = component;
  let sent = data && Array.isArray(data.used) ? data.used : null;
  let kept = null;
  const chart = () => document.querySelector("." + ((data && data.chart) || "none") + " .js-plotly-plot");
  let timer = null, observer = null, tries = 0;
  const report = () => {
    const gd = chart(), full = gd && gd._fullLayout;
    if (!full || !full.xaxis || !full.yaxis) return;
    const w = Math.round(full.xaxis._length), h = Math.round(full.yaxis._length);
    if (!(w > 0 && h > 0)) return;
    if (data && data.cookie && kept !== w + "x" + h) {
      kept = w + "x" + h;
      document.cookie = data.cookie + "=" + kept + "; path=/; max-age=31536000; SameSite=Strict";
    }
    if (sent && Math.abs(sent[0] - w) <= 1 && Math.abs(sent[1] - h) <= 1) return;
    sent = [w, h];  // never the same size twice from this mount: no rerun loop
    setStateValue("plot", sent);
  };
  const later = () => { clearTimeout(timer); timer = setTimeout(report, 250); };
  let plotted = null, check = null;
  const poll = setInterval(() => {
    const gd = chart();
    if (gd && gd._fullLayout && gd._fullLayout.xaxis) {
      clearInterval(poll);
      report();
      // a resize of the chart's box, and every drawing of the plot (plotly may lay out the new width after the
      // box has changed): measure again once things settle
      observer = new ResizeObserver(later);
      observer.observe(gd);
      if (gd.on) { plotted = gd; gd.on("plotly_afterplot", later); gd.on("plotly_relayout", later); }
      check = setInterval(report, 1500);  // and now and then: a missed event costs a second and a half
    } else if (++tries > 150) {
      clearInterval(poll);
    }
  }, 100);
  return () => {
    clearInterval(poll); clearInterval(check); clearTimeout(timer);
    if (observer) observer.disconnect();
    if (plotted && plotted.removeListener) {
      plotted.removeListener("plotly_afterplot", later);
      plotted.removeListener("plotly_relayout", later);
    }
  };
}
"""

#: The plot sizes (px) taken as a real measure: anything else the browser sends is ignored.
WIDTH_PX = (120.0, 8000.0)
HEIGHT_PX = (60.0, 4000.0)


def key_class(key: str) -> str:
    """The CSS class Streamlit gives the element of widget ``key`` (``st-key-`` and the key with every character
    but letters, digits, ``_`` and ``-`` written ``-``)."""
    return "st-key-" + "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "-" for c in key.strip())


def plot_size(value: object) -> tuple[float, float] | None:
    """``value`` (the component's state, sent by the browser: untrusted) as a plot area ``(width, height)`` in
    px, or ``None`` unless it is two finite numbers within :data:`WIDTH_PX` and :data:`HEIGHT_PX`."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        return None
    w, h = float(value[0]), float(value[1])
    if not (WIDTH_PX[0] <= w <= WIDTH_PX[1] and HEIGHT_PX[0] <= h <= HEIGHT_PX[1]):
        return None
    return w, h


def cookie_name(chart_key: str) -> str:
    """The cookie in which the browser keeps the last plot area measured for the chart of widget key
    ``chart_key`` (``am_plot_`` and its CSS class's tail: letters, digits, ``_`` and ``-`` only)."""
    return "am_plot_" + key_class(chart_key).removeprefix("st-key-")


def kept_plot(value: object) -> tuple[float, float] | None:
    """The plot area kept in the cookie (``WIDTHxHEIGHT``, sent by the browser: untrusted) as :func:`plot_size`
    reads it, or ``None``."""
    if not isinstance(value, str) or len(value) > 40:
        return None
    parts = value.split("x")
    try:
        return plot_size([float(v) for v in parts]) if len(parts) == 2 else None
    except ValueError:
        return None


def _cookie(name: str) -> str | None:
    """The cookie ``name`` this browser sent when the session started, or ``None`` (also in a bare AppTest run)."""
    try:
        return st.context.cookies.get(name)
    except Exception:  # noqa: BLE001 - no browser request (bare AppTest run): no cookie
        return None


def measured_plot(key: str, chart_key: str) -> tuple[float, float] | None:
    """Mount the measuring component (``key``; no markup, no height) for the chart of widget key ``chart_key``
    and return the plot area to lay the labels out for: the one it measured in this session (:func:`plot_size`),
    else the one this browser kept from an earlier session (:func:`kept_plot`), else ``None``. The browser asks
    for a rerun only when the chart's plot area differs from the one returned. Call it before the chart, in a
    container without gaps, so it takes no room on the page."""
    cookie = cookie_name(chart_key)
    used = plot_size(_state_plot(st.session_state.get(key))) or kept_plot(_cookie(cookie))
    component = st.components.v2.component(NAME, js=JS)  # registered on the running app's runtime each time
    result = component(
        key=key,
        data={"chart": key_class(chart_key), "used": list(used) if used else None, "cookie": cookie},
        default={"plot": None},
        on_plot_change=_noop,
        height="content",
    )
    return plot_size(_state_plot(result)) or used


def _state_plot(state: object) -> object:
    """The ``plot`` entry of the component's state (a mapping or an attribute object), ``None`` when absent."""
    if state is None:
        return None
    if isinstance(state, dict):
        return state.get("plot")
    try:
        return state["plot"]  # type: ignore[index]  # the component's result: a mapping of its state
    except (KeyError, TypeError, IndexError):
        return getattr(state, "plot", None)


def _noop() -> None:
    """The component's ``on_plot_change``: declares its state ``plot`` (the rerun does the rest)."""
