"""Gold spans on the drill-down: the response as escaped HTML with the gold spans and the
monitor's grounded evidence in two distinguishable styles, and their overlap in words. Every text piece
goes through :func:`automonitor.escaping.esc`."""

from __future__ import annotations

from typing import Mapping, Sequence, TypedDict

from sqlalchemy.engine import Engine

from automonitor.analysis.grounding import GroundedEvidence
from automonitor.analysis.localisation import describe_overlap, score_sample
from automonitor.data.spans import label_segments, marked_spans, segments_within  # noqa: F401  (re-exported for the pages)
from automonitor.data.trajectory import serialise, step_ranges, step_texts, steps_from_meta
from automonitor.escaping import esc, text_box_style
from automonitor.jsontypes import JSONValue
from store import session_scope
from store.queries.rowtypes import SpanRow
from store.queries.spans import spans_by_sample

#: Gold spans: green background with a solid green outline; evidence: yellow with an orange underline.
GOLD_STYLE = "background:#dcfce7;outline:2px solid #15803d;outline-offset:-1px;border-radius:2px;"
EVIDENCE_STYLE = "background:#fde68a;color:#111827;border-bottom:3px solid #b45309;padding:0 1px;"
PROVENANCE_TITLE = {
    "from_patch": "gold span: lines the fix changes or removes",
    "from_screen": "gold span: found by the static screen",
    "annotated": "gold span: marked by annotators",
}


class ConversationStep(TypedDict):
    """One step of :func:`conversation_steps`: its role, its text, and its character offsets in the response
    (``end`` exclusive; ``None`` where the step's text is not in the response)."""

    role: str
    body: str
    start: int | None
    end: int | None


def sample_gold_spans(engine: Engine, sample_id: str) -> list[SpanRow]:
    """The gold spans of one sample (``start``, ``end``, ``provenance``, ``note``, ``step``), by start."""
    with session_scope(engine) as s:
        return spans_by_sample(s, [sample_id]).get(sample_id, [])


def _evidence_ranges(grounded: Sequence[GroundedEvidence], n: int) -> list[tuple[int, int]]:
    out = []
    for g in grounded:
        if g.get("status") in ("exact", "normalized") and g.get("field", "response") == "response":
            start, end = g["start"], g["end"]
            s, e = max(0, start or 0), min(n, end or 0)
            if e > s:
                out.append((s, e))
    return out


