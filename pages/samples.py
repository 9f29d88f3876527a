"""Samples browser: search and filters (kept in the URL), a page of matches, one sample's detail, and
export of the whole filtered view as CSV or JSONL (the contract's pair file columns)."""

from __future__ import annotations

from pages._ui import nav as navigation

navigation.ensure_navigation()  # first, before the imports below: see _nav.ensure_navigation

from collections.abc import Sequence
from typing import NamedTuple

import streamlit as st

from automonitor import views, vocab
from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import data as loaders
from pages._ui import url_state
from pages._ui import widgets as ui

PAGE = "samples"
NAV = Nav(title="Samples", icon=":material/table_rows:", order=50, access="workbench")
auth.workbench_page(NAV)

url, ver = loaders.db_url(), loaders.version()
if url_state.qp("run"):
    _runs = loaders.load_runs(url, ver)
    _, _warn = views.run_choice(url_state.qp("run"), list(_runs["run_id"]))
    if _warn:
        st.warning(views.md_escape(_warn.replace("showing another run instead", "its verdicts are not shown")))
sources = loaders.load_counts(url, ver, "source")
source_opts = sorted(s for s in sources["source"].unique()) if not sources.empty else []


class MultiFilter(NamedTuple):
    """A filter of several values: a multiselect keyed, and kept in the URL, by ``field``."""

    field: str
    label: str
    options: Sequence[str]
    names: dict[str, str] | None = None  # display names of the options
    help: str | None = None


# in their order on the page and in the URL
MULTI_FILTERS = (
    MultiFilter("category", "Category", vocab.CATEGORIES, vocab.CATEGORY_NAMES),
    MultiFilter("task", "Task", vocab.TASKS, vocab.TASK_NAMES),
    MultiFilter("label", "Gold label", vocab.LABELS),
    MultiFilter("split", "Split", vocab.SPLITS),
    MultiFilter("source", "Source", source_opts),
    MultiFilter(
        "label_source",
        "Label provenance",
        vocab.LABEL_SOURCES,
        help="How the gold label is known (human_per_response, by_construction, patch_pair, ...)",
    ),
    MultiFilter(
        "tier",
        "Tier",
        views.TIERS,
        help="surface: some cheap detector of the build's ladder catches the pair; implicit: none does",
    ),
)
STATUS_OPTS = [*vocab.STATUSES, "any"]
# a link's value a filter does not accept is ignored, and said so (before, dropped silently: trial53)
for _field, _accepted in (
    *((m.field, m.options) for m in MULTI_FILTERS),
    ("status", STATUS_OPTS),
    ("size", views.PAGE_SIZES),
):
    _warn = views.link_value_warning(_field, url_state.qp_list(_field), _accepted)
    if _warn:
        st.warning(views.md_escape(_warn))
q_key = url_state.seed_state(PAGE, "q", "")
multi_keys = {m.field: url_state.seed_state(PAGE, m.field, [], valid=m.options, multi=True) for m in MULTI_FILTERS}
st_key = url_state.seed_state(PAGE, "status", "gold", valid=STATUS_OPTS)
p_key = url_state.seed_state(PAGE, "page", 1, cast=int)
size_key = url_state.seed_state(PAGE, "size", 100, valid=list(views.PAGE_SIZES), cast=int)

