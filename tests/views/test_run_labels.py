"""Run labels that fit: dropdown options and plot labels were cut off at 1280 px."""

from __future__ import annotations

import pandas as pd

from automonitor import views

RID = "run_20261208_101010_abc123"


def test_short_run_labels_fit_and_keep_monitor_id_and_an_unusual_status():
    plain = {"run_id": RID, "monitor": "llamacpp:gemma3-270m", "template": "direct", "status": "finished"}
    assert views.run_option_label(plain) == "llamacpp:gemma3-270m · …_101010_abc123"  # no room for the template
    assert views.run_option_label(plain, max_len=48) == "llamacpp:gemma3-270m · direct · …_101010_abc123"
    short = {"run_id": "imp-0123456789abcdef", "monitor": "pilot-judge", "template": "direct", "status": "imported"}
    assert views.run_option_label(short) == "pilot-judge · direct · imp-0123456789abcdef"  # fits whole
    long = {
        "run_id": RID,
        "monitor": "openai:gpt-4o-mini-2024-07-18",
        "template": "evidence-fewshot",
        "status": "cancelled",
    }
    lab = views.run_option_label(long)
    assert len(lab) <= views.run_labels.RUN_LABEL_MAX == 44
    assert lab == "openai:gpt…-2024-07-18 · …abc123 (cancelled)"  # monitor cut in the middle, status whole
    probe = {"run_id": "r1", "monitor": "probe:/very/long/path/to/artefacts/tfidf-lr.joblib", "template": "direct"}
    assert views.run_option_label(probe) == "probe:tfidf-lr.joblib · direct · r1"  # the path's file name
    huge = {"run_id": "x" * 300, "monitor": "m" * 300, "template": "t" * 300, "status": "failed"}
    assert len(views.run_option_label(huge)) <= 44 and views.run_option_label(huge).endswith("x (failed)")
    # two runs of one monitor stay apart; a pandas row works like a dict; missing fields do not crash
    other = dict(plain, run_id="run_20261208_101011_ffee00")
    assert views.run_option_label(other) != views.run_option_label(plain)
    assert views.run_option_label(pd.DataFrame([plain]).iloc[0]) == views.run_option_label(plain)
    assert views.run_option_label({"run_id": "r", "monitor": None, "template": float("nan")}) == "? · r"
    assert views.run_option_label(plain, max_len=32) == "llamacpp:gemma3-270m · …abc123"  # the id's end only


def test_full_run_label_has_everything_for_hovers():
    long = {
        "run_id": RID,
        "monitor": "openai:gpt-4o-mini-2024-07-18",
        "template": "evidence-fewshot",
        "status": "cancelled",
    }
    assert views.run_full_label(long) == f"openai:gpt-4o-mini-2024-07-18 · evidence-fewshot · {RID} (cancelled)"
    assert views.run_full_label({"run_id": "r", "monitor": "m"}) == "m · r"


def test_roc_legend_uses_the_short_label_and_the_hover_the_full_one_escaped():
    curve = pd.DataFrame({"fpr": [0, 0.2, 1], "tpr": [0, 0.7, 1]})
    full = "judge <b>x</b> 100% · direct · " + RID
    fig = views.roc_figure({"judge · …abc123": curve}, full_labels={"judge · …abc123": full})
    assert fig.data[1].name == "judge · …abc123"
    hover = fig.data[1].hovertemplate
    assert "judge &lt;b&gt;x&lt;/b&gt; 100&#37; · direct · " + RID in hover and "<b>x" not in hover


def test_only_a_file_path_is_reduced_to_its_file_name():
    """A name is shortened to its file name only when it names a file; a model id, a URL or a name with
    spaces or markup keeps its text (a hostile name ``... https://evil.example`` once showed as
    ``evil.example``)."""
    assert views.run_labels.short_monitor("probe:/a/b/model.joblib") == "probe:model.joblib"
    assert views.run_labels.short_monitor("/a/b/x.pt") == "x.pt"
    assert views.run_labels.short_monitor("lora:runs/adapter.safetensors") == "lora:adapter.safetensors"
    assert views.run_labels.short_monitor("probe:./artefacts/") == "probe:artefacts"
    for keep in (
        "openai:meta-llama/Llama-3-8B",
        "https://evil.example/a.b",
        "<b>x</b> [link](http://example.com) **bold** https://evil.example",
        "judge a/b.txt",
        "rules",
    ):
        assert views.run_labels.short_monitor(keep) == keep, keep
    hostile = {"run_id": "rhost", "monitor": "<b>x</b> [link](http://example.com) **bold** https://evil.example"}
    lab = views.run_option_label(hostile)
    assert lab.startswith("<b>x</b> [link]") and lab.endswith("evil.example · rhost") and len(lab) <= 44


