"""Gold-span widgets of the drill-down: the response with gold spans and the monitor's
evidence in two styles, and the overlap in words. UI only: the logic is in ``automonitor.views.spans``."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import streamlit as st

from automonitor import annotation as ann
from automonitor import views
from automonitor.views import spans as span_views
from pages._ui import data as loaders
from pages._ui import widgets as ui


def gold_overlap(sample: Mapping[str, Any], prediction: Mapping[str, Any] | None, grounded: Sequence[Any]) -> None:
    """Under a run's response: when the sample has gold spans, the overlap in words and the response
    with gold spans and evidence highlighted; nothing otherwise."""
    gold = span_views.sample_gold_spans(loaders.engine(), sample["id"])
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
    gold = span_views.sample_gold_spans(loaders.engine(), sample["id"]) if sample.get("id") else []
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

    if sp.get("too_few"):
        st.caption(
            f":gray[**too few items**: {sp['items']} item(s) with spans from two annotators, fewer than "
            f"{sp.get('min_items')}: no interval; read these figures as anecdotes]"
        )
    ci = sp.get("span_f1_ci")
    cols = st.columns(4)
    cols[0].metric("Items with 2+ spans", sp["items"])
    cols[1].metric(
        "Span F1",
        fmt(sp["span_f1"]),
        delta=None if not ci else f"95 % CI [{ci[0]:.2f}, {ci[1]:.2f}]",
        delta_color="off",
        help="mean pairwise character-level F1 (Dice) of the spans; percentile bootstrap over items",
    )
    cols[2].metric("Token Krippendorff's alpha", fmt(sp["token_alpha"]), help="nominal, tokens inside / outside")
    cols[3].metric("Identical spans", fmt(sp["exact"]), help="share of annotator pairs with the same offsets")


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


def adjudication_spans_input(entry: Any, key: str, decision_key: str) -> None:
    """Inside the adjudication form, once the decision (session key ``decision_key``) is misbehavior: each annotator's marks (as segment
    numbers and offsets: the adjudicator is not blind), then the segment marker of the labeling page
    (:func:`span_marker`, keys N / P / X / U, session prefix ``key``) pre-marked with their merge
    (``automonitor.annotation.proposed_spans``), and an optional exact-offsets field (``START:END, ...``,
    session key ``f"{key}.offsets"``) that overrides the marks, prefilled when a proposed span does not
    fall on whole segments (e.g. an imported quote). :func:`adjudication_spans` reads the result."""
    if st.session_state.get(decision_key) != "misbehavior":
        return
    proposal = ann.proposed_spans(entry.labels)
    kind, rng = span_views.label_segments(entry.response)
    st.markdown("**The annotators' spans**")
    for lab in entry.labels:
        spans = [tuple(x) for x in lab.get("evidence_spans") or []]
        where = ", ".join(f"{a}:{b}" for a, b in spans) or "none marked"
        segs = span_views.segments_within(rng, spans)
        nums = f" ({kind}s {', '.join(str(i + 1) for i in segs)})" if segs else ""
        st.caption(views.md_escape(f"{lab['annotator']} ({lab['label']}): {where}{nums}"))
    starts, ends = {a for a, _ in rng}, {b for _, b in rng}
    whole = all(a in starts and b in ends for a, b in proposal)  # every proposed span runs over whole segments
    offsets = f"{key}.offsets"
    if offsets not in st.session_state:
        st.session_state[offsets] = "" if whole else ", ".join(f"{a}:{b}" for a, b in proposal)
    if rng:
        span_marker(
            key,
            entry.response,
            False,
            proposal,
            gate=decision_key,
            prompt="Gold spans: pre-marked with the annotators' marks merged; change them to resolve the disagreement.",
        )
    if not whole:
        st.caption("A proposed span covers part of a segment only: it is in the exact offsets field below.")
    st.text_input(
        "Exact gold spans instead (START:END, ... offsets into the response; overrides the marks when filled)",
        key=offsets,
    )


def adjudication_spans(key: str, response: str, decision_key: str) -> list[tuple[int, int]] | None:
    """The gold spans chosen by :func:`adjudication_spans_input`: the exact offsets field when filled
    (:func:`parse_spans`; ValueError naming a malformed piece), else the marked segments; ``None`` when
    nothing is marked or the response has no segments (the decision then leaves the item's gold spans
    as they are)."""
    typed = parse_spans(st.session_state.get(f"{key}.offsets"))
    if typed is not None:
        return typed
    return marked_evidence(key, response, decision_key)


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


def span_marker(
    k: str,
    response: str,
    locked: bool,
    saved: Sequence[Sequence[int]] = (),
    *,
    gate: str | None = None,
    prompt: str = "Mark the {kind}s that show it.",
) -> None:
    """After the label ``misbehavior`` (the session value at ``gate``, default ``f"{k}.label"``): the
    response's segments (lines for code, sentences for text) as clickable pills plus keyboard buttons
    (N/P move, X marks, U undoes; J/K stay the page's item keys); the marked segments are shown
    highlighted; ``saved`` (the annotator's saved ``evidence_spans``; on the Adjudicate page the
    annotators' proposal) pre-marks the segments they cover when the item is first shown in the session.
    On the labeling page only this annotator's own marks are ever shown (blind). :func:`marked_evidence`
    turns them into evidence spans. ``prompt``: the instruction after "Where is the misbehavior?"."""
    if st.session_state.get(gate or f"{k}.label") != "misbehavior":
        return
    kind, segs_rng = span_views.label_segments(response)
    if not segs_rng:
        return
    n = len(segs_rng)
    segs, cur, _ = _seg_state(k)
    if segs not in st.session_state and saved:  # back on a saved item: its spans shown as marked segments
        st.session_state[segs] = span_views.segments_within(segs_rng, saved)
    st.markdown(f"**Where is the misbehavior?** {prompt.format(kind=kind)} {SPAN_KEYS_HELP}")
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
        format_func=lambda i: f"{i + 1}: {ui.md(response[segs_rng[i][0] : segs_rng[i][1]][:60])}",  # markdown: inert
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


def marked_evidence(k: str, response: str, gate: str | None = None) -> list[tuple[int, int]] | None:
    """The evidence spans of the marked segments (``automonitor.views.spans.marked_spans``: adjacent
    marked segments merged into one span, others kept apart), or ``None`` when nothing is marked or
    the label (the session value at ``gate``, default ``f"{k}.label"``) is not misbehavior."""
    if st.session_state.get(gate or f"{k}.label") != "misbehavior":
        return None
    chosen = st.session_state.get(_seg_state(k)[0]) or []
    if not chosen:
        return None
    _, rng = span_views.label_segments(response)
    return span_views.marked_spans(rng, chosen) or None
