"""Drill-down: one run and slice -> confusion matrix; a cell -> its samples; a sample -> request,
response with the monitor's evidence highlighted (grounded vs ungrounded), gold label, the pair's other
side, raw answer, parsed verdict, score, category/severity; a second run side by side on the sample."""

from __future__ import annotations

from pages._ui import nav as navigation

navigation.ensure_navigation()  # first, before the imports below: see _nav.ensure_navigation

import streamlit as st

from automonitor import views, vocab
from sqlalchemy.exc import SQLAlchemyError

from automonitor.data.errata import add_erratum, conflict_warning, erratum_conflicts
from store.engine import describe_db_error
from automonitor.views.page_index import Nav
from pages._ui import auth
from pages._ui import data as loaders
from pages._ui import url_state
from pages._ui import widgets as ui
from pages._ui import spans_ui

PAGE = "drilldown"
NAV = Nav(title="Drill-down", icon=":material/zoom_in:", order=40, access="workbench")
auth.require_workbench()
ALL = "all"
NONE = ""
CELLS = ("tp", "fn", "fp", "tn", "unscored")

st.title("Drill-down")

url, ver = loaders.db_url(), loaders.version()
runs = loaders.load_runs(url, ver)
if runs.empty:
    ui.empty_store_notice("runs")
    st.stop()

run_ids = list(runs["run_id"])
run_records = runs.to_dict("records")
# the run selects are wide: the whole label in most stores, else the monitor name cut at its end (never in the
# middle); the whole label is the Run select's tooltip
run_label = {r["run_id"]: views.run_select_label(r) for r in run_records}
run_full = {r["run_id"]: views.run_full_label(r) for r in run_records}

link_run, link_warning = views.run_choice(url_state.qp("run"), run_ids)
if link_warning:
    st.warning(views.md_escape(link_warning))
run_key = url_state.seed_state(PAGE, "run", run_ids[0], valid=run_ids)
cat_key = url_state.seed_state(PAGE, "category", ALL, valid=[ALL, *vocab.CATEGORIES])
task_key = url_state.seed_state(PAGE, "task", ALL, valid=[ALL, *vocab.TASKS])
pol_key = url_state.seed_state(PAGE, "invalid", "exclude", valid=vocab.INVALID_POLICIES)
cmp_key = url_state.seed_state(PAGE, "cmp", NONE, valid=[NONE, *run_ids])

# two rows: at 1280 px one row of four cut the Category options ("Safety & Permission Violations")
c1, c4 = st.columns([6.0, 2.0], vertical_alignment="bottom")
c2, c3, _ = st.columns([2.8, 1.6, 3.6])
run_id = c1.selectbox(
    "Run",
    run_ids,
    key=run_key,
    format_func=run_label.get,
    help=views.md_escape(run_full.get(st.session_state.get(run_key), "")) or None,
)
cat, tsk = ui.slice_selects(c2, c3, cat_key, task_key, ALL)
invalid = c4.selectbox("Unscored outcomes", vocab.INVALID_POLICIES, key=pol_key)

# the selected cell and sample also live in the URL (no widget: set by the buttons / table below)
cell = url_state.qp("cell") if url_state.qp("cell") in CELLS else None
sample_id = url_state.qp("sample")
url_state.sync_qp(PAGE, run=run_id, category=cat, task=tsk, invalid=None if invalid == "exclude" else invalid)

report = loaders.load_report(url, ver, invalid)
entry = report.run(run_id)
sl = entry.slice(cat, tsk) if entry else None
sets = loaders.load_sample_sets(url, ver).set_index("run_id")
# under the selects, one line that wraps: the run's whole name when its select label is cut, its sample set
whole = views.run_select_note(next(r for r in run_records if r["run_id"] == run_id))
head = [f"Run {views.md_escape(whole)}"] if whole else []
if run_id in sets.index:
    head.append(views.md_escape(views.sample_set_caption(sets.loc[run_id])))
if head:
    st.caption(" · ".join(head))

# the run's samples whose log-probability score favours the other side than their verdict (the report's
# answers.score_disagrees): said under the matrix, a filter of a cell's samples below
flagged = loaders.load_score_disagreeing(url, ver, run_id)

# --- confusion matrix ------------------------------------------------------------------------------
st.subheader("Confusion matrix")
if not sl:
    st.info("This run has no predictions in this slice.")
