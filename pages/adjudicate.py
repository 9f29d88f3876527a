"""Adjudication page (admins): the queue of disagreements and unsure labels with annotator names
hidden by default, a decision (misbehavior / benign / reject) with a note per item (keyboard: 1/2/3
choose the decision, S records it, J/K next/previous queue item; with misbehavior the gold spans are
marked on the response's segments as on the Label page, N/P/X/U), moving resolved
pairs into a chosen gold split, the rejected pairs with their reasons, and provenance exports.
Texts are rendered escaped (``st.code``, ``st.dataframe``)."""

from __future__ import annotations

from pages._ui import nav as navigation

navigation.ensure_navigation()  # first, before the imports below: see _nav.ensure_navigation

import streamlit as st

from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import data as loaders
from pages._ui import widgets as ui
from pages._ui import spans_ui

from automonitor import annotation as ann
from automonitor import views
from automonitor.escaping import md_code
from automonitor.errors import InputError, NotFound, PermissionDenied
from automonitor.vocab import CATEGORY_NAMES, SPLITS, TASK_NAMES

PAGE = "adjudicate"
NAV = Nav(title="Adjudicate", icon=":material/gavel:", order=30, access="admin")
DECISION_NAMES = {"misbehavior": "Misbehavior (gold)", "benign": "Benign (gold)", "reject": "Reject the pair"}


account = auth.require_login("Access denied: adjudication is for admins.", admin=True)
engine = loaders.engine()
st.title("Adjudication")

flash = st.session_state.pop(f"{PAGE}.flash", None)
if flash:
    (st.error if flash[0] == "error" else st.success)(flash[1])

ASSIGN_MODES = {
    "round": "A round of N items (a pilot; `automonitor assign --limit N`)",
    "pool": "Every unassigned item, in shared batches (`automonitor assign --batch-size N`)",
}


def _show_explained(lines: list[str]) -> None:
    """The CLI's words for an assignment or a finalize (their ``explain()``): the count first, then the rest."""
    head, *more = lines
    st.success(head)
    if more:
        st.info("\n\n".join(more))  # our own sentences (counts and fixed words), not data


with st.expander("Assign candidate items in rounds", expanded=False):
    mode = st.radio(
        "What to assign", list(ASSIGN_MODES), format_func=ASSIGN_MODES.get, horizontal=True, key=f"{PAGE}.assign_mode"
    )
    try:
        if mode == "round":
            rc = st.columns(4)
            limit = rc[0].number_input("Items in this round", 1, 100_000, 10, key=f"{PAGE}.assign_limit")
            overlap = rc[1].number_input(
                "Overlap",
                min_value=0.0,
                max_value=1.0,
                value=1.0,
                step=0.1,
                key=f"{PAGE}.assign_overlap",
                help="Share of the round's items every annotator labels; the rest is labelled once",
            )
            sd = rc[2].number_input("Seed", 0, 2**31 - 1, 0, key=f"{PAGE}.assign_round_seed")
            stratify = rc[3].toggle(
                "Stratify", False, key=f"{PAGE}.assign_stratify", help="Draw the items by category x task shares"
            )
            spread = st.toggle("Pair spread: at most one side of a pair per round", True, key=f"{PAGE}.assign_spread")
            if spread:
                st.caption(ann.PAIR_RULE)  # our own words, not data
            if st.button("Assign this round", key=f"{PAGE}.assign_round"):
                _show_explained(
                    ann.assign(
                        engine,
                        account,
                        seed=int(sd),
                        limit=int(limit),
                        overlap=float(overlap),
                        stratify=stratify,
                        pair_spread=spread,
                    ).explain()
                )
        else:
            ac = st.columns(4)
            k_ = ac[0].number_input("Annotators per item (k)", 1, 20, 2, key=f"{PAGE}.assign_k")
            bs = ac[1].number_input(
                "Batch size (items)",
                2,
                1000,
                20,
                step=2,
                key=f"{PAGE}.assign_batch",
                help="Annotators who share a batch see its items in the same order",
            )
            cal = ac[2].number_input("Calibration pairs (everyone)", 0, 100, 0, key=f"{PAGE}.assign_cal")
            sd = ac[3].number_input("Seed", 0, 2**31 - 1, 0, key=f"{PAGE}.assign_seed")
            if st.button("Assign unassigned candidates", key=f"{PAGE}.assign"):
                res = ann.assign(engine, account, k=int(k_), seed=int(sd), batch_size=int(bs), calibration=int(cal))
                st.success(f"{res.items} items in {len(res.rounds)} batch(es), {res.assignments} assignments.")
    except (InputError, PermissionDenied) as exc:
        st.error(f"Not assigned: {ui.md(exc.message if isinstance(exc, InputError) else exc)}")

