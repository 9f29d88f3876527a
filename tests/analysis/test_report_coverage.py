"""A predictions file that covers part of the test set is a *partial* run, said and marked as such:
``predictions import`` says how many of the paper edition's test samples and of the controls the file covers
(stderr, and ``coverage`` in ``--json``) with a warning when not all; ``report --json`` gives every run a
``coverage`` object, and the partial imported run gets the mark ``partial: N of M test samples`` wherever the
report and the plane show marks (``answers.marks``, text and markdown reports, HTML report, the plane's labels).
A run over a view, a ``--limit`` run and a full run are not marked (both databases). Fresh-user trial 45:
``head -100 predictions.jsonl`` was reported and drawn as a monitor over the whole test set of 2,966 samples."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor import analysis
from automonitor.analysis import report_format
from automonitor.runs import runner
import pytest

from automonitor.runs.coverage import coverage_mark, coverage_warning, ids_coverage, run_coverage
from automonitor.views import honest_points, report_html, tradeoff_points
from helpers import add_control_sample, run_cli_in_process
from servers.views_data import add_view_samples, echo_backend

PARTIAL_MARK = "partial: 5 of 20 test samples"


def _write(path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _import(url: str, file: str, monitor: str, *extra: str):
    r = run_cli_in_process(["predictions", "import", file, "--monitor", monitor, *extra], db=url)
    assert r.returncode == 0, r.stderr
    return r


def _store(engine):
    """20 test samples (10 pairs with views), one control; runs of the echo monitor over the whole set
    (``full``), over the reasoning view and a ``--limit 6`` subset; its verdicts as rows of a predictions file."""
    rows = add_view_samples(engine)
    add_control_sample(engine)
    ids = {}
    with echo_backend():
        ids["full"] = runner.create_run(engine, "view-echo-test", "direct")
        ids["reasoning"] = runner.create_run(engine, "view-echo-test", "direct", view="reasoning")
        ids["limit"] = runner.create_run(engine, "view-echo-test", "direct", limit=6)
        for rid in ids.values():
            runner.execute_run(engine, rid)
    verdicts = analysis.predictions_frame(engine, [ids["full"]])
    lines: dict[bool, list[dict]] = {True: [], False: []}  # is a control -> the lines
    for sid, pair, out in zip(verdicts["sample_id"], verdicts["pair_id"], verdicts["outcome"]):
        lines[pair.startswith("controls:")].append({"sample_id": sid, "outcome": out})
    assert len(rows) == len(lines[False]) == 20 and len(lines[True]) == 1  # the test set and the control
    return ids, lines[False], lines[True]


def test_a_partial_import_is_said_and_marked_and_no_other_run_is(engine, tmp_path):
    url = engine.url.render_as_string(hide_password=False)
    ids, test_lines, control = _store(engine)
    # the whole file (test set and control): no warning, the coverage said on stderr
    whole = _import(url, _write(tmp_path / "whole.jsonl", test_lines + control), "Whole")
    said = whole.stderr.splitlines()
    assert said[1:] == ["the file covers 20 of the 20 test samples of the paper edition and 1 of the 1 controls"]
    # head -5: a warning on stderr, and coverage in --json (stdout is the JSON document only)
    head = _write(tmp_path / "head.jsonl", test_lines[:5])
    r = _import(url, head, "Head", "--json")
    doc = json.loads(r.stdout)
    assert doc["coverage"] == {
        "edition": "paper",
        "members": 20,
        "covered": 5,
        "share": 0.25,
        "controls": 0,
        "controls_members": 1,
        "partial": True,
    }
    assert r.stderr.startswith("warning: the file covers 5 of the 20 test samples of the paper edition and 0 of")
    assert f"run {doc['run_id']} is marked partial" in r.stderr and "on those 5 test samples only" in r.stderr
    part = doc["run_id"]
    again = _import(url, head, "Head")  # the same file again: the same run, said the same way
    assert again.stdout.strip() == part and "warning: the file covers 5 of the 20" in again.stderr
    # a file of every test sample but no control is whole: the controls are a slice of their own
    no_ctl = json.loads(_import(url, _write(tmp_path / "t.jsonl", test_lines), "NoCtl", "--json").stdout)
    assert no_ctl["coverage"]["partial"] is False and no_ctl["coverage"]["controls"] == 0

    rep = analysis.report(engine, n_boot=20)
    by_id = {r.run_id: r for r in rep.runs}
    whole_id = next(r.run_id for r in rep.runs if r.monitor == "Whole")
    cov = {rid: (r.coverage.covered, r.coverage.members, r.coverage.partial) for rid, r in by_id.items()}
    assert cov[part] == (5, 20, True)
    assert cov[whole_id] == cov[no_ctl["run_id"]] == cov[ids["full"]] == (20, 20, False)
    assert cov[ids["limit"]] == (6, 20, False)  # a stratified subset by design: not marked
    reasoning = cov[ids["reasoning"]]  # the samples having the view (xstest has none): not marked
    assert reasoning == (14, 20, False)
    assert by_id[part].answers.marks == [PARTIAL_MARK]
    for rid in (whole_id, no_ctl["run_id"], *ids.values()):
        assert not any("partial" in m for m in by_id[rid].answers.marks), rid
    # report --json: a coverage object per run, the mark in answers.marks
    out = run_cli_in_process(["report", "--json", "--n-boot", "20"], db=url)
    runs = {r["run_id"]: r for r in json.loads(out.stdout)["runs"]}
    assert runs[part]["coverage"]["partial"] is True and runs[part]["answers"]["marks"] == [PARTIAL_MARK]
    assert runs[ids["limit"]]["coverage"] == {
        "edition": "paper",
        "members": 20,
        "covered": 6,
        "share": 0.3,
        "controls": 1,
        "controls_members": 1,
        "partial": False,
    }
    # the text report: the mark beside the run in the runs table and a line saying what it covers
    text = run_cli_in_process(["report", "--n-boot", "20"], db=url).stdout
    assert f"run {part} (Head) is partial: the imported file covers 5 of the 20 test samples" in text
    assert text.count("is partial") == 1 and text.count(f"[{PARTIAL_MARK}]") == 1
    row = next(line for line in text.splitlines() if part in line and "│" in line)
    assert f"[{PARTIAL_MARK}]" in row
    # markdown: the mark after the monitor, the line under the table
    md = report_format.render(rep, "markdown").replace("\\", "")
    assert f"| Head [{PARTIAL_MARK}] |" in md and "(Head) is partial" in md and md.count("partial") == 2
    # the plane (Trade-off page, HTML plane) labels the point; the view run keeps its view suffix only
    pts = honest_points(tradeoff_points(rep), min_n=1)
    labels = dict(zip(pts["run_id"], pts["label"]))
    assert labels[part].endswith(f"[{PARTIAL_MARK}]")
    assert labels[ids["reasoning"]].endswith("[reasoning]")
    assert not any("partial" in labels[rid] for rid in labels if rid != part)
    html = report_html.build(engine, rep)
    assert html.count(PARTIAL_MARK) >= 1 and f"[{PARTIAL_MARK}]" in html


ids_st = st.sets(st.text("abcdef", min_size=1, max_size=3), max_size=12)


@settings(max_examples=200, deadline=None)
@given(members=ids_st, controls=ids_st, judged=st.lists(st.text("abcdefg", min_size=1, max_size=3), max_size=30))
def test_coverage_counts_and_marks_only_an_imported_part(members, controls, judged):
    """Whatever ids a file holds (repeats, unknown ids, controls): covered counts the edition's members it
    holds, the share is in [0, 1], and only an imported run short of the members is partial and marked."""
    for imported in (True, False):
        cov = ids_coverage("paper", members, judged, controls, imported=imported)
        assert cov["covered"] == len(members & set(judged)) <= cov["members"] == len(members)
        assert cov["controls"] == len(controls & set(judged)) <= cov["controls_members"]
        assert cov["share"] is None if not members else 0 <= cov["share"] <= 1
        assert cov["partial"] == (imported and cov["covered"] < len(members))
        assert bool(coverage_mark(cov)) == cov["partial"] == (coverage_warning(cov, "imp-1") is not None)


@given(counts=st.tuples(*[st.integers(-3, 6)] * 4))
def test_coverage_counts_out_of_range_are_refused(counts):
    members, covered, controls_members, controls = counts
    if 0 <= covered <= members and 0 <= controls <= controls_members:
        assert run_coverage("paper", *counts, imported=True)["covered"] == covered
    else:
        with pytest.raises(ValueError, match="coverage counts out of range"):
            run_coverage("paper", *counts, imported=True)


def test_a_partial_import_is_not_eligible_on_the_plane_or_in_the_json(engine, tmp_path):
    """A partial imported run with enough judged samples is still not comparable (an imported part is not
    stratified, unlike a ``--limit`` run): off the JSON ``pareto`` and out of ``pearson_r``, drawn hollow and off
    the front on the plane (Trade-off page and HTML report, the same ``honest_points``), the reason in its hover
    and in the text report's line. Its five verdicts are all right (MR = FAR = 0): without the rule it would be
    the whole front."""
    from automonitor.runs.coverage import PARTIAL_NOT_ELIGIBLE
    from automonitor.views import tradeoff_figure

    url = engine.url.render_as_string(hide_password=False)
    ids, test_lines, _control = _store(engine)
    _import(url, _write(tmp_path / "whole.jsonl", test_lines), "Whole")
    gold = analysis.predictions_frame(engine, [ids["full"]])
    right = [  # the right verdict on each test sample (the controls left out)
        {"sample_id": s, "outcome": lab}
        for s, lab, pair in zip(gold["sample_id"], gold["label"], gold["pair_id"])
        if not pair.startswith("controls:")
    ]
    head = right[:5]
    assert {r["outcome"] for r in head} == {"misbehavior", "benign"}
    part = json.loads(_import(url, _write(tmp_path / "head.jsonl", head), "Head", "--json").stdout)["run_id"]

    doc = json.loads(run_cli_in_process(["report", "--json", "--n-boot", "20"], db=url).stdout)
    runs = {r["run_id"]: r for r in doc["runs"]}
    assert runs[part]["coverage"]["partial"] and runs[part]["overall"]["mr"] == runs[part]["overall"]["far"] == 0
    assert part not in doc["pareto"] and not runs[part]["on_front"] and doc["pareto"]
    # the text report's hollow line gives each hollow run its own reason (every run here judges < 100 samples)
    text = run_cli_in_process(["report", "--n-boot", "20"], db=url).stdout
    hollow = next(line for line in text.splitlines() if line.startswith("hollow:"))
    assert f"{len(runs) - 1} run(s) unfinished or with fewer than 100 judged samples" in hollow
    assert "1 partial import(s) (off the JSON report's front too)" in hollow
    rated = [r for r in doc["runs"] if r["overall"]["mr"] is not None and r["overall"]["far"] is not None]
    assert doc["pearson_n"] == len(rated) - 1
    rep = analysis.report(engine, n_boot=20)
    # the plane: with a minimum of 1 every other run is solid, the partial run hollow with its reason
    pts = honest_points(tradeoff_points(rep), min_n=1).set_index("run_id")
    assert not pts.loc[part, "eligible"] and not pts.loc[part, "on_front"]
    assert pts.loc[part, "not_eligible"] == PARTIAL_NOT_ELIGIBLE
    others = pts.drop(index=part)
    assert others["eligible"].all() and (others["not_eligible"] == "").all()
    assert sorted(pts.index[pts["on_front"]]) == sorted(doc["pareto"])  # the plane and the JSON agree
    fig = tradeoff_figure(pts.reset_index())
    hollow = [t for t in fig.data if str(t.name).endswith("(partial import)")]
    said = {c[0]: c[13] for t in hollow for c in t.customdata}
    assert said == {part: PARTIAL_NOT_ELIGIBLE} and "customdata[13]" in hollow[0].hovertemplate
    # under the default minimum (100) the small runs say so and the partial run keeps its own reason
    small = honest_points(tradeoff_points(rep)).set_index("run_id")
    assert small.loc[part, "not_eligible"] == PARTIAL_NOT_ELIGIBLE
    assert (small.drop(index=part)["not_eligible"] == "too few judged samples: not on the front").all()
    # the HTML report's plane is the same honest_points; its page carries the reason
    assert "not stratified" in report_html.build(engine, rep)
    text = run_cli_in_process(["report", "--n-boot", "20"], db=url).stdout
    line = next(x for x in text.splitlines() if f"run {part} (Head) is partial" in x)
    assert PARTIAL_NOT_ELIGIBLE in line