else:
    m = st.columns(5)
    for col, name, rate, ci in (
        (m[0], "Miss rate (MR)", sl.mr, sl.mr_ci),
        (m[1], "False alarm rate (FAR)", sl.far, sl.far_ci),
    ):
        wilson = f"95% Wilson interval {ci[0]:.3f}–{ci[1]:.3f}" if ci else None
        col.metric(name, "–" if rate is None else f"{rate:.3f}", help=wilson)
    m[2].metric("Judged samples", f"{sl.n:,}")
    kinds = sl.unscored_by_kind.model_dump()
    m[3].metric("Unscored", f"{sl.unscored:,}", help=", ".join(f"{k} {v}" for k, v in kinds.items()) or None)
    m[4].metric("Pending", f"{sl.pending:,}")

    def _cell_button(col, name: str, label: str) -> None:
        count = getattr(sl, name)
        if col.button(
            f"{label}\n\n**{count:,}**",
            key=f"{PAGE}.cell_{name}",
            width="stretch",
            type="primary" if cell == name else "secondary",
            disabled=count == 0,
            help=views.CELL_TITLES[name],
        ):
            url_state.set_qp(cell=name, sample=None)
            st.rerun()

    grid = st.container(border=True)
    h0, h1, h2 = grid.columns([1.2, 2, 2])
    h1.markdown("**monitor: flagged** (misbehavior)")
    h2.markdown("**monitor: passed** (benign)")
    r1 = grid.columns([1.2, 2, 2], vertical_alignment="center")
    r1[0].markdown("**gold: misbehavior**")
    _cell_button(r1[1], "tp", "TP · caught")
    _cell_button(r1[2], "fn", "FN · missed")
    r2 = grid.columns([1.2, 2, 2], vertical_alignment="center")
    r2[0].markdown("**gold: benign**")
    _cell_button(r2[1], "fp", "FP · false alarm")
    _cell_button(r2[2], "tn", "TN · passed")
    r3 = grid.columns([1.2, 4], vertical_alignment="center")
    r3[0].markdown("**unscored**")
    _cell_button(r3[1], "unscored", "invalid / refusal / error")
    if flagged:
        grid.caption(
            f"{len(flagged):,} verdict(s) of this run have a log-probability score that favours the other side "
            "(report: answers.score_disagrees, controls included); tick *Score disagrees* under a cell to list "
            "that cell's: the controls' have no cell on this page (they are outside MR/FAR)."
        )
    if invalid != "exclude":
        grid.caption(
            f"Policy {invalid}: invalid and refusal outcomes are also counted as "
            f"{'flags' if invalid == 'as-flag' else 'passes'} in the cells above; an error "
            "(the judge never answered) is never a verdict."
        )

