"""A monitor's evidence spans on the sample text (drill-down and samples pages): grounding the quoted
spans in the sample, and the response as escaped HTML with the spans highlighted. Every text piece goes
through :func:`automonitor.escaping.esc`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable, Sequence

from automonitor.views.browsing import SEARCH_STYLE, highlight_search_html
from automonitor.escaping import esc, text_box_style
from automonitor.jsontypes import JSONValue

if TYPE_CHECKING:
    from automonitor.analysis.grounding import GroundedEvidence

#: Inline styles of evidence spans by grounding status (inline so the HTML is self-contained).
SPAN_STYLES: dict[str, str] = {
    # found verbatim in the response: solid yellow highlight
    "exact": "background:#fde68a;color:#111827;border-bottom:2px solid #b45309;border-radius:2px;padding:0 1px;",
    # found after whitespace/case/Unicode normalisation: blue, dashed underline
    "normalized": "background:#dbeafe;color:#111827;border-bottom:2px dashed #1d4ed8;border-radius:2px;padding:0 1px;",
    # quoted by the monitor but not present in the response: struck through in red, listed apart
    "not_found": "background:#fee2e2;color:#7f1d1d;text-decoration:line-through;"
    "border:1px dashed #dc2626;border-radius:2px;padding:0 2px;",
}
_STATUS_TITLE = {
    "exact": "evidence span (found verbatim in the response)",
    "normalized": "evidence span (found after normalisation)",
    "not_found": "evidence span NOT found in the sample (ungrounded)",
}

#: ``(start, end, status, span)``: a located evidence span, offsets into the text (end exclusive).
Located = tuple[int, int, str, str]


def located_spans(text: str, grounded: Iterable[GroundedEvidence], field: str | None = None) -> list[Located]:
    """Non-overlapping ``(start, end, status, span)`` character ranges of located evidence, sorted.

    ``grounded`` holds dicts as returned by ``automonitor.analysis.grounding.ground_span`` (``span``,
    ``status`` in ``exact|normalized|not_found``, ``start``, ``end``: 0-based, end exclusive, offsets
    into ``text``). Spans not found, or with offsets outside ``text``, are skipped; a span overlapping
    an earlier one is clipped to the part after it. With ``field``, only spans whose ``field`` key
    (default ``"response"``) equals it are used.
    """
    items: list[Located] = []
    for g in grounded:
        if field is not None and g.get("field", "response") != field:
            continue
        status = g.get("status")
        start, end = g.get("start"), g.get("end")
        if status not in ("exact", "normalized") or start is None or end is None:
            continue
        start, end = max(0, start), min(len(text), end)
        if end > start:
            items.append((start, end, status, str(g.get("span", ""))))
    items.sort(key=lambda t: (t[0], -t[1]))
    out: list[Located] = []
    cursor = 0
    for start, end, status, span in items:
        start = max(start, cursor)
        if end <= start:
            continue
        out.append((start, end, status, span))
        cursor = end
    return out


def cut_at_search_hits(text: str, spans: list[Located], search: str | None) -> list[Located]:
    """``spans`` cut at the boundaries of every case-insensitive occurrence of ``search`` in ``text``, so
    that the search marks nest cleanly inside the evidence marks. No (or a blank) search: ``spans``."""
    if not search or not search.strip():
        return spans
    hits = re.finditer(re.escape(search.strip()), text, re.I)
    cuts = sorted({i for m in hits for i in (m.start(), m.end())})
    split: list[Located] = []
    for start, end, status, span in spans:
        points = [start, *[c for c in cuts if start < c < end], end]
        split.extend((a, b, status, span) for a, b in zip(points, points[1:]))
    return split


def _evidence_mark(status: str, inner_html: str) -> str:
    """``inner_html`` (already escaped) wrapped in the ``<mark>`` of an evidence span of ``status``."""
    return (
        f'<mark class="am-ev am-ev-{status}" data-status="{status}" '
        f'title="{esc(_STATUS_TITLE[status])}" style="{SPAN_STYLES[status]}">'
        f"{inner_html}</mark>"
    )


def _missing_spans_html(missing: Sequence[GroundedEvidence]) -> str:
    """The list of spans quoted by the monitor but found nowhere in the sample ("" when none)."""
    if not missing:
        return ""
    items = "".join(
        f'<li><span class="am-ev am-ev-not_found" data-status="not_found" '
        f'title="{esc(_STATUS_TITLE["not_found"])}" style="{SPAN_STYLES["not_found"]}">'
        f"{esc(g.get('span', ''))}</span></li>"
        for g in missing
    )
    return (
        '<div class="am-ev-missing" style="margin-top:0.4rem;font-size:0.85rem;">'
        "Quoted by the monitor but found nowhere in the sample (ungrounded):"
        f'<ul style="margin:0.2rem 0 0 1.2rem;">{items}</ul></div>'
    )


def highlight_html(
    text: str | None,
    grounded: Iterable[GroundedEvidence] | None = None,
    *,
    field: str = "response",
    show_missing: bool = True,
    max_height: int | None = 420,
    css_class: str = "am-text am-response",
    search: str | None = None,
) -> str:
    """The response ``text`` as escaped HTML with the monitor's evidence spans highlighted.

    Grounded spans (``exact`` / ``normalized``) are wrapped in ``<mark class="am-ev am-ev-<status>">``
    at their offsets (only spans located in ``field``: a grounding result's ``field`` key, default
    ``response``); spans the grounding could not find (``not_found``) cannot be placed, so with
    ``show_missing`` they are listed below the text in a struck-through red style
    (``am-ev-not_found``). With ``search``, every case-insensitive occurrence of it is also wrapped in
    ``<mark class="am-hit">`` (inside or outside evidence spans). Every text piece, including the spans,
    is passed through :func:`esc`. Returns an HTML string for ``st.html``.
    """
    text = text or ""
    grounded = list(grounded or [])

    def plain(piece: str) -> str:
        return highlight_search_html(piece, search) if search else esc(piece)

    pieces: list[str] = []
    cursor = 0
    for start, end, status, _span in cut_at_search_hits(text, located_spans(text, grounded, field), search):
        pieces.append(plain(text[cursor:start]))
        pieces.append(_evidence_mark(status, plain(text[start:end])))
        cursor = end
    pieces.append(plain(text[cursor:]))
    body = f'<div class="{esc(css_class)}" style="{text_box_style(max_height)}">{"".join(pieces)}</div>'
    missing = [g for g in grounded if g.get("status") == "not_found"] if show_missing else []
    return body + _missing_spans_html(missing)


def legend_html(search: bool = False) -> str:
    """A one-line legend of the evidence styles (static HTML); with ``search``, also the style of a
    search hit (``<mark class="am-hit">``, magenta, distinct from every evidence style)."""
    hit = f' &nbsp; Search: <mark class="am-hit" style="{SEARCH_STYLE}">search hit</mark>' if search else ""
    return (
        '<div class="am-legend" style="font-size:0.8rem;">Evidence: '
        f'<span style="{SPAN_STYLES["exact"]}">found verbatim</span> &nbsp; '
        f'<span style="{SPAN_STYLES["normalized"]}">found after normalisation</span> &nbsp; '
        f'<span style="{SPAN_STYLES["not_found"]}">not found (ungrounded)</span>{hit}</div>'
    )


def ground_evidence(response: str, request: str | None, spans: Sequence[JSONValue] | None) -> list[GroundedEvidence]:
    """Locate the monitor's evidence ``spans`` in the sample (``automonitor.analysis.grounding``).

    Each span is grounded in the response first, then in the request. Returns one dict per non-empty
    span: ``{span, status: exact|normalized|not_found, start, end, field: "response"|"request"|None}``
    with offsets into that field's text (``None`` when not found).
    """
    from automonitor.analysis.grounding import ground_evidence as _ground

    return _ground(response or "", request, [sp for sp in (spans or []) if sp is not None and str(sp).strip()])
