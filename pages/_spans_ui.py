"""Gold-span widgets of the drill-down (issue 21): the response with gold spans and the monitor's
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
    """When the response is a trajectory: an expander with it as a numbered conversation (gold-span
    steps marked when ``sample`` has an ``id``; the labeling page passes none, so annotators never see
    gold spans); nothing otherwise."""
    gold = span_views.sample_gold_spans(ui.engine(), sample["id"]) if sample.get("id") else []
    markup = span_views.conversation_html(sample.get("response"), gold)
    if markup:
        with st.expander("The response as a conversation (numbered steps)", expanded=expanded):
            ui.show_html(markup)


def span_agreement_section(doc: Mapping[str, Any]) -> None:
    """The Agreement page's "Where is the misbehavior?" block: span F1 and token-level Krippendorff's
    alpha on the marked evidence spans (``doc["spans"]`` of ``automonitor.agreement.agreement``)."""
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