# --- samples of the selected cell ------------------------------------------------------------------
search = ""
if cell and sl:
    st.subheader(views.CELL_TITLES[cell])
    samples = loaders.load_cell(url, ver, run_id, cell, cat, tsk, invalid)
    if samples.empty:
        st.caption("No sample in this cell.")
    else:
        # "Disagrees with run" names runs: it gets the Run select's width in a row of its own, so its
        # options are not cut at 1280 px (a quarter-width column cut them)
        fc = st.columns([2, 2, 2, 1.4])
        dc = st.columns([6.0, 2.0])
        outs = [str(o) for o in sorted(samples["outcome"].dropna().unique())]
        others = [r for r in run_ids if r != run_id]
        # the filters and the search live in the URL too: a link opens the same view
        out_key = url_state.seed_state(PAGE, "outcome", [], valid=outs, multi=True)
        url_state.follow_options(out_key, outs)
        score_key = url_state.seed_state(
            PAGE, "score", [0.0, 1.0], multi=True, cast=lambda v: min(1.0, max(0.0, float(v)))
        )
        if not (isinstance(st.session_state[score_key], (list, tuple)) and len(st.session_state[score_key]) == 2):
            st.session_state[score_key] = [0.0, 1.0]
        st.session_state[score_key] = tuple(sorted(float(x) for x in st.session_state[score_key]))
        dis_key = url_state.seed_state(PAGE, "disagree", NONE, valid=[NONE, *others])
        if st.session_state.get(dis_key) not in [NONE, *others]:
            st.session_state[dis_key] = NONE
        q_key = url_state.seed_state(PAGE, "q", "")
        tier_key = url_state.seed_state(PAGE, "tier", [], valid=list(views.TIERS), multi=True)
        sdis_key = url_state.seed_state(
            PAGE, "score_disagrees", False, valid=[True], cast=lambda v: v.strip().lower() in ("true", "1")
        )
        chosen_out = fc[0].multiselect("Outcome", outs, key=out_key, placeholder="all outcomes")
        chosen_tier = fc[3].multiselect(
            "Tier",
            list(views.TIERS),
            key=tier_key,
            placeholder="all tiers",
            help="surface: some cheap detector of the build's ladder catches the pair; implicit: none does",
        )
        has_score = "score" in samples and samples["score"].notna().any()
        score_rng = fc[1].slider(
            "Score range",
            0.0,
            1.0,
            step=0.05,
            key=score_key,
            disabled=not has_score,
            help="P(misbehavior) of score-producing runs",
        )
        dis_run = dc[0].selectbox(
            "Disagrees with run",
            [NONE, *others],
            key=dis_key,
            format_func=lambda r: "(any)" if r == NONE else run_label.get(r, r),
        )
        search = fc[2].text_input("Search (highlighted)", key=q_key).strip()
        if not flagged:  # a filter only where the run has such a sample
            st.session_state[sdis_key] = False
        only_flagged = dc[1].checkbox(
            "Score disagrees",
            key=sdis_key,
            disabled=not flagged,
            help=f"only samples whose log-probability score favours the other side than their verdict: "
            f"{len(flagged):,} in this run, controls included (report: answers.score_disagrees)",
        )
        full_range = tuple(score_rng) == (0.0, 1.0)
        url_state.sync_qp(
            PAGE,
            outcome=list(chosen_out),
            score=None if full_range else [float(score_rng[0]), float(score_rng[1])],
            disagree=dis_run or None,
            q=search or None,
            tier=list(chosen_tier),
            score_disagrees=True if only_flagged else None,
        )
        only = views.disagreeing_samples(loaders.engine(), run_id, dis_run) if dis_run else None
        if only_flagged:
            only = set(flagged) if only is None else set(only) & set(flagged)
        if chosen_tier:
            _n, in_tier = views.search_samples(loaders.engine(), limit=None, with_text=False, tier=chosen_tier)
            only = set(in_tier["id"]) if only is None else set(only) & set(in_tier["id"])
        shown = views.filter_cell(
            samples, outcomes=chosen_out, score_range=score_rng if has_score else None, only=only, search=search
        )
        table = views.cell_table(shown)
        row = ui.picked_row(
            table,
            f"{PAGE}.cell_table.{run_id}.{cell}.{cat}.{tsk}",
            height=min(300, 38 + 35 * max(1, len(shown))),
            column_config={
                "request_preview": st.column_config.TextColumn("request", width="medium"),
                "response_preview": st.column_config.TextColumn("response", width="large"),
            }
            | ({"score": st.column_config.NumberColumn(format="%.3f")} if views.is_numeric(table, "score") else {}),
        )
        ids = list(shown["sample_id"])
        if row is not None and row < len(ids):
            picked = ids[row]
            if picked != st.session_state.get(f"{PAGE}.last_pick"):
                st.session_state[f"{PAGE}.last_pick"] = picked
                if picked != sample_id:
                    sample_id = picked
                    url_state.set_qp(sample=sample_id)
        nav = views.neighbours(ids, sample_id)
        n1, n2, n3 = st.columns([1, 3, 1], vertical_alignment="center")
        if n1.button("← Previous", key=f"{PAGE}.prev", shortcut="K", disabled=nav["prev"] is None, width="stretch"):
            url_state.set_qp(sample=nav["prev"])
            st.rerun()
        pos = "–" if nav["index"] is None else f"{nav['index'] + 1}"
        n2.caption(
            f"Sample {pos} of {len(ids):,} in this cell ({len(samples):,} before filters) · "
            "keys: **K** previous, **J** next · or select a row"
        )
        if n3.button("Next →", key=f"{PAGE}.next", shortcut="J", disabled=nav["next"] is None, width="stretch"):
            url_state.set_qp(sample=nav["next"])
            st.rerun()

# --- one sample ------------------------------------------------------------------------------------
if not sample_id:
    st.stop()
try:
    detail = views.sample_detail(loaders.engine(), sample_id)
except LookupError:
    st.warning("The sample in the link is not in the store.")
    st.stop()
s, other = detail["sample"], detail["other"]
st.divider()
md = views.md_escape
st.subheader(f"Sample {md(s['id'])}")
st.caption(
    f"pair {md(s['pair_id'])} · {md(vocab.CATEGORY_NAMES.get(s['category'], s['category']))} · "
    f"{md(vocab.TASK_NAMES.get(s['task'], s['task']))} · source {md(s['source'] or '–')} · "
    f"split {md(s['split'] or '–')} · label provenance {md(s.get('label_source') or '–')}"
    + (
        f" · tier {md(str(s['meta']['tier']))} (caught by: "
        f"{md(', '.join(s['meta'].get('caught_by') or []) or '–')}; false alarm by: "
        f"{md(', '.join(s['meta'].get('false_alarm_by') or []) or '–')})"
        if isinstance(s.get("meta"), dict) and s["meta"].get("tier")
        else ""
    )
)
ui.show_html(views.provenance_html(s.get("label_source"), views.sample_errata(s, loaders.engine())))

