"""Generation: make candidate pairs with a generator model (the paper's construction recipes), follow the
jobs and read their filter statistics (kept/total and why dropped) and per-item transcripts.

Kept items go to the annotation candidate pool (assign them on the command line or in the annotation
pages); they never enter a test set directly. Model-written text is shown with ``st.text``/``st.code``
(never rendered as markdown or HTML).
"""

from __future__ import annotations

from pages._ui import nav as navigation

navigation.ensure_navigation()  # first, before the imports below: see _nav.ensure_navigation

import json

import streamlit as st

from automonitor import views
from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import data as loaders
from pages._ui import generation_ui as gen_ui
from pages._ui import widgets as ui

PAGE = "generation"
NAV = Nav(title="Generation", icon=":material/auto_awesome:", order=80, access="workbench")
auth.workbench_page(
    NAV,
    "Counterfactual sycophancy filter and incentive-injected specification gaming "
    "(`automonitor generate`). Kept items become candidate pairs for double-blind annotation.",
)

from automonitor.runs.generation.engine import generation_items, list_generations  # noqa: E402

eng, url = loaders.engine(), loaders.db_url()
with st.expander("Launch a generation job", expanded=False, icon=":material/rocket_launch:"):
    gen_ui.launch_form(PAGE, eng, url)


gen_ui.live_progress(eng, "In progress")
rows = list_generations(eng)
st.subheader("Generation runs")
if not rows:
    st.caption("No generation runs yet.")
    st.stop()
st.caption(
    "Every generation run, newest first: the rows `automonitor generate list` prints (status, source, generator, "
    "kept and dropped items, start and end), then its filter statistics. Select a run for its filter steps and items."
)
df = views.generation_stats_frame(rows)
row = ui.picked_row(
    df,
    f"{PAGE}.table",
    column_config={
        # the table's columns under the words the CLI line uses, not the JSON keys
        "generation_id": st.column_config.TextColumn("generation run"),
        "kind": st.column_config.TextColumn("recipe"),
        "candidates_added": st.column_config.NumberColumn("pairs added"),
        "cue/incentive": st.column_config.TextColumn("cue / incentive"),
        "cache_hits": st.column_config.NumberColumn("cache hits"),
        "started_at": st.column_config.TextColumn("started"),
        "finished_at": st.column_config.TextColumn("finished"),
        "created_at": st.column_config.TextColumn("created"),
        "kept_rate": (
            st.column_config.NumberColumn("kept / prompts", format="percent")
            if views.is_numeric(df, "kept_rate")
            else st.column_config.TextColumn("kept / prompts")
        ),
        "cost_usd": st.column_config.NumberColumn("cost (USD)", format="$%.4f"),
        "dropped": st.column_config.NumberColumn("dropped", help="items dropped, all reasons together"),
    },
)
picked = df.iloc[row]["generation_id"] if row is not None else rows[0]["generation_id"]
sel = next(r for r in rows if r["generation_id"] == picked)
if sel["error"]:  # a run stopped by its generator (never reached, a bad key, a long Retry-After): why, and the fix
    # the line itself as plain text (st.code): its URL and command copy as they are (markdown escaping would put
    # invisible joiners into them)
    st.error(f"{ui.md(picked)} ended {ui.md(sel['status'])}; why, and the fix:")
    ui.code_block(sel["error"])  # (invisible characters a server put in it shown as markers)
st.subheader(f"Filter steps of {views.md_escape(picked)}")
steps = views.generation_steps_frame(sel)
st.dataframe(
    steps,
    hide_index=True,
    width="stretch",
    column_config={"kept / in": st.column_config.NumberColumn(format="percent")}
    if views.is_numeric(steps, "kept / in")
    else None,
)
st.subheader(f"Items of {views.md_escape(picked)}")
items = generation_items(eng, picked)
if not items:
    live = sel["status"] in gen_ui.ACTIVE
    st.caption("No items processed yet." if live else f"No item processed: the run ended {ui.md(sel['status'])} first.")
    st.stop()
only = st.radio("Show", ("all", "kept", "dropped"), horizontal=True, key=f"{PAGE}.show")
for i, it in enumerate(items):
    if (only == "kept" and not it["kept"]) or (only == "dropped" and it["kept"]):
        continue
    label = "kept" if it["kept"] else f"dropped: {views.md_escape(it['reason'])}"
    with st.expander(f"{views.md_escape(it['item_id'])} · {label}"):  # an expander label is markdown
        for role, msgs in it["prompts"].items():
            st.markdown(f"**prompt · {views.md_escape(role)}**")
            st.text(views.reveal_invisible("\n\n".join(f"[{m['role']}] {m['content']}" for m in msgs)))
        for role, out in it["outputs"].items():
            outs = out if isinstance(out, list) else [out]
            for k, o in enumerate(outs):
                st.markdown(
                    f"**answer · {views.md_escape(role)}{f' #{k}' if len(outs) > 1 else ''}** "
                    f"({views.md_escape(o.get('finish_reason'))}{', cached' if o.get('cached') else ''})"
                )
                shown = o.get("text") if o.get("text") is not None else f"(failed: {o.get('error')})"
                st.text(views.reveal_invisible(shown))  # model-written: invisible characters marked
        st.markdown("**filter / screen results**")
        st.code(json.dumps(it["details"], indent=1, default=str)[:20000], language="json")