flags = ann.item_flags(engine, account)
if flags:
    with st.expander(f"Flags from annotators ({len(flags)} open)", expanded=True):
        for f in flags:
            fc1, fc2 = st.columns([5, 1], vertical_alignment="center")
            fc1.markdown(
                f"**{views.md_escape(f['annotator'])}** on {md_code(f['sample_id'])} (pair {md_code(f['pair_id'])}):"
            )
            fc1.code(f["comment"], language=None, wrap_lines=True)
            if fc2.button("Resolved", key=f"{PAGE}.flag_done.{f['id']}"):
                ann.resolve_flag(engine, account, f["id"])
                st.rerun()

top = st.columns([2, 2, 3])
reveal = top[0].toggle("Show annotator names", value=False, key=f"{PAGE}.reveal")
include_decided = top[1].toggle("Include decided items", value=False, key=f"{PAGE}.decided")

try:
    queue = ann.adjudication_queue(engine, account, reveal_names=reveal, include_decided=include_decided)
except PermissionDenied as exc:
    st.error(f"Access denied: {ui.md(exc)}")
    st.stop()

top[2].metric("Items waiting for a decision", sum(e.decision is None for e in queue))

if not queue:
    st.info("Nothing to adjudicate: no submitted disagreements or unsure labels.")
else:
    SEL = f"{PAGE}.item"
    ids = [e.sample_id for e in queue]
    if st.session_state.get(SEL) not in ids:
        st.session_state[SEL] = ids[0]
    by_id = {e.sample_id: e for e in queue}

    def _fmt(sid: str) -> str:
        e = by_id[sid]
        done = f" · decided: {e.decision['decision']}" if e.decision else ""
        return (
            f"{ids.index(sid) + 1}. {e.reason} · {CATEGORY_NAMES.get(e.category, e.category)} / "
            f"{TASK_NAMES.get(e.task, e.task)}{done}"
        )

    ui.queue_nav(PAGE, SEL, ids, _fmt, "Queue")
    st.caption(
        "Keys: **1** misbehavior · **2** benign · **3** reject · **S** record the decision · "
        "**J** / **K** next / previous item · with misbehavior, **N** / **P** / **X** / **U** move over, mark "
        "and unmark the gold span's segments (type a note, then Tab out of it before pressing a key)"
    )
    e = by_id[st.session_state[SEL]]
    why = ann.QUEUE_REASONS.get(e.reason, e.reason)
    # a missing_span item's marked spans agree: its F1 of 0 is only the unmarked annotator's empty list
    f1 = "" if e.span_f1 is None or e.reason == "missing_span" else f"; lowest pairwise span F1 {e.span_f1:.2f}"
    if e.unmarked > 1 or (e.unmarked and e.reason != "missing_span"):  # missing_span's reason says "one"
        f1 += "; one annotator marked no span" if e.unmarked == 1 else f"; {e.unmarked} annotators marked no span"
    st.markdown(f"**Why in the queue:** {ui.md(e.reason)}: {ui.md(why)}{f1}")
    st.markdown("**Request**")
    ui.code_block(e.request)
    st.markdown("**Response**")
    ui.response_view(e.response, e.task)  # markdown rendered safely; "Raw" tab (code's default): verbatim
    st.markdown("**Annotators' labels**")
    st.dataframe(views.display_frame(e.labels), hide_index=True, key=f"{PAGE}.labels")
    with st.expander("Provenance (intended label, source, pair)", expanded=False):
        st.dataframe(
            views.display_frame(
                [
                    {
                        "sample_id": e.sample_id,
                        "pair_id": e.pair_id,
                        "intended label": e.intended_label,
                        "source": e.source,
                    }
                ]
            ),
            hide_index=True,
        )
    if e.decision:
        st.caption(
            f"Current decision: {ui.md(e.decision['decision'])} by {ui.md(e.decision['adjudicator'])} "
            f"({ui.md(e.decision['created_at'])}); a new decision supersedes it."
        )

    def _decide(sid: str) -> None:
        decision = st.session_state.get(f"{PAGE}.{sid}.decision")
        note = st.session_state.get(f"{PAGE}.{sid}.note")
        if decision is None:
            st.session_state[f"{PAGE}.flash"] = ("error", "Choose a decision first.")
            return
        try:
            spans = (
                spans_ui.adjudication_spans(f"{PAGE}.{sid}.spans", by_id[sid].response, f"{PAGE}.{sid}.decision")
                if decision == "misbehavior"
                else None
            )
            ann.adjudicate(engine, account, sid, decision, note, spans=spans)
        except (ValueError, NotFound, PermissionDenied) as exc:  # ValueError: a malformed spans field
            msg = exc.message if isinstance(exc, InputError) else str(exc)
            st.session_state[f"{PAGE}.flash"] = ("error", f"Not recorded: {msg}")
            return
        st.session_state[f"{PAGE}.flash"] = ("success", f"Decision recorded: {DECISION_NAMES[decision]}.")

    with st.container(border=True):
        keys = st.columns(len(ann.DECISIONS))
        for i, d in enumerate(ann.DECISIONS):
            keys[i].button(
                DECISION_NAMES[d],
                key=f"{PAGE}.key_{d}",
                shortcut=str(i + 1),
                on_click=st.session_state.__setitem__,  # the decision radio follows the key
                args=(f"{PAGE}.{e.sample_id}.decision", d),
                width="stretch",
            )
        st.radio(
            "Decision",
            list(ann.DECISIONS),
            format_func=DECISION_NAMES.get,
            index=None,
            horizontal=True,
            key=f"{PAGE}.{e.sample_id}.decision",
        )
        st.text_area("Note (required to reject: the reason)", key=f"{PAGE}.{e.sample_id}.note", height=80)
        # gold spans: the Label page's segment marker (N/P/X/U), pre-marked with the annotators' proposal
        spans_ui.adjudication_spans_input(e, f"{PAGE}.{e.sample_id}.spans", f"{PAGE}.{e.sample_id}.decision")
        st.button(
            "Record decision",
            type="primary",
            key=f"{PAGE}.record",
            shortcut="S",
            on_click=_decide,
            args=(e.sample_id,),
        )