preds = views.sample_predictions(loaders.engine(), sample_id)
cmp_opts = [NONE, *[r for r in run_ids if r != run_id and r in preds]]
if st.session_state.get(cmp_key) not in cmp_opts:
    st.session_state[cmp_key] = NONE
cmp_run = st.selectbox(
    "Compare with another run on this sample",
    cmp_opts,
    key=cmp_key,
    format_func=lambda r: "(no comparison)" if r == NONE else run_label.get(r, r),
)
url_state.sync_qp(PAGE, cmp=cmp_run or None)

gold_color = "red" if s["label"] == "misbehavior" else "green"
st.markdown(f"Gold label: :{gold_color}-badge[{md(s['label'])}]")
shown_runs = [r for r in (run_id, cmp_run) if r]
shown = views.shown_responses(loaders.engine(), s, shown_runs)  # each run's response under its monitor view
grounded = {
    r: views.ground_evidence(s["response"], s["request"], (preds.get(r) or {}).get("evidence")) for r in shown_runs
}

st.markdown("**Request**")
req_spans = [g for r in shown_runs for g in grounded[r]]
ui.show_html(
    views.highlight_html(
        s["request"],
        req_spans,
        field="request",
        show_missing=False,
        max_height=240,
        css_class="am-text am-request",
        search=search or None,
    )
)

VERDICT = {
    "misbehavior": ("red", "flagged: misbehavior"),
    "benign": ("green", "passed: benign"),
    "invalid": ("orange", "invalid (unparseable)"),
    "refusal": ("orange", "refusal"),
    "error": ("gray", "error (API)"),
    None: ("gray", "pending"),
}

spans_ui.conversation(s)  # agent / multi-turn samples as numbered steps
ui.show_html(views.legend_html(search=bool(search)))
cols = st.columns(len(shown_runs))
for col, rid in zip(cols, shown_runs):
    with col:
        p = preds.get(rid)
        st.markdown(f"**{md(run_full.get(rid, rid))}**")  # a column header wraps: the whole label
        if p is None:
            st.caption("This run has no prediction on this sample.")
            ui.show_html(views.text_html(s["response"], max_height=420, css_class="am-text am-response"))
            continue
        color, text = VERDICT.get(p["outcome"], ("gray", str(p["outcome"])))
        correct = (p["outcome"] == s["label"]) if p["outcome"] in vocab.LABELS else None
        st.markdown(
            f"Verdict :{color}-badge[{md(text)}]"
            + ("" if correct is None else (" :green-badge[correct]" if correct else " :red-badge[wrong]"))
        )
        spans_ui.truncation_note(p)  # "response: steps 3-9 of 12 were cut before the monitor saw it"
        cat_name = vocab.CATEGORY_NAMES.get(p["pred_category"], p["pred_category"]) if p["pred_category"] else None
        st.table(
            {
                "score P(misbehavior)": [views.cell(p["score"], ".3f")],
                "category": [views.cell(cat_name)],
                "severity": [views.cell(p["severity"] or None)],
                "evidence spans": [len(grounded[rid])],
            }
        )
        if p.get("score_note"):  # meta.score_disagrees: the logprobs favour the other side than the verdict
            st.caption(f":orange-badge[score disagrees] {md(p['score_note'])}")
        if len(p.get("repeats") or []) > 1:  # run --repeat K: the K verdicts (repeat 0 is the run's)
            st.markdown(f"**{len(p['repeats'])} repeats**")
            st.table(
                {
                    "repeat": list(range(len(p["repeats"]))),
                    "verdict": [str(o) if o else "pending" for o in p["repeats"]],
                }
            )
        view, seen = shown.get(rid, ("full", s["response"]))
        if view == "full":
            st.markdown("**Response** (evidence highlighted)")
            ui.show_html(views.highlight_html(s["response"], grounded[rid], max_height=420, search=search or None))
        else:  # a monitor view (run --view): the response as the monitor saw it, then the whole stored one
            st.markdown(f"**Response as the monitor saw it** (view `{md(view)}`; evidence highlighted)")
            if seen is None:
                st.caption(f"This sample has no {md(view)} view.")
            else:
                in_view = views.ground_evidence(seen, s["request"], p.get("evidence"))
                ui.show_html(views.highlight_html(seen, in_view, max_height=420, search=search or None))
            with st.expander("The whole stored response", expanded=False):
                ui.show_html(views.highlight_html(s["response"], grounded[rid], max_height=420, search=search or None))
        spans_ui.gold_overlap(s, p, grounded[rid])  # gold spans vs the evidence
        if p.get("reason"):
            st.markdown("**Reason**")
            st.text(views.reveal_invisible(p["reason"]))  # the judge's words: invisible characters marked
        raw_note = p.get("raw_note")  # a raw answer cut on storing: how much is kept
        with st.expander(f"Raw monitor answer ({md(raw_note)})" if raw_note else "Raw monitor answer", expanded=False):
            if raw_note:
                st.caption(f"The stored answer is cut: {md(raw_note)}.")
            ui.code_block(p["raw"] or "(none)")

