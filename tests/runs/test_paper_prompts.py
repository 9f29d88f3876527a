"""The paper's own monitor prompts (``paper-direct``, ``paper-evidence``): template text, the JSON answer
``{"misbehavior_detected": bool, "detected_categories": [...]}`` through the parser and the structured-output
path of the ``openai`` backend (a loopback OpenAI-compatible server), and the ``rules`` monitor via the CLI."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session, select

from automonitor.runs import runner
from automonitor.runs.parsing import parse_text, parse_tool_input
from automonitor.runs.prompts import PromptBuilder, load_template, output_schema
from servers.data import add_pairs
from servers.openai_fault import OpenAIFaultServer
from store.models import Prediction, Sample

FAST = {"backoff_initial": 0.01, "backoff_max": 0.05, "timeout": 10}


def test_paper_templates_have_the_papers_structure():
    d, e = load_template("paper-direct"), load_template("paper-evidence")
    assert (d.paper, d.evidence, e.paper, e.evidence) == (True, False, True, True)
    assert not load_template("direct").paper and load_template("evidence").evidence
    for t in (d, e):
        assert "rigorous safety auditor and behavioral judge" in t.sections["system"]
        assert "misbehavior_detected" in t.sections["system"] and "JSON only" in t.sections["system"]
    assert "detected_categories" in e.sections["system"] and "exact" in e.sections["system"]
    assert "insufficient" in e.sections["system"]
    system, user, _ = PromptBuilder(d).chat_messages("Add {response} numbers", "def f(): return 3")
    assert user == "TASK:\nAdd {response} numbers\n\nSTUDENT RESPONSE:\ndef f(): return 3"  # one-pass fill
    assert output_schema(d)["required"] == ["misbehavior_detected"]
    assert output_schema(e)["required"] == ["misbehavior_detected", "detected_categories"]
    assert output_schema(load_template("evidence")) is None  # our templates keep the backends' verdict schema


def test_the_papers_json_answer_is_parsed():
    ans = {
        "misbehavior_detected": True,
        "detected_categories": [
            {
                "category": "Sycophancy & Bias",
                "description": "defers",
                "severity": "moderate",
                "evidence": ["you are right"],
            },
            {
                "category": "Specification Gaming",
                "description": "hard-codes",
                "severity": "severe",
                "evidence": ["return 3"],
            },
        ],
    }
    r = parse_text(json.dumps(ans))
    assert r.outcome == "misbehavior" and r.reason == "json field 'misbehavior_detected'"
    assert r.category == "sycophancy_bias" and r.severity == "high" and r.evidence == ["you are right", "return 3"]
    r = parse_text('{"misbehavior_detected": false, "detected_categories": []}')
    assert (r.outcome, r.category, r.evidence) == ("benign", None, [])
    assert parse_tool_input({"misbehavior_detected": False}).outcome == "benign"
    assert parse_text('{"misbehavior_detected": "perhaps"}').outcome == "invalid"  # never a guessed verdict


def _preds(engine, rid):
    with Session(engine) as s:
        labels = {x.id: x.label for x in s.exec(select(Sample))}
        return [(p, labels[p.sample_id]) for p in s.exec(select(Prediction).where(Prediction.run_id == rid))]


@pytest.mark.parametrize("template", ["paper-direct", "paper-evidence"])
def test_paper_templates_through_structured_output(sqlite_engine, template):
    add_pairs(sqlite_engine, 3)
    with OpenAIFaultServer() as srv:
        rid = runner.create_run(
            sqlite_engine,
            "openai:gpt-4o-mini",
            template,
            base_url=srv.base_url,
            params={**FAST, "structured": "json_schema", "logprobs": False},
        )
        out = runner.execute_run(sqlite_engine, rid)
        req = srv.requests[0]
    schema = req["response_format"]["json_schema"]["schema"]
    assert schema == output_schema(load_template(template))
    assert (
        req["messages"][1]["content"].startswith("TASK:\n")
        and "\n\nSTUDENT RESPONSE:\n" in req["messages"][1]["content"]
    )
    assert out["counts"]["misbehavior"] == out["counts"]["benign"] == 3
    for p, label in _preds(sqlite_engine, rid):
        assert p.outcome == label
        if template == "paper-evidence" and label == "misbehavior":
            assert p.pred_category == "specification_gaming" and p.evidence


def test_rules_monitor_runs_with_a_paper_template(cli, sqlite_url, tmp_path):
    from helpers import write_pairs

    f = tmp_path / "pairs.jsonl"
    write_pairs(f)
    assert cli(["import", str(f)], db=sqlite_url).returncode == 0
    res = cli(["run", "--monitor", "rules", "--template", "paper-evidence", "--quiet", "--json"], db=sqlite_url)
    assert res.returncode == 0, res.stderr
    rep = json.loads(cli(["report", "--json", "--n-boot", "10"], db=sqlite_url).stdout)
    assert rep["runs"][0]["template"] == "paper-evidence" and rep["runs"][0]["overall"]["n"] == 8
    assert cli(["run", "--monitor", "rules", "--template", "paper-nope"], db=sqlite_url).returncode == 2
