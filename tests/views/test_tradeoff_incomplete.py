"""Cancelled / unfinished runs and derived runs that repeat an input on the trade-off:
flagged, named in label, hover and legend, and off the Pareto front unless included."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd

from automonitor import views
from automonitor.analysis.derive import derive_ensemble
from automonitor.runs.coverage import PARTIAL_NOT_ELIGIBLE
from automonitor.runs.prediction_files import import_predictions
from automonitor.views.honest_points import hollow_reasons
from store import session_scope
from store.queries.samples import insert_samples

from helpers import candidate_row


def _points():
    return pd.DataFrame(
        [
            {
                "run_id": "good",
                "monitor": "openai:gpt-x",
                "template": "direct",
                "mr": 0.3,
                "far": 0.3,
                "tp": 70,
                "fn": 30,
                "fp": 30,
                "tn": 70,
            },
            {
                "run_id": "stopped",
                "monitor": "openai:gpt-y",
                "template": "direct",
                "mr": 0.1,
                "far": 0.1,
                "tp": 90,
                "fn": 10,
                "fp": 10,
                "tn": 90,
            },
            {
                "run_id": "copy",
                "monitor": "cascade x",
                "template": "direct",
                "mr": 0.05,
                "far": 0.05,
                "tp": 95,
                "fn": 5,
                "fp": 5,
                "tn": 95,
            },
        ]
    )


def test_cancelled_runs_are_named_drawn_apart_and_off_the_front_unless_included():
    st = {"good": "finished", "stopped": "cancelled", "copy": "finished"}
    p = views.honest_points(_points(), min_n=10, statuses=st, duplicates={"copy": "good"})
    assert list(p["run_id"]) == ["good", "stopped"]  # the copy of an input is not drawn by default
    row = p.set_index("run_id").loc["stopped"]
    assert bool(row["incomplete"]) and row["status_text"] == "cancelled" and "(cancelled)" in row["label"]
    assert list(p.loc[p["on_front"], "run_id"]) == ["good"]  # better, but cancelled: off the front
    fig = views.tradeoff_figure(p)
    names = [t.name for t in fig.data]
    assert "runs: cancelled / unfinished (not on the front)" in names
    tr = next(t for t in fig.data if t.name.startswith("runs: cancelled"))
    assert "cancelled" in tr.customdata[0][13] and "%{customdata[13]}" in tr.hovertemplate
    assert all("stopped" not in [c[0] for c in (t.customdata or [])] for t in fig.data if t is not tr)
    inc = views.honest_points(_points(), min_n=10, statuses=st, include_incomplete=True, duplicates={"copy": "good"})
    assert list(inc.loc[inc["on_front"], "run_id"]) == ["stopped"]  # included on request
    shown = views.honest_points(_points(), min_n=10, statuses=st, duplicates={"copy": "good"}, show_duplicates=True)
    c = shown.set_index("run_id").loc["copy"]
    assert c["duplicate_of"] == "good" and not c["eligible"] and "(= input)" in c["label"]


def test_identical_derived_finds_an_ensemble_equal_to_an_input(engine, tmp_path):
    rows = []
    for p in range(4):
        for lab in ("misbehavior", "benign"):
            rows.append(
                candidate_row(
                    id=f"d{p}{lab[0]}",
                    pair_id=f"d{p}",
                    category="sycophancy_bias",
                    task="qa",
                    label=lab,
                    request=f"r{p}",
                    response=f"{lab}{p}",
                    status="gold",
                    split="test",
                )
            )
    with session_scope(engine) as s:
        insert_samples(s, rows)
    ids = {}
    for name, flag in (("judge-a", lambda r: r["label"]), ("judge-b", lambda r: "benign")):
        f = tmp_path / f"{name}.jsonl"
        f.write_text("\n".join(json.dumps({"sample_id": r["id"], "outcome": flag(r)}) for r in rows) + "\n")
        ids[name] = import_predictions(engine, f, name)["run_id"]
    same = derive_ensemble(engine, [ids["judge-a"], ids["judge-b"]], rule="or")["run_id"]  # b never flags
    other = derive_ensemble(engine, [ids["judge-a"], ids["judge-b"]], rule="and")["run_id"]  # all benign = b
    dup = views.identical_derived(engine)
    assert dup == {same: ids["judge-a"], other: ids["judge-b"]}

    # the Trade-off page's selection (core, one options object): the copies are hidden and named, or drawn
    from automonitor import analysis

    report = analysis.report(engine, None, n_boot=10, with_grounding=False)
    sets = views.run_sample_sets(engine)
    opts = views.TradeoffOptions(templates=tuple(sorted({e.template for e in report.runs})), min_n=1)
    shown = views.tradeoff_selection(report, opts, sample_sets=sets, duplicates=dup)
    assert set(shown.points["run_id"]) == set(ids.values())
    assert set(shown.hidden["run_id"]) == {same, other} and shown.reported is None
    assert set(shown.front) <= set(ids.values())
    every = views.tradeoff_selection(report, replace(opts, show_duplicates=True), sample_sets=sets, duplicates=dup)
    assert set(every.points["run_id"]) == {*ids.values(), same, other} and every.hidden.empty
    assert views.tradeoff_selection(report, replace(opts, edition="nope"), sample_sets=sets).points.empty
    assert views.tradeoff_selection(report, replace(opts, templates=()), sample_sets=sets).points.empty


def test_hidden_identical_derived_runs_are_named_in_an_escaped_caption():
    from automonitor.escaping import md_escape

    every = views.honest_points(_points(), min_n=10, duplicates={"copy": "good"}, show_duplicates=True)
    names = {"copy": "cascade <b>x</b> [y](javascript:z) · direct · copy", "good": "openai:gpt-x · direct · good"}
    text = views.hidden_duplicates_caption(every, names)
    assert text == (
        f"1 derived run hidden: {md_escape(names['copy'])} gives the same verdicts as {md_escape(names['good'])}; "
        f"turn on *{md_escape(views.SHOW_DUPLICATES_LABEL)}* (Options) to draw it."
    )
    assert "<b>" not in text and "](" not in text  # user text is escaped markdown
    assert views.SHOW_DUPLICATES_LABEL == "Show derived runs identical to an input"  # the toggle's label
    # without names: the run ids; nothing hidden: no caption
    assert "copy gives the same verdicts as good" in views.hidden_duplicates_caption(every)
    assert views.hidden_duplicates_caption(views.honest_points(_points(), min_n=10, show_duplicates=True)) is None
    assert views.hidden_duplicates_caption(pd.DataFrame()) is None
    # several: the first ones named, then a count
    many = pd.DataFrame({"run_id": [f"d{i}" for i in range(5)], "duplicate_of": ["good"] * 4 + [""]})
    text = views.hidden_duplicates_caption(many, limit=2)
    assert text.startswith("4 derived runs hidden: d0 gives") and "; and 2 more;" in text and text.endswith("them.")


def test_the_legend_and_hover_of_cancelled_runs_follow_whether_they_may_enter_the_front():
    """With "Cancelled / unfinished runs may enter the front" on, the grey crosses no longer say
    "(not on the front)": legend and hover say they are included on request."""
    st = {"good": "finished", "stopped": "cancelled", "copy": "finished"}
    for included in (False, True):
        p = views.honest_points(_points(), min_n=10, statuses=st, include_incomplete=included)
        fig = views.tradeoff_figure(p, include_incomplete=included)
        (tr,) = [t for t in fig.data if t.name.startswith("runs: cancelled")]
        if included:
            assert tr.name == "runs: cancelled / unfinished (may enter the front)"
            assert "included in the Pareto front on request" in tr.hovertemplate
            assert "not on the front" not in tr.name + tr.hovertemplate
        else:
            assert tr.name == "runs: cancelled / unfinished (not on the front)"
            assert "not on the front unless included" in tr.hovertemplate


def test_run_hovers_promise_a_click_only_where_a_click_opens_the_drill_down():
    """The app's plane says "click to drill down" on every run (done, cancelled); the static HTML report's
    plane, where a click opens nothing, says nothing there (an empty ``<extra>`` box)."""
    st = {"good": "finished", "stopped": "cancelled", "copy": "finished"}
    p = views.honest_points(_points(), min_n=10, statuses=st)
    app = views.tradeoff_figure(p)
    static = views.tradeoff_figure(p, hover_action="")
    runs = [t for t in app.data if t.name.startswith("runs:")]
    assert len(runs) >= 2 and all("<extra>click to drill down</extra>" in t.hovertemplate for t in runs)
    for t in static.data:
        assert "click" not in (t.hovertemplate or "")
    assert any("<extra></extra>" in (t.hovertemplate or "") for t in static.data if t.name.startswith("runs:"))


def test_the_hollow_runs_sentence_counts_runs_and_samples_in_good_english():
    assert views.small_runs_note(0, 1) == (
        "Every run shown has at least 1 judged sample in this slice (runs with fewer are drawn hollow, off the front)."
    )
    assert (
        views.small_runs_note(1, 10)
        == "Hollow: 1 run has fewer than 10 judged samples in this slice, so not on the front."
    )
    assert views.small_runs_note(3, 1).startswith("Hollow: 3 runs have fewer than 1 judged sample in")


def test_the_hollow_sentence_gives_each_hollow_run_its_reason():
    """trial48 item F: the Trade-off caption said "Hollow: 2 runs have fewer than 100 judged samples" when one
    of the two was a partial import with exactly 100 judged. Each hollow run is now counted under its own
    reason (partial import, unfinished or cancelled, a derived copy of an input, too few), as the text
    report's hollow line does."""
    base = _points()  # good: 200 judged, stopped: 200, copy: 200
    small = {**base.iloc[0].to_dict(), "run_id": "small", "tp": 20, "fn": 10, "fp": 10, "tn": 20}  # 60 judged
    part = {**base.iloc[0].to_dict(), "run_id": "part", "tp": 25, "fn": 25, "fp": 25, "tn": 25}  # exactly 100
    pts = pd.concat([base, pd.DataFrame([small, part])], ignore_index=True)
    pts["not_eligible"] = [PARTIAL_NOT_ELIGIBLE if r == "part" else "" for r in pts["run_id"]]
    st = {"good": "finished", "stopped": "failed", "copy": "finished", "small": "finished", "part": "finished"}
    p = views.honest_points(pts, min_n=100, statuses=st, duplicates={"copy": "good"}, show_duplicates=True)
    assert p.set_index("run_id").loc["part", "judged"] == 100
    why = dict(zip(p["run_id"], hollow_reasons(p, 100)))
    assert why == {
        "good": "",
        "stopped": "unfinished",
        "copy": "identical to an input",
        "small": "too few",
        "part": "partial import",
    }
    assert views.hollow_runs_note(p, 100) == (
        "Hollow: 1 run has fewer than 100 judged samples in this slice; 1 run is a partial import (part of the test "
        "set: not comparable); 1 run is unfinished or cancelled; 1 derived run repeats an input's verdicts, so not "
        "on the front."
    )
    # only the partial import hollow: no word of too few samples
    only = views.honest_points(pts[pts["run_id"].isin(["good", "part"])], min_n=100)
    assert views.hollow_runs_note(only, 100) == (
        "Hollow: 1 run is a partial import (part of the test set: not comparable), so not on the front."
    )
    two = views.honest_points(pts[pts["run_id"].isin(["good", "part", "small"])], min_n=100)
    assert "2 runs have fewer" not in views.hollow_runs_note(two, 100)
    assert views.hollow_runs_note(views.honest_points(base, min_n=100), 100) == views.small_runs_note(0, 100)