if other:
    mis, ben = (s, other) if s["label"] == "misbehavior" else (other, s)
    mode = views.diff_mode(s["task"])
    with st.expander(
        f"The pair as a diff ({'line' if mode == 'line' else 'word'} diff of the two responses)", expanded=True
    ):
        ui.show_html(views.pair_diff_html(mis["response"], ben["response"], mode))
    with st.expander(f"The other side of the pair (gold: {md(other['label'])})", expanded=False):
        ui.show_html(views.text_html(other["response"], max_height=320, css_class="am-text am-other"))
        for rid in shown_runs:
            po = views.sample_predictions(loaders.engine(), other["id"], [rid]).get(rid)
            if po:
                color, text = VERDICT.get(po["outcome"], ("gray", str(po["outcome"])))
                st.markdown(f"{md(run_full.get(rid, rid))}: :{color}-badge[{md(text)}]")
        st.page_link(
            navigation.PAGE_DRILLDOWN,
            label="Open the other side",
            icon=":material/swap_horiz:",
            query_params={"run": run_id, "sample": other["id"], **({"cmp": cmp_run} if cmp_run else {})},
        )
else:
    st.caption("The other side of this pair is not in the store.")

# --- report this label (an erratum: the next build takes the pair out of verified) ------------------
ERRATUM_FLASH = f"{PAGE}.erratum_flash"
ERRATUM_CONFLICT = f"{PAGE}.erratum_conflict"
flash = st.session_state.pop(ERRATUM_FLASH, None)
conflict = st.session_state.pop(ERRATUM_CONFLICT, None)
with st.expander("Report this label", expanded=bool(flash)):
    if flash:
        st.success(flash)
    if conflict:
        st.warning(conflict)
    st.caption(
        "Judged this pair's label wrong or doubtful? The erratum is recorded in the store (who, when); "
        "the next `automonitor build` moves the pair out of verified (`automonitor errata export FILE` "
        "writes the errata for review)."
    )
    verdict = st.radio("Verdict", ["wrong", "doubtful"], horizontal=True, key="drilldown.erratum_verdict")
    reason = st.text_area("Reason", key="drilldown.erratum_reason", max_chars=2000, help="at most 4 KB")
    acct = auth.current_account()
    reader = st.text_input("Reader", value=getattr(acct, "name", "") or "", key="drilldown.erratum_reader")
    if st.button("Report this label", key="drilldown.erratum_submit", disabled=not (reason or "").strip()):
        try:
            e = add_erratum(
                loaders.engine(),
                s["pair_id"],
                verdict,
                reason,
                reader or "anonymous",
                origin="app",
                entered_by=getattr(acct, "name", None),
            )
        except ValueError as exc:  # InputError: a field is invalid
            st.error(md(str(exc)))
        except SQLAlchemyError as exc:  # e.g. a read-only store: one line, never a traceback
            st.error(md(describe_db_error(exc)))
        else:  # rerun so the sample's badges above show the new erratum at once
            st.session_state[ERRATUM_FLASH] = (
                f"Erratum recorded for pair {md(e.pair_id)} ({md(e.verdict)}); its badge is shown above; rebuild "
                "to apply it."
            )
            try:  # another reader's differing verdict on the pair: shown, never silent
                others, in_force = erratum_conflicts(loaders.engine(), e)
            except SQLAlchemyError:
                others, in_force = [], e
            if others:
                st.session_state[ERRATUM_CONFLICT] = md(conflict_warning(e, others, in_force))
            st.rerun()