st.divider()
st.subheader("Move resolved pairs into the gold set")
st.caption(
    "A pair is resolved when each side has a decision here or all its annotators submitted the "
    "same misbehavior/benign label (misbehavior: with evidence spans that agree, span F1 at least "
    f"{ann.SPAN_F1_THRESHOLD}; their spans become gold spans). Accepted pairs become gold samples of edition **verified** "
    "(split test, label source adjudicated), never of the paper mirror; with split train they go "
    "to the train split. Rejected ones (a rejected side, or not one misbehavior and one benign "
    "side) are kept with their reason."
)
fc = st.columns([1, 1, 3])
split = fc[0].selectbox("Split", list(SPLITS), key=f"{PAGE}.split")
if fc[1].button("Move resolved pairs", key=f"{PAGE}.finalize", type="primary"):
    try:
        res = ann.finalize_pairs(engine, account, split)
    except (InputError, PermissionDenied) as exc:
        st.error(f"Not done: {ui.md(exc)}")
    else:
        _show_explained(res.explain())  # why pairs still wait, and the next step

rejected = ann.rejected_pairs(engine, account)
if rejected:
    st.markdown("**Rejected items and reasons**")
    st.dataframe(views.display_frame(rejected), hide_index=True, key=f"{PAGE}.rejected")

st.subheader("Export with provenance")
ec = st.columns(4)
for i, (what, fmt) in enumerate(
    (("annotations", "jsonl"), ("annotations", "csv"), ("adjudications", "jsonl"), ("adjudications", "csv"))
):
    if what == "annotations":
        data = ann.records_to_text(ann.annotation_records(engine, account), fmt, ann.ANNOTATION_EXPORT_COLUMNS)
    else:
        data = ann.records_to_text(ann.adjudication_records(engine, account), fmt, ann.ADJUDICATION_EXPORT_COLUMNS)
    ec[i].download_button(
        f"{what.capitalize()} ({fmt.upper()})",
        data,
        file_name=f"{what}.{fmt}",
        mime="text/csv" if fmt == "csv" else "application/jsonl",
        key=f"{PAGE}.export.{what}.{fmt}",
    )