def test_the_active_runs_line_names_three_runs_escaped_and_counts_the_rest():
    runs = [
        {"run_id": f"r{i}", "monitor": "openai:<b>m</b>", "template": "direct", "status": "running"} for i in range(5)
    ]
    line = views.active_runs_line(runs)
    assert line.startswith("**5 runs in progress:** ") and line.count("\\(running\\)") == 3
    assert "+2 more" in line and "<b>" not in line and "\\<b\\>" in line
    assert views.active_runs_line(runs[:1]).startswith("**1 run in progress:** ")
    assert views.active_runs_line([]) == ""


def test_the_template_independent_backends_written_out_are_the_registry_s():
    """The labels' static table (no backend import) against the backends' own ``template_independent``."""
    from automonitor.runs.monitors import REGISTRY
    from automonitor.views.honest_points import TEMPLATE_INDEPENDENT_BACKENDS, short_label

    assert TEMPLATE_INDEPENDENT_BACKENDS == {
        n for n, c in REGISTRY.items() if getattr(c, "template_independent", False)
    }
    assert TEMPLATE_INDEPENDENT_BACKENDS  # rules reads no prompt
    assert short_label("rules", "evidence") == "rules"
    assert short_label("llamacpp:/m/gemma.gguf", "evidence") == "gemma evid."


LONG_MONITOR = "openai:gpt-4o-mini-2024-07-18-with-a-very-long-deployment-name"


def test_drilldown_select_labels_are_whole_or_cut_at_the_end_of_the_monitor_name():
    """The Drill-down's run selects (trial: "openai:gpt…-2024-07-18 · …abc123", names cut in the middle): the whole
    label where it fits (most runs: the select is wide), else the monitor name cut at its end with "…", the run id and
    status whole; the whole name in :func:`run_select_note` (the line under the select) only when cut."""
    typical = {"run_id": RID, "monitor": "openai:gpt-4o-mini-2024-07-18", "template": "evidence", "status": "finished"}
    assert views.run_select_label(typical) == f"openai:gpt-4o-mini-2024-07-18 · evidence · {RID}"  # 69 characters
    assert views.run_select_note(typical) is None
    fewshot = dict(typical, template="evidence-fewshot", status="cancelled")  # 89 characters whole
    assert views.run_select_label(fewshot) == f"openai:gpt-4o-mini-… · evidence-fewshot · {RID} (cancelled)"
    assert views.run_select_note(fewshot) == f"openai:gpt-4o-mini-2024-07-18 · evidence-fewshot · {RID} (cancelled)"
    long = {"run_id": RID, "monitor": LONG_MONITOR, "template": "evidence", "status": "finished"}
    lab = views.run_select_label(long)
    assert lab == f"openai:gpt-4o-mini-2024-07-18-with-a-ve… · evidence · {RID}"
    assert len(lab) == views.run_labels.RUN_SELECT_MAX == 80
    assert views.run_select_note(long) == views.run_full_label(long) == f"{LONG_MONITOR} · evidence · {RID} (finished)"
    # narrower: the template goes before the monitor keeps fewer than 16 characters
    assert views.run_select_label(long, max_len=48) == f"openai:gpt-4o-mini… · {RID}"
    # a run id too long for any of that: the label cut at its end
    huge = {"run_id": "x" * 300, "monitor": "m" * 300, "template": "t" * 300, "status": "failed"}
    assert views.run_select_label(huge) == "m" * 15 + "… · " + "x" * 60 + "…"
    probe = {"run_id": "r1", "monitor": "probe:/very/long/path/to/artefacts/tfidf-lr.joblib", "template": "direct"}
    assert views.run_select_label(probe) == "probe:tfidf-lr.joblib · direct · r1"
    # no piece is ever cut in its middle or at its start: an ellipsis only ends a piece
    for run in (typical, fewshot, long, huge, probe, dict(long, monitor="x" * 70)):
        for width in (32, 48, 64, 80, 120):
            pieces = views.run_select_label(run, max_len=width).split(" · ")
            assert len(" · ".join(pieces)) <= width
            assert all("…" not in p[:-1] for p in pieces), (run, width, pieces)


def test_the_active_runs_line_names_each_run_whole():
    """The Runs page's banner wraps: it names each active run by its whole label (trial: a long monitor name was
    cut in the middle there), escaped."""
    runs = [{"run_id": RID, "monitor": LONG_MONITOR + " <b>x</b>", "template": "evidence", "status": "running"}]
    line = views.active_runs_line(runs)
    assert views.md_escape(views.run_full_label(runs[0])) in line and "…" not in line
    assert "<b>" not in line
