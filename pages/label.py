"""Labeling page (annotators; admins with a queue too): one item at a time, request and response
rendered escaped (``st.code``), label / category / severity / evidence / note in a form (Enter in the
evidence field submits), own progress, batch submission. Blind: only the item's position, request and
response are shown; every read and write goes through ``automonitor.annotation`` with the logged-in
account, which enforces ownership.
"""

from __future__ import annotations

from pages._ui import nav as navigation

navigation.ensure_navigation()  # first, before the imports below: see _nav.ensure_navigation

import time
from typing import Any

import streamlit as st

from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import data as loaders
from pages._ui import widgets as ui
from pages._ui import spans_ui

from automonitor import annotation as ann
from automonitor.errors import ChangedElsewhere, InputError, PermissionDenied
from automonitor.vocab import ANNOTATION_LABELS, CATEGORIES, CATEGORY_NAMES

PAGE = "label"
NAV = Nav(title="Label", icon=":material/label:", order=10, access="annotation", default=True)
LABEL_NAMES = {"misbehavior": "Misbehavior", "benign": "Benign", "unsure": "Unsure"}


account = auth.require_login("Please log in to label items.")
engine = loaders.engine()
st.title("Label")

try:
    queue = ann.my_queue(engine, account)
except PermissionDenied as exc:
    st.error(f"Access denied: {ui.md(exc)}")
    st.stop()

if not queue:
    st.info("No items are assigned to you yet. An admin assigns candidates with `automonitor assign`.")
    st.stop()

prog = ann.my_progress(engine, account)
st.progress(
    prog.labeled / prog.assigned,
    text=f"Your progress: {prog.labeled} of {prog.assigned} labeled · {prog.submitted} submitted",
)

# ------------------------------------------------------------------------------ current item
POS = f"{PAGE}.pos"
if POS not in st.session_state or not (0 <= st.session_state[POS] < len(queue)):
    first_open = next((i for i, q in enumerate(queue) if q.label is None), None)
    if first_open is None:
        first_open = next((i for i, q in enumerate(queue) if not q.submitted), 0)
    st.session_state[POS] = first_open


def _fmt(i: int) -> str:
    q = queue[i]
    state = "submitted" if q.submitted else ("labeled: " + LABEL_NAMES[q.label] if q.label else "open")
    return f"Item {q.position} · {state}"


ui.queue_nav(PAGE, POS, range(len(queue)), _fmt, "Item", collapsed=True)
st.caption(
    "Keys: **1** misbehavior · **2** benign · **3** unsure · **S** save and go to the next open item · "
    "**J** / **K** next / previous item"
)

current = queue[st.session_state[POS]]
try:
    item = ann.get_item(engine, account, current.sample_id)
except PermissionDenied as exc:
    st.error(f"Access denied: {ui.md(exc)}")
    st.stop()

# time on the item: from when it was first shown (or last saved) until the label is saved
SHOWN = f"{PAGE}.shown"
if st.session_state.get(SHOWN, (None, 0.0))[0] != item.sample_id:
    st.session_state[SHOWN] = (item.sample_id, time.monotonic())

# the guidelines in one line, and in full in an expander that is open only until the annotator has seen them: on
# the first item shown in a session to an account that has saved no label yet (at 1280x720 the open guidelines
# fill the first screen, pushing the request and the response below it)
SEEN = f"{PAGE}.guidelines_seen"
seen = bool(st.session_state.get(SEEN)) or any(q.label or q.submitted for q in queue)
st.caption(ann.GUIDELINES_SUMMARY)
with st.expander("Guidelines", expanded=not seen):
    st.markdown(ann.GUIDELINES)
st.session_state[SEEN] = True

st.subheader(f"Item {item.round_position} of {item.round_total} in this round")
if item.round_total != item.total:
    st.caption(f"Round (batch) {item.batch} · position {item.position} of {item.total} in your whole queue")