def test_partial_names_only_a_partial_import_in_code_and_docs():
    """ "partial" named both a running or cancelled run ("partial (running)", legend "cancelled / partial") and a
    partial predictions import ("partial: N of M test samples", legend "partial import") (trial 47): the first
    is "unfinished" on the plane, in the reports and on the pages, and no code, page or document (the
    changelog's history aside) still says "partial" for it."""
    import importlib
    import re
    from pathlib import Path

    words = importlib.import_module("automonitor.views.honest_points").INCOMPLETE_STATUSES  # the module, not views'
    assert all("partial" not in word for word in words.values())  # function of the same name
    assert all("partial" not in name for name in views.figures.INCOMPLETE_LEGEND.values())
    old = re.compile(
        r"partial \((?:running|failed|pending)\)|cancelled\s*/\s*partial|cancelled,? or partial|or partial: failed",
        re.IGNORECASE,
    )
    repo = Path(__file__).resolve().parents[2]
    files = [repo / "README.md", repo / "app.py"]
    for folder, ext in (("automonitor", "py"), ("pages", "py"), ("docs", "md")):
        files += sorted((repo / folder).rglob(f"*.{ext}"))
    hits = [
        f"{p.relative_to(repo)}:{i}: {line.strip()}"
        for p in files
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if old.search(line)
    ]
    assert hits == []


def test_an_unfinished_runs_label_closes_its_parentheses_once():
    """A running, failed or pending run's label read "x (direct) (unfinished (running))" on the plane: two
    parentheses closed at once (trial60). Each status word is one parenthesis."""
    for status in ("running", "failed", "pending"):
        st = {"good": "finished", "stopped": status, "copy": "finished"}
        p = views.honest_points(_points(), min_n=10, statuses=st, duplicates={"copy": "good"})
        label = p.set_index("run_id").loc["stopped", "label"]
        assert f"(unfinished: {status})" in label and "))" not in label, label
        assert label.count("(") == label.count(")")