def gold_evidence_html(
    text: str | None,
    gold: Sequence[SpanRow],
    grounded: Sequence[GroundedEvidence] = (),
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


def overlap_sentence(text: str | None, evidence: Sequence[JSONValue] | None, gold: Sequence[SpanRow]) -> str:
    """The overlap of a prediction's evidence with the gold spans in words (plain text, e.g.
    ``"evidence hits 1 of 2 gold spans"``); see :func:`automonitor.analysis.localisation.describe_overlap`."""
    return describe_overlap(score_sample(text or "", list(evidence or []), gold))


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


def conversation_steps(text: str | None, meta: Mapping[str, JSONValue] | None = None) -> list[ConversationStep]:
    """The steps of a sample's response to show as a conversation: ``[{"role", "body", "start", "end"}]``.

    From the typed steps of ``meta["steps"]`` (:func:`automonitor.data.trajectory.steps_from_meta`) when
    the sample has them: ``body`` is the step in the documented serialisation (``Thought: ...``,
    ``Action: ...``, ``User: ...``; :func:`automonitor.data.trajectory.serialise` of the one step) and
    ``role`` its typed role; a step with no field at all is left out. ``start``/``end`` are the step's character
    offsets in ``text`` (``end`` exclusive): exact when ``text`` is the serialisation of the steps (R-Judge,
    ODCV-Bench), else where the step's texts are found in ``text``, searched from the last step back (a chain whose response holds
    only some steps, e.g. an HH-RLHF chat whose earlier turns are in the request: those get ``None``).
    Without typed steps, the steps are parsed from ``text`` (:func:`automonitor.data.trajectory.step_ranges`,
    the role read from each step's label); ``[]`` when ``text`` is not a trajectory.
    """
    text = text or ""
    typed = [(t, serialise([t])) for t in steps_from_meta(dict(meta or {})) or []]
    typed = [(t, body) for t, body in typed if body]  # a step with no text at all is not shown
    if not typed:
        out: list[ConversationStep] = []
        for s, e in step_ranges(text):
            body = text[s:e]
            role = next((r for lab, r in _ROLE_OF_LABEL.items() if body.startswith(lab)), "assistant")
            out.append({"role": role, "body": body, "start": s, "end": e})
        return out
    exact = "\n\n".join(body for _, body in typed) == text
    spans: list[tuple[int | None, int | None]] = []
    if exact:
        pos = 0
        for _, body in typed:
            spans.append((pos, pos + len(body)))
            pos += len(body) + 2
    else:  # from the last step back: the response is the end of the chain (earlier turns may be in the request)
        cursor = len(text)
        for t, _ in reversed(typed):
            start: int | None = None
            end: int | None = None
            for piece in reversed(step_texts(t)):
                k = text.rfind(piece, 0, cursor)
                if k < 0:
                    continue
                end = k + len(piece) if end is None else end
                start = cursor = k
            spans.append((start, end))
        spans.reverse()
    return [{"role": t.role, "body": body, "start": a, "end": b} for (t, body), (a, b) in zip(typed, spans)]


def conversation_html(
    text: str | None,
    gold: Sequence[SpanRow] = (),
    *,
    meta: Mapping[str, JSONValue] | None = None,
    max_height: int | None = 520,
) -> str:
    """A sample's response as a numbered conversation (:func:`conversation_steps`: the typed steps of
    ``meta["steps"]`` when present, else the steps parsed from the serialised ``text``): an
    ``<ol class="am-steps">`` with one ``<li class="am-step" data-step="i" data-role="...">`` per step
    (1-based; a "Step i · role" head and the step's escaped text; ``data-source="typed"`` or
    ``"parsed"`` on the list). Steps holding a gold span (by its ``step`` index, else by its start
    offset) get ``data-gold="yes"`` and a green edge. ``""`` when there are no steps to show."""
    steps = conversation_steps(text, meta)
    if not steps:
        return ""
    source = "typed" if any(serialise([t]) for t in steps_from_meta(dict(meta or {})) or []) else "parsed"
    ranges = [(st["start"], st["end"]) for st in steps]
    gold_steps: set[int] = set()
    for g in gold:
        step = g.get("step")
        if step is not None:
            gold_steps.add(int(step))
        else:
            off = int(g["start"])
            hit = next((i for i, (s, e) in enumerate(ranges) if s is not None and e is not None and s <= off < e), None)
            if hit is not None:
                gold_steps.add(hit)
    items = []
    for i, step in enumerate(steps):
        role = str(step["role"])
        gold_attr = ' data-gold="yes"' if i in gold_steps else ""
        edge = "#15803d" if i in gold_steps else "#cbd5e1"
        items.append(
            f'<li class="am-step" data-step="{i + 1}" data-role="{esc(role)}"{gold_attr} '
            f'style="border-left:4px solid {edge};padding:0.2rem 0.5rem;margin:0.3rem 0;list-style:none;">'
            f'<div class="am-step-head" style="font-weight:600;font-size:0.85rem;">Step {i + 1} · {esc(role)}'
            f"{' · gold span' if i in gold_steps else ''}</div>"
            f'<div class="am-step-body" style="white-space:pre-wrap;">{esc(step["body"])}</div></li>'
        )
    return (
        f'<div class="am-conversation" data-source="{source}" style="{text_box_style(max_height)}">'
        f'<ol class="am-steps" style="padding-left:0;margin:0;">{"".join(items)}</ol></div>'
    )


def truncation_sentence(meta: Mapping[str, JSONValue] | None) -> str | None:
    """What the monitor did not see, in words, from a prediction's ``meta["truncated"]`` (plain text, to
    be escaped by the caller); ``None`` when nothing was cut. Per field (response, request):

    - ``unit: "steps"``: ``"response: steps 3-9 of 12 were cut before the monitor saw it"`` (``(measured
      in tokens)`` added when the budget was in tokens);
    - ``unit: "chars"`` / ``"tokens"``: ``"response: the monitor saw 2,000 of 9,512 characters, the rest
      was cut"`` (with ``, head only`` etc. for a probe's ``read``, and the ``fallback`` reason when a
      trajectory had to be cut so).

    Fields join with ``"; "``."""
    trunc = (meta or {}).get("truncated")
    if not isinstance(trunc, Mapping):
        return None
    parts = []
    for field in ("response", "request"):
        info = trunc.get(field)
        if not isinstance(info, Mapping):
            continue
        unit, cut = info.get("unit"), info.get("steps_cut")
        if unit == "steps" and isinstance(cut, list) and len(cut) == 2:
            a, b = cut
            span = f"step {a}" if a == b else f"steps {a}-{b}"
            verb = "was" if a == b else "were"
            total = info.get("steps_total", "?")
            extra = f" (measured in {info['measure']})" if info.get("measure") not in (None, "chars") else ""
            parts.append(f"{field}: {span} of {total} {verb} cut before the monitor saw it{extra}")
            continue
        word = {"chars": "characters", "tokens": "tokens"}.get(str(unit), str(unit))
        kept, original = _count(info.get("kept")), _count(info.get("original"))
        if kept is None or original is None:
            parts.append(f"{field}: cut before the monitor saw it")
            continue
        sentence = f"{field}: the monitor saw {kept} of {original} {word}, the rest was cut"
        if info.get("read"):
            sentence += f" (read: {info['read']})"
        if info.get("fallback"):
            sentence += f" ({info['fallback']})"
        parts.append(sentence)
    return "; ".join(parts) or None


def _count(value: JSONValue) -> str | None:
    """A count from a JSON value as ``"9,512"``; ``None`` when it is absent or not a whole number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return f"{int(value):,}"
    except (ValueError, OverflowError):
        return None


def truncation_html(meta: Mapping[str, JSONValue] | None) -> str:
    """:func:`truncation_sentence` of a prediction's ``meta`` as escaped HTML (``<div class="am-truncated">``),
    ``""`` when nothing was cut."""
    sentence = truncation_sentence(meta)
    if not sentence:
        return ""
    return (
        f'<div class="am-truncated" style="font-size:0.85rem;color:#92400e;margin:0.2rem 0;">Cut: {esc(sentence)}</div>'
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