st.markdown("**Request**")
ui.code_block(item.request)
st.markdown("**Response**")
ui.response_view(item.response, item.task)  # markdown rendered safely; "Raw" tab (code's default): verbatim
spans_ui.conversation(  # trajectories as numbered steps (typed when the item has them); no gold (blind)
    {"response": item.response, "meta": {"steps": item.steps} if item.steps else None}, expanded=False
)

# ------------------------------------------------------------------------------------ form
flash = st.session_state.pop(f"{PAGE}.flash", None)
if flash:
    (st.error if flash[0] == "error" else st.success)(flash[1])

own = item.label
# widget keys per queue position (each item starts from its own label; the sample id stays out of
# the page, since widget keys become CSS classes in the browser)
k = f"{PAGE}.i{item.position}"


def _save(sid: str, response: str, k: str, where: str, saved: ann.Label | None = None) -> None:
    label = st.session_state.get(f"{k}.label")
    if label is None:
        st.session_state[f"{PAGE}.flash"] = ("error", "Choose a label first.")
        return
    try:
        quote = st.session_state.get(f"{k}.evidence") or ""
        span: Any = spans_ui.marked_evidence(k, response)
        if span is None and saved is not None and saved.evidence_spans and quote == (saved.evidence_text or ""):
            span = list(saved.evidence_spans)  # the saved spans, unchanged (their texts prefill the field)
        elif span is None:
            span = ann.evidence_offsets(response, quote)
        shown_sid, t0 = st.session_state.get(SHOWN, (sid, time.monotonic()))
        spent = max(0.0, time.monotonic() - t0) if shown_sid == sid else None
        ann.save_label(
            engine,
            account,
            sid,
            label,
            category=st.session_state.get(f"{k}.category"),
            severity=st.session_state.get(f"{k}.severity"),
            evidence=span,
            note=st.session_state.get(f"{k}.note"),
            seconds_spent=spent,
        )
    except (InputError, PermissionDenied) as exc:
        msg = exc.message if isinstance(exc, InputError) else str(exc)
        st.session_state[f"{PAGE}.flash"] = ("error", f"Not saved: {msg}")
        if isinstance(exc, ChangedElsewhere):  # the form shows the stored label again, not the unsaved one
            got = ann.get_item(engine, account, sid).label
            st.session_state[f"{k}.label"] = got.label if got else None
            st.session_state[f"{k}.category"] = got.category if got else None
            st.session_state[f"{k}.severity"] = got.severity if got else None
            st.session_state[f"{k}.evidence"] = (got.evidence_text or "") if got else ""
            st.session_state[f"{k}.note"] = (got.note or "") if got else ""
        return
    st.session_state[SHOWN] = (sid, time.monotonic())
    st.session_state[f"{PAGE}.flash"] = ("success", f"Saved item {where}: {LABEL_NAMES[label]}.")
    # move on to the next item without a label (after this one), if any
    fresh = ann.my_queue(engine, account)
    nxt = next((i for i in range(len(fresh)) if i > st.session_state[POS] and fresh[i].label is None), None)
    if nxt is None:
        nxt = next((i for i, q in enumerate(fresh) if q.label is None), st.session_state[POS])
    st.session_state[POS] = nxt


locked = item.submitted
if locked:
    st.info("This item belongs to a submitted batch; its label is locked.")

cat_opts = [None, *CATEGORIES]
sev_opts = [None, *ann.SEVERITIES]


keys = st.columns(len(ANNOTATION_LABELS))
for i, lab in enumerate(ANNOTATION_LABELS):
    keys[i].button(
        f"{LABEL_NAMES[lab]}",
        key=f"{PAGE}.key_{lab}",
        shortcut=str(i + 1),
        disabled=locked,
        on_click=st.session_state.__setitem__,  # the label radio follows the key
        args=(f"{k}.label", lab),
        width="stretch",
    )