search = st.text_input(
    "Search request, response, sample id or pair id", key=q_key, placeholder="e.g. bonus, eval(, CWE-79 …"
)
# three rows of filters, each box wide enough for its longest chip at 1280 px (a chip needs its text and ~110 px
# of box: one row of six cut the Task chip "Code" to "C."); several chips wrap onto more lines of their box
# instead of scrolling it sideways. Source (names of any length) gets a row of its own.
f1, f2, f3 = st.columns([3.2, 2.0, 2.1])
f4, f5, g1, g2 = st.columns([1.6, 1.5, 2.7, 1.7])
(f6,) = st.columns(1)
status = f5.selectbox(
    "Status",
    STATUS_OPTS,
    key=st_key,
    help="gold: benchmark samples; candidate: pairs awaiting annotation (label = intended)",
)
statuses = [] if status == "any" else [status]
chosen = {
    m.field: cell.multiselect(
        m.label,
        m.options,
        key=multi_keys[m.field],
        format_func=m.names.__getitem__ if m.names else str,
        help=m.help,
        wrap=True,
    )
    for cell, m in zip((f1, f2, f3, f4, f6, g1, g2), MULTI_FILTERS, strict=True)
}
filters = {"search": search, **chosen, "status": statuses}
eng = loaders.engine()
total, _ = views.search_samples(eng, limit=0, with_text=False, **filters)
PAGE_SIZE = int(st.session_state[size_key])
pages = max(1, -(-total // PAGE_SIZE))
if st.session_state[p_key] > pages or st.session_state[p_key] < 1:
    st.session_state[p_key] = 1
url_state.sync_qp(
    PAGE,
    **{k: v for k, v in filters.items() if k not in ("search", "status")},
    q=search or None,
    status=None if status == "gold" else status,
)

# the export buttons get the width their labels and icons need at 1280 px ("Export JSONL" was cut)
head, sizer, pager, exp1, exp2 = st.columns([1.6, 0.9, 0.9, 1.2, 1.35], vertical_alignment="bottom")
count_line, count_help = views.matching_line(total, chosen["split"], statuses)
head.markdown(count_line, help=count_help)  # says which split and status it counts (not the Overview's tile)
sizer.selectbox("Per page", list(views.PAGE_SIZES), key=size_key)
page = pager.number_input("Page", min_value=1, max_value=pages, step=1, key=p_key)
url_state.set_qp(page=None if page == 1 else page)
url_state.sync_qp(PAGE, size=None if PAGE_SIZE == 100 else str(PAGE_SIZE))
for col, fmt, mime in ((exp1, "csv", "text/csv"), (exp2, "jsonl", "application/x-ndjson")):
    col.download_button(
        f"Export {fmt.upper()}",
        data=lambda fmt=fmt: views.export_samples(eng, fmt, **filters),
        file_name=f"samples.{fmt}",
        mime=mime,
        key=f"{PAGE}.{fmt}",
        disabled=total == 0,
        on_click="ignore",
        icon=":material/download:",
    )

if total == 0:
    if sources.empty:
        ui.empty_store_notice("samples")
    else:
        st.info("No sample matches these filters.")
    st.stop()

_, frame = views.search_samples(eng, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE, **filters)
shown = frame.assign(  # invisible characters as markers: a right-to-left override must not reorder a cell
    request=frame["request"].str.slice(0, 160).map(views.reveal_invisible),
    response=frame["response"].str.slice(0, 160).map(views.reveal_invisible),
)
shown = views.display_frame(
    shown[["id", "label", "category", "task", "request", "response", "pair_id", "split", "status", "source"]]
)
row = ui.picked_row(
    shown,
    f"{PAGE}.table",
    height=min(600, 38 + 35 * len(shown)),
    column_config={
        "request": st.column_config.TextColumn(width="large"),
        "response": st.column_config.TextColumn(width="large"),
    },
)
sel = shown.iloc[row]["id"] if row is not None else url_state.qp("sample")
url_state.set_qp(sample=sel)

if sel:
    try:
        detail = views.sample_detail(eng, sel)
    except LookupError:
        st.warning("That sample is not in the store.")
        st.stop()
    s, other = detail["sample"], detail["other"]
    md = views.md_escape
    st.subheader(f"Sample {md(s['id'])}")
    st.caption(
        f"pair {md(s['pair_id'])} · {md(vocab.CATEGORY_NAMES.get(s['category'], s['category']))} · "
        f"{md(vocab.TASK_NAMES.get(s['task'], s['task']))} · gold label **{md(s['label'])}** · "
        f"split {md(s['split'] or '–')} · status {md(s['status'])} · source {md(s['source'] or '–')} · "
        f"label provenance {md(s.get('label_source') or '–')}"
    )
    st.markdown("**Request**")
    ui.show_html(views.text_html(s["request"], css_class="am-text am-request"))
    a, b = st.columns(2)
    with a:
        st.markdown(f"**Response** (gold: {md(s['label'])})")
        ui.show_html(views.text_html(s["response"], max_height=420, css_class="am-text am-response"))
    with b:
        if other:
            st.markdown(f"**Other side of the pair** (gold: {md(other['label'])})")
            ui.show_html(views.text_html(other["response"], max_height=420, css_class="am-text am-other"))
        else:
            st.caption("The other side of this pair is not in the store.")
    st.page_link(
        navigation.PAGE_DRILLDOWN,
        label="Open in drill-down (monitor verdicts on this sample)",
        icon=":material/zoom_in:",
        query_params={"sample": s["id"]},
    )
