"""Rendering helpers of the pages (Streamlit): escaped text and HTML built by ``automonitor.views``
(:func:`show_html`: ``st.html`` for HTML whose every text piece was escaped there), model-written responses,
notices, and small layout pieces (work-queue navigation, metric tiles)."""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

import pandas as pd
import streamlit as st

from automonitor import views, vocab
from pages._ui import url_state


def md(text) -> str:
    """A data value made inert for markdown (``automonitor.views.md_escape``): names, notes, errors."""
    return views.md_escape(text)


def show_html(markup: str) -> None:
    """Render HTML built by ``automonitor.views`` (all text pieces escaped there). ``st.html`` does no
    markdown processing, so markdown tricks in model-written text stay literal."""
    st.html(markup)


def picked_row(data: pd.DataFrame, key: str, **kwargs: object) -> int | None:
    """Show ``data`` as a full-width table without its index in which one row can be selected (``kwargs``:
    more ``st.dataframe`` arguments, e.g. ``column_config``, ``height``); returns the selected row's
    position, or ``None`` when none is."""
    ev = st.dataframe(
        data, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row", key=key, **kwargs
    )
    rows = ev.selection.rows if ev is not None else []
    return rows[0] if rows else None


def response_view(text: str | None, task: str | None = None) -> None:
    """A model-written response in two tabs: **Rendered** (its markdown rendered safely by
    ``automonitor.views.markdown_html``: raw HTML escaped, links and images left as text) and **Raw**
    (the verbatim text in an escaped ``st.code`` block, with a copy button; evidence is copied from
    there; invisible bidirectional and zero-width characters marked, :func:`code_block`). A response of
    the ``code`` task (``task``: the item's task key, ``None`` when unknown) and bare source code in any
    task open on **Raw** (:func:`automonitor.views.opens_raw`): markdown would change the code (``{{7*7}}``
    shown as ``{{77}}``, lines and indentation folded). The tabs are keyed by the text and the default,
    so each item opens on its own default tab (unkeyed, the browser kept the previous item's tab)."""
    raw_first = views.opens_raw(text, task)
    key = f"response_tabs.{int(raw_first)}." + hashlib.sha256((text or "").encode()).hexdigest()[:16]
    rendered, raw = st.tabs(["Rendered", "Raw"], default="Raw" if raw_first else "Rendered", key=key)
    with rendered:
        show_html(views.markdown_html(text))
    with raw:
        code_block(text)


def code_block(text: str | None) -> None:
    """Model- or user-written text verbatim in an ``st.code`` block (escaped by Streamlit, with a copy
    button), its invisible bidirectional and zero-width characters shown as ``⟨U+XXXX⟩`` markers by the
    one escaper (``automonitor.escaping.reveal_invisible``), as every other view shows them: a
    "Trojan Source" text cannot read differently here than it is."""
    from automonitor.escaping import reveal_invisible

    st.code(reveal_invisible(text or ""), language=None, wrap_lines=True)


def background_demo_notice(what: str) -> bool:
    """Say that ``make demo``'s background phase is running (its last log line, escaped) when it is, as
    the Runs and Transfer pages do; ``what`` names what this page waits for. Returns whether it runs."""
    bg = views.background_demo()
    if bg is None:
        return False
    st.info(
        f"`make demo`'s background phase is running (transfer table, then the local judge's install "
        f"and its runs; log: `{views.DEMO_LOG}`). {what} Last log line: {views.md_escape(bg)}",
        icon=":material/hourglass_top:",
    )
    return True


def empty_store_notice(what: str = "data") -> None:
    """The standard hint shown by a page when the store holds nothing to show yet."""
    st.info(
        f"No {what} in the store yet. Build the benchmark with `automonitor build` (or import pairs "
        "with `automonitor import FILE`), then launch a run on the **Runs** page."
    )


def queue_nav(page: str, key: str, options: Sequence[Any], format_func, label: str, *, collapsed: bool = False) -> None:
    """The item navigation of a work queue (Label, Adjudicate): "← Previous" (shortcut K), a select of
    ``options`` bound to session key ``key``, "Next →" (shortcut J); the buttons step through
    ``options`` from the selected one and are disabled at the ends."""
    opts = list(options)

    def step(delta: int) -> None:
        cur = st.session_state.get(key)
        here = opts.index(cur) if cur in opts else 0
        st.session_state[key] = opts[max(0, min(len(opts) - 1, here + delta))]

    cur = st.session_state.get(key)
    at = opts.index(cur) if cur in opts else 0
    nav = st.columns([1, 4, 1], vertical_alignment="bottom")
    nav[0].button(
        "← Previous", key=f"{page}.prev", on_click=step, args=(-1,), shortcut="K", disabled=at == 0, width="stretch"
    )
    nav[1].selectbox(
        label, opts, format_func=format_func, key=key, label_visibility="collapsed" if collapsed else "visible"
    )
    nav[2].button(
        "Next →",
        key=f"{page}.next",
        on_click=step,
        args=(1,),
        shortcut="J",
        disabled=at >= len(opts) - 1,
        width="stretch",
    )


def metric_columns(n: int, per_row: int = 3) -> list:
    """``n`` columns for ``st.metric`` tiles, ``per_row`` to a row: at 1280 px five or six tiles in one
    row cut their labels and interval chips ("95 % CI [-0.32, 0.…")."""
    cols: list = []
    while len(cols) < n:
        cols.extend(st.columns(per_row))
    return cols[:n]


def edition_choice(page: str, editions: Sequence[str], help_text: str) -> str:
    """The "Edition" segmented control over ``editions`` (default ``paper``), seeded from and kept in the
    URL (``?edition=``); returns the chosen edition."""
    key = url_state.seed_state(page, "edition", "paper", valid=list(editions))
    edition = st.segmented_control("Edition", list(editions), key=key, help=help_text) or "paper"
    url_state.sync_qp(page, edition=None if edition == "paper" else edition)
    return str(edition)


def slice_selects(cat_col, task_col, cat_key: str, task_key: str, all_value: str) -> tuple[str | None, str | None]:
    """The "Category" and "Task" selects of a page that reads one category x task slice, in the columns
    ``cat_col`` / ``task_col``, under the (URL-seeded) widget keys ``cat_key`` / ``task_key``, each with a
    first choice ``all_value`` ("All categories", "All tasks"). Returns ``(category, task)``, ``None`` for
    all."""
    category = cat_col.selectbox(
        "Category",
        [all_value, *vocab.CATEGORIES],
        key=cat_key,
        format_func=lambda c: "All categories" if c == all_value else vocab.CATEGORY_NAMES[c],
    )
    task = task_col.selectbox(
        "Task",
        [all_value, *vocab.TASKS],
        key=task_key,
        format_func=lambda t: "All tasks" if t == all_value else vocab.TASK_NAMES[t],
    )
    return (None if category == all_value else category), (None if task == all_value else task)
