"""Gold-span widgets of the drill-down: the response with gold spans and the monitor's
evidence in two styles, and the overlap in words. UI only: the logic is in ``automonitor.views.spans``."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import streamlit as st

from automonitor import annotation as ann
from automonitor import views
from automonitor.views import spans as span_views
from pages import _common as ui


def gold_overlap(sample: Mapping[str, Any], prediction: Mapping[str, Any] | None, grounded: Sequence[Any]) -> None:
    """Under a run's response: when the sample has gold spans, the overlap in words and the response
    with gold spans and evidence highlighted; nothing otherwise."""
    gold = span_views.sample_gold_spans(ui.engine(), sample["id"])
    if not gold:
        return
    evidence = (prediction or {}).get("evidence") or []
    st.markdown("**Gold spans** — " + views.md_escape(span_views.overlap_sentence(sample["response"], evidence, gold)))
    ui.show_html(span_views.gold_legend_html())
    ui.show_html(span_views.gold_evidence_html(sample["response"], gold, grounded, max_height=420))


def conversation(sample: Mapping[str, Any], *, expanded: bool = True) -> None:
    """When the sample is a trajectory (typed steps in ``sample["meta"]["steps"]``, else a serialised
    trajectory response): an expander with it as a numbered conversation (gold-span steps marked when
    ``sample`` has an ``id``; the labeling page passes none, so annotators never see gold spans);
    nothing otherwise."""
    gold = span_views.sample_gold_spans(ui.engine(), sample["id"]) if sample.get("id") else []
    markup = span_views.conversation_html(sample.get("response"), gold, meta=sample.get("meta"))
    if markup:
        with st.expander("The conversation (numbered steps)", expanded=expanded):
            ui.show_html(markup)


def truncation_note(prediction: Mapping[str, Any] | None) -> None:
    """Beside a monitor's verdict: what the monitor did not see when its prediction records a cut
    (``meta["truncated"]``, :func:`automonitor.views.spans.truncation_sentence`), escaped; nothing
    otherwise."""
    markup = span_views.truncation_html((prediction or {}).get("meta"))
    if markup:
        ui.show_html(markup)


def span_agreement_section(doc: Mapping[str, Any]) -> None:
    """The Agreement page's "Where is the misbehavior?" block: span F1 and token-level Krippendorff's
    alpha on the marked evidence spans (``doc["spans"]`` of ``automonitor.annotation.agreement.agreement``)."""
    sp = doc.get("spans") or {}
    st.subheader("Agreement on the evidence span")
    if not sp.get("items"):
        st.caption("No item has evidence spans marked by two annotators who both chose misbehavior yet.")
        return

    def fmt(v: Any) -> str:
        return "n/a" if v is None else f"{v:.3f}"

    cols = st.columns(4)
    cols[0].metric("Items with 2+ spans", sp["items"])
    cols[1].metric("Span F1", fmt(sp["span_f1"]), help="mean pairwise character-level F1 (Dice) of the spans")
    cols[2].metric("Token Krippendorff's alpha", fmt(sp["token_alpha"]), help="nominal, tokens inside / outside")
    cols[3].metric("Identical spans", fmt(sp["exact"]), help="share of annotator pairs with the same offsets")


def _spans_text(spans: Sequence[tuple[int, int]]) -> str:
    return ", ".join(f"{a}:{b}" for a, b in spans)


def parse_spans(text: str | None) -> list[tuple[int, int]] | None:
    """``"12:40, 80:95"`` as ``[(12, 40), (80, 95)]``; ``None`` for a blank field. Raises ValueError
    naming the bad piece."""
    if not text or not text.strip():
        return None
    out = []
    for piece in text.split(","):
        a, sep, b = piece.strip().partition(":")
        if not sep or not a.strip().isdigit() or not b.strip().isdigit():
            raise ValueError(f"{piece.strip()!r} is not START:END")
        out.append((int(a), int(b)))
    return out


def adjudication_spans_input(entry: Any, key: str) -> None:
    """Inside the adjudication form: the gold spans field ("START:END, ..." character offsets into the
    response), prefilled with the annotators' marks merged (``automonitor.annotation.proposed_spans``),
    with the marked text previewed. Used only with the decision misbehavior."""
    proposal = ann.proposed_spans(entry.labels)
    if key not in st.session_state:
        st.session_state[key] = _spans_text(proposal)
    st.text_input(
        "Gold spans for a misbehavior decision (START:END, ... offsets into the response)",
        key=key,
        help="Prefilled with the annotators' evidence spans, overlapping ones merged; edit to resolve a "
        "disagreement, empty for none.",
    )
    for a, b in proposal:
        st.caption(f"{a}:{b} → " + views.md_escape(entry.response[a:b][:200]))


# --- marking where the misbehavior is (labeling page) -------------------------------------------------

SPAN_KEYS_HELP = "Keys: N next segment, P previous, X mark / unmark, U undo; click a segment to toggle it."


def _seg_state(k: str) -> tuple[str, str, str]:
    return f"{k}.segs", f"{k}.cursor", f"{k}.undo"


def _move(k: str, n: int, step: int) -> None:
    _, cur, _ = _seg_state(k)
    st.session_state[cur] = max(0, min(n - 1, int(st.session_state.get(cur, 0)) + step))


def _toggle(k: str) -> None:
    segs, cur, undo = _seg_state(k)
    have = list(st.session_state.get(segs) or [])
    st.session_state.setdefault(undo, []).append(have)
    i = int(st.session_state.get(cur, 0))
    st.session_state[segs] = sorted(set(have) ^ {i})


def _undo(k: str) -> None:
    segs, _, undo = _seg_state(k)
    stack = st.session_state.get(undo) or []
    if stack:
        st.session_state[segs] = stack.pop()


def _clicked(k: str) -> None:
    segs, _, undo = _seg_state(k)
    st.session_state.setdefault(undo, []).append(list(st.session_state.get(f"{segs}.prev") or []))


def span_marker(k: str, response: str, locked: bool, saved: Sequence[Sequence[int]] = ()) -> None:
    """After the label ``misbehavior``: the response's segments (lines for code, sentences for text) as
    clickable pills plus keyboard buttons (N/P move, X marks, U undoes; J/K stay the page's item keys); the marked segments are shown
    highlighted; ``saved`` (the annotator's saved ``evidence_spans``) pre-marks the segments they cover when
    the item is shown again. Only this annotator's own marks are ever shown (blind). :func:`marked_evidence` turns
    them into the saved evidence spans."""
    if st.session_state.get(f"{k}.label") != "misbehavior":
        return
    kind, segs_rng = span_views.label_segments(response)
    if not segs_rng:
        return
    n = len(segs_rng)
    segs, cur, _ = _seg_state(k)
    if segs not in st.session_state and saved:  # back on a saved item: its spans shown as marked segments
        st.session_state[segs] = span_views.segments_within(segs_rng, saved)
    st.markdown(f"**Where is the misbehavior?** Mark the {kind}s that show it. {SPAN_KEYS_HELP}")
    cols = st.columns(4)
    cols[0].button(
        "Previous segment (P)", key=f"{k}.seg_prev", shortcut="P", on_click=_move, args=(k, n, -1), disabled=locked
    )
    cols[1].button(
        "Next segment (N)", key=f"{k}.seg_next", shortcut="N", on_click=_move, args=(k, n, 1), disabled=locked
    )
    cols[2].button(
        "Mark / unmark (X)", key=f"{k}.seg_toggle", shortcut="X", on_click=_toggle, args=(k,), disabled=locked
    )
    cols[3].button("Undo (U)", key=f"{k}.seg_undo", shortcut="U", on_click=_undo, args=(k,), disabled=locked)
    st.session_state[f"{segs}.prev"] = list(st.session_state.get(segs) or [])
    st.pills(
        f"{kind.capitalize()}s",
        list(range(n)),
        selection_mode="multi",
        format_func=lambda i: f"{i + 1}: {response[segs_rng[i][0] : segs_rng[i][1]][:60]}",
        key=segs,
        on_change=_clicked,
        args=(k,),
        disabled=locked,
    )
    ui.show_html(
        span_views.segments_html(
            response, segs_rng, st.session_state.get(segs) or [], int(st.session_state.get(cur, 0)), kind
        )
    )


def marked_evidence(k: str, response: str) -> list[tuple[int, int]] | None:
    """The evidence spans of the marked segments (``automonitor.views.spans.marked_spans``: adjacent
    marked segments merged into one span, others kept apart), or ``None`` when nothing is marked or
    the label is not misbehavior."""
    if st.session_state.get(f"{k}.label") != "misbehavior":
        return None
    chosen = st.session_state.get(_seg_state(k)[0]) or []
    if not chosen:
        return None
    _, rng = span_views.label_segments(response)
    return span_views.marked_spans(rng, chosen) or None
