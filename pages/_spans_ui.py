"""Gold-span widgets of the drill-down (issue 21): the response with gold spans and the monitor's
evidence in two styles, and the overlap in words. UI only: the logic is in ``automonitor.views.spans``."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import streamlit as st

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