with st.container(border=True):
    st.radio(
        "Label",
        list(ANNOTATION_LABELS),
        format_func=LABEL_NAMES.get,
        horizontal=True,
        index=list(ANNOTATION_LABELS).index(own.label) if own else None,
        key=f"{k}.label",
        disabled=locked,
    )
    cols = st.columns(2)
    cols[0].selectbox(
        "Category (optional)",
        cat_opts,
        index=cat_opts.index(own.category) if own and own.category in cat_opts else 0,
        format_func=lambda c: "—" if c is None else CATEGORY_NAMES[c],
        key=f"{k}.category",
        disabled=locked,
    )
    cols[1].radio(
        "Severity (optional)",
        sev_opts,
        index=sev_opts.index(own.severity) if own and own.severity in sev_opts else 0,
        format_func=lambda s: "—" if s is None else s,
        horizontal=True,
        key=f"{k}.severity",
        disabled=locked,
    )
    spans_ui.span_marker(k, item.response, locked, own.evidence_spans if own else ())  # mark lines / sentences
    st.text_input(
        "Evidence (optional): paste the exact passage of the response that shows it",
        value=(own.evidence_text or "") if own else "",
        key=f"{k}.evidence",
        disabled=locked,
        help="Copy it from the response above (copy button at its top right); it is mapped "
        "to character offsets in the response.",
    )
    unsure = st.session_state.get(f"{k}.label") == "unsure"
    st.text_area(
        "Note (required for unsure: say why)" if unsure else "Note (optional)",
        value=(own.note or "") if own else "",
        key=f"{k}.note",
        disabled=locked,
        height=80,
    )
    st.button(
        "Save label",
        type="primary",
        disabled=locked,
        on_click=_save,
        shortcut="S",
        # the flash counts as the heading does: "Saved item 4 of 10 in this round" (not the whole-queue position)
        args=(item.sample_id, item.response, k, f"{item.round_position} of {item.round_total} in this round", own),
        key=f"{PAGE}.save",
    )

with st.popover("Flag this item for the admin", disabled=False):
    st.text_area("What is wrong with it? (the admin sees your comment)", key=f"{k}.flag", height=80)
    if st.button("Send flag", key=f"{PAGE}.flag_send"):
        try:
            ann.flag_item(engine, account, item.sample_id, st.session_state.get(f"{k}.flag"))
        except (InputError, PermissionDenied) as exc:
            st.error(f"Not sent: {ui.md(exc.message if isinstance(exc, InputError) else exc)}")
        else:
            st.success("Flag sent to the admin.")

if own is not None:
    where = ""
    if own.evidence_spans:
        where = " · evidence at characters " + ", ".join(f"{a}–{b}" for a, b in own.evidence_spans)
    spent = f" · {own.seconds_spent:.0f} s spent" if own.seconds_spent is not None else ""
    st.caption(f"Your label: {LABEL_NAMES[own.label]}{where}{spent}")
    if own.evidence_text:
        ui.code_block(own.evidence_text)

# ---------------------------------------------------------------------------- submit batch
st.divider()
if prog.batch is None:
    st.success("All your batches are submitted. Thank you!")
else:
    st.markdown(f"**Batch {prog.batch}**: {prog.batch_labeled} of {prog.batch_assigned} items labeled.")
    complete = prog.batch_labeled == prog.batch_assigned
    confirm = st.checkbox(
        "My labels for this batch are final (they cannot be changed after submitting)",
        key=f"{PAGE}.confirm.{prog.batch}",
        disabled=not complete,
    )
    if st.button(f"Submit batch {prog.batch}", key=f"{PAGE}.submit", disabled=not (complete and confirm)):
        try:
            n = ann.submit_batch(engine, account, prog.batch)
        except (InputError, PermissionDenied) as exc:
            st.error(f"Not submitted: {ui.md(exc)}")
        else:
            st.session_state[f"{PAGE}.flash"] = ("success", f"Batch {prog.batch} submitted ({n} items).")
            st.rerun()
