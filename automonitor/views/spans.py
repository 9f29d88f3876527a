"""Gold spans on the drill-down: the response as escaped HTML with the gold spans and the
monitor's grounded evidence in two distinguishable styles, and their overlap in words. Every text piece
goes through :func:`automonitor.escaping.esc`."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from sqlalchemy.engine import Engine

from automonitor.analysis.localisation import describe_overlap, score_sample
from automonitor.data.spans import label_segments, marked_spans, segments_within  # noqa: F401  (re-exported for the pages)
from automonitor.data.trajectory import step_of_offset, step_ranges
from automonitor.escaping import esc, text_box_style
from store import session_scope
from store.queries.spans import spans_by_sample

#: Gold spans: green background with a solid green outline; evidence: yellow with an orange underline.
GOLD_STYLE = "background:#dcfce7;outline:2px solid #15803d;outline-offset:-1px;border-radius:2px;"
EVIDENCE_STYLE = "background:#fde68a;color:#111827;border-bottom:3px solid #b45309;padding:0 1px;"
PROVENANCE_TITLE = {
    "from_patch": "gold span: lines the fix changes or removes",
    "from_screen": "gold span: found by the static screen",
    "annotated": "gold span: marked by annotators",
}


def sample_gold_spans(engine: Engine, sample_id: str) -> list[dict[str, Any]]:
    """The gold spans of one sample (``start``, ``end``, ``provenance``, ``note``, ``step``), by start."""
    with session_scope(engine) as s:
        return spans_by_sample(s, [sample_id]).get(sample_id, [])


def _evidence_ranges(grounded: Sequence[Mapping[str, Any]], n: int) -> list[tuple[int, int]]:
    out = []
    for g in grounded:
        if g.get("status") in ("exact", "normalized") and g.get("field", "response") == "response":
            s, e = max(0, int(g["start"])), min(n, int(g["end"]))
            if e > s:
                out.append((s, e))
    return out


def gold_evidence_html(
    text: str | None,
    gold: Sequence[Mapping[str, Any]],
    grounded: Sequence[Mapping[str, Any]] = (),
    *,
    max_height: int | None = 420,
) -> str:
    """``text`` as escaped HTML: each gold span wrapped in ``<span class="am-gold" data-gold="i">`` (its
    provenance and note in the title), each piece of grounded evidence in the response in
    ``<mark class="am-ev-quote">``; where both cover a character the mark nests inside the gold span.
    Segments are cut at every boundary of either kind so the markup always nests."""
    text = text or ""
    n = len(text)
    gold_iv = [(max(0, int(g["start"])), min(n, int(g["end"])), i) for i, g in enumerate(gold)]
    ev_iv = _evidence_ranges(grounded, n)
    cuts = sorted({0, n, *[p for s, e, _ in gold_iv for p in (s, e)], *[p for s, e in ev_iv for p in (s, e)]})
    pieces: list[str] = []
    for a, b in zip(cuts, cuts[1:]):
        if b <= a:
            continue
        inner = esc(text[a:b])
        if any(s <= a and b <= e for s, e in ev_iv):
            inner = f'<mark class="am-ev-quote" style="{EVIDENCE_STYLE}">{inner}</mark>'
        for s, e, i in gold_iv:
            if s <= a and b <= e:
                g = gold[i]
                title = PROVENANCE_TITLE.get(str(g.get("provenance")), "gold span")
                if g.get("note"):
                    title += f" ({g['note']})"
                inner = (
                    f'<span class="am-gold" data-gold="{i}" data-provenance="{esc(g.get("provenance"))}" '
                    f'title="{esc(title)}" style="{GOLD_STYLE}">{inner}</span>'
                )
                break
        pieces.append(inner)
    return f'<div class="am-text am-gold-text" style="{text_box_style(max_height)}">{"".join(pieces)}</div>'


def overlap_sentence(text: str | None, evidence: Sequence[Any] | None, gold: Sequence[Mapping[str, Any]]) -> str:
    """The overlap of a prediction's evidence with the gold spans in words (plain text, e.g.
    ``"evidence hits 1 of 2 gold spans"``); see :func:`automonitor.analysis.localisation.describe_overlap`."""
    return describe_overlap(score_sample(text or "", list(evidence or []), [dict(g) for g in gold]))


def gold_legend_html() -> str:
    """A one-line legend of the two styles (static HTML)."""
    return (
        '<div class="am-legend" style="font-size:0.8rem;">'
        f'<span style="{GOLD_STYLE}">gold span (where the misbehavior is)</span> &nbsp; '
        f'<span style="{EVIDENCE_STYLE}">monitor\'s quoted evidence</span></div>'
    )


_ROLE_OF_LABEL = {
    "Thought:": "agent",
    "Action:": "agent",
    "Agent:": "agent",
    "Observation:": "environment",
    "User:": "user",
    "Human:": "human",
    "Assistant:": "assistant",
}


def conversation_html(text: str | None, gold: Sequence[Mapping[str, Any]] = (), *, max_height: int | None = 520) -> str:
    """A serialised trajectory (:mod:`automonitor.data.trajectory`) as a numbered conversation: an
    ``<ol class="am-steps">`` with one ``<li class="am-step" data-step="i" data-role="...">`` per step
    (a "Step i · role" head and the step's escaped text). Steps holding a gold span (by offset, or by
    its ``step``) get ``data-gold="yes"`` and a green edge. ``""`` when ``text`` is not a trajectory."""
    text = text or ""
    ranges = step_ranges(text)
    if not ranges:
        return ""
    gold_steps: set[int] = set()
    for g in gold:
        if g.get("step") is not None:
            gold_steps.add(int(g["step"]))
        else:
            k = step_of_offset(ranges, int(g["start"]))
            if k is not None:
                gold_steps.add(k)
    items = []
    for i, (s, e) in enumerate(ranges):
        body = text[s:e]
        role = next((r for lab, r in _ROLE_OF_LABEL.items() if body.startswith(lab)), "assistant")
        gold_attr = ' data-gold="yes"' if i in gold_steps else ""
        edge = "#15803d" if i in gold_steps else "#cbd5e1"
        items.append(
            f'<li class="am-step" data-step="{i + 1}" data-role="{role}"{gold_attr} '
            f'style="border-left:4px solid {edge};padding:0.2rem 0.5rem;margin:0.3rem 0;list-style:none;">'
            f'<div class="am-step-head" style="font-weight:600;font-size:0.85rem;">Step {i + 1} · {esc(role)}'
            f"{' · gold span' if i in gold_steps else ''}</div>"
            f'<div class="am-step-body" style="white-space:pre-wrap;">{esc(body)}</div></li>'
        )
    return (
        f'<div class="am-conversation" style="{text_box_style(max_height)}">'
        f'<ol class="am-steps" style="padding-left:0;margin:0;">{"".join(items)}</ol></div>'
    )


def segments_html(
    text: str, segments: Sequence[tuple[int, int]], marked: Sequence[int], cursor: int, kind: str = "line"
) -> str:
    """The response with its labeling segments: each ``<span class="am-seg" data-seg="i">`` (1-based),
    marked ones with ``am-seg-marked`` (green), the keyboard cursor with ``am-seg-cursor`` (outlined);
    every piece escaped."""
    marked_set = set(marked)
    pieces, pos = [], 0
    for i, (s, e) in enumerate(segments):
        pieces.append(esc(text[pos:s]))
        cls = "am-seg" + (" am-seg-marked" if i in marked_set else "") + (" am-seg-cursor" if i == cursor else "")
        style = ("background:#bbf7d0;" if i in marked_set else "") + (
            "outline:2px dashed #1d4ed8;" if i == cursor else ""
        )
        pieces.append(f'<span class="{cls}" data-seg="{i + 1}" style="{style}">{esc(text[s:e])}</span>')
        pos = e
    pieces.append(esc(text[pos:]))
    return f'<div class="am-text am-segments" data-kind="{esc(kind)}" style="{text_box_style(320)}">{"".join(pieces)}</div>'
