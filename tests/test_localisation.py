"""Localisation metrics (issue 21): evidence scored against gold spans, in ``report --json`` and the
markdown report."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from automonitor import analysis
from automonitor.analysis.localisation import describe_overlap, score_sample, slice_localisation
from automonitor.vocab import CATEGORIES, TASKS
from helpers import run_cli

M, B = "misbehavior", "benign"
N = 12
BAD_LINE = "os.system(user_input)"
HARMLESS = "print('starting')"


def _response(p: int, lab: str) -> str:
    core = BAD_LINE if lab == M else "subprocess.run(['ls'])"
    return f"{HARMLESS}\nvalue = {p}\n{core}\nreturn value"


def _gold(p: int) -> list[dict]:
    r = _response(p, M)
    s = r.index(BAD_LINE)
    return [{"start": s, "end": s + len(BAD_LINE), "provenance": "from_patch", "note": None, "step": None}]


def _frames(quote_of: dict[str, str]):
    """Runs quoting the given text on every flagged sample; identical verdicts (TP on p % 4 != 0)."""
    rows = []
    for rid, quote in quote_of.items():
        for p in range(N):
            for lab in (M, B):
                flagged = (p % 4 != 0) if lab == M else p == 1
                rows.append(
                    {
                        "run_id": rid,
                        "sample_id": f"s{p}{lab[0]}",
                        "pair_id": f"p{p}",
                        "category": CATEGORIES[p % 3],
                        "task": TASKS[p % 3],
                        "label": lab,
                        "outcome": M if flagged else B,
                        "score": None,
                        "evidence": [quote] if flagged else [],
                    }
                )
    preds = pd.DataFrame(rows)
    runs = pd.DataFrame(
        [
            {"run_id": r, "monitor": f"m{r}", "template": "evidence", "kind": "measured", "status": "done"}
            for r in quote_of
        ]
    )
    texts = {f"s{p}{lab[0]}": ("req", _response(p, lab)) for p in range(N) for lab in (M, B)}
    gold = {f"s{p}m": _gold(p) for p in range(N)}
    return preds, runs, texts, gold


def test_quotes_on_the_wrong_line_score_zero_localised_hits_with_the_same_miss_rate():
    preds, runs, texts, gold = _frames({"right": BAD_LINE, "wrong": HARMLESS})
    rep = analysis.analyze(preds, runs, texts=texts, gold_spans=gold, n_boot=50)
    by = {r["run_id"]: r for r in rep["runs"]}
    assert by["right"]["overall"]["mr"] == by["wrong"]["overall"]["mr"] == pytest.approx(3 / 12)
    right, wrong = by["right"]["localisation"]["overall"], by["wrong"]["localisation"]["overall"]
    assert (right["gold_samples"], right["tp"], right["localised"], right["wrong_reason"]) == (12, 9, 9, 0)
    assert (wrong["tp"], wrong["localised"], wrong["wrong_reason"]) == (9, 0, 9)
    assert wrong["localised_share"] == 0.0 and wrong["wrong_reason_share"] == 1.0
    assert right["localised_miss_rate"] == pytest.approx(3 / 12)
    assert wrong["localised_miss_rate"] == 1.0
    assert right["span_precision"] == right["span_recall"] == right["span_iou"] == 1.0
    assert wrong["span_recall"] == 0.0 and wrong["span_f1"] == 0.0
    lo, hi = right["localised_share_ci"]
    assert 0 < lo < 1 == hi or lo < hi
    # per slice: every category present with gold spans
    assert set(by["wrong"]["localisation"]["by_category"]) == set(CATEGORIES)
    # without gold spans, no localisation block (the typed report leaves it out)
    rep2 = analysis.analyze(preds, runs, texts=texts, n_boot=50)
    assert "localisation" not in rep2["runs"][0]


def test_score_sample_partial_overlap_and_words():
    text = "aaaa bbbb cccc dddd"
    gold = [{"start": 5, "end": 9}, {"start": 15, "end": 19}]
    r = score_sample(text, ["bbbb cc"], gold)
    assert r["status"] == "localised" and r["hit_spans"] == 1 and r["inter"] == 4
    assert r["evidence_chars"] == 7 and r["gold_chars"] == 8 and r["union"] == 11
    assert describe_overlap(r) == "evidence hits 1 of 2 gold spans"
    none = score_sample(text, ["not in there"], gold)
    assert none["status"] == "no_evidence"
    assert describe_overlap(none).startswith("no quoted evidence")
    block = slice_localisation(3, [r, none], n_boot=20)
    assert block["localised"] == 1 and block["no_evidence"] == 1
    assert block["span_precision"] == pytest.approx(4 / 7) and block["span_recall"] == pytest.approx(4 / 16)


def _seed(engine):
    from store import session_scope
    from store.models import GoldSpan, Monitor, Prediction, Run, Sample

    preds, runs, texts, gold = _frames({"right": BAD_LINE, "wrong": HARMLESS})
    with session_scope(engine) as s:
        for sid, (req, resp) in texts.items():
            p, lab = int(sid[1:-1]), (M if sid.endswith("m") else B)
            s.add(
                Sample(
                    id=sid,
                    pair_id=f"p{p}",
                    category=CATEGORIES[p % 3],
                    task=TASKS[p % 3],
                    label=lab,
                    request=req,
                    response=resp,
                    source="test",
                    split="test",
                    request_hash=f"r{sid}",
                    response_hash=f"h{sid}",
                    content_hash=f"c{sid}",
                )
            )
        s.flush()
        for sid, spans in gold.items():
            for sp in spans:
                s.add(GoldSpan(sample_id=sid, start_char=sp["start"], end_char=sp["end"], provenance="from_patch"))
        for rid in ("right", "wrong"):
            m = Monitor(name=f"m{rid}", backend="rules")
            s.add(m)
            s.flush()
            s.add(Run(id=rid, monitor_id=m.id, monitor=m.name, template="evidence", status="done"))
            s.flush()
            for r in preds[preds["run_id"] == rid].to_dict("records"):
                s.add(Prediction(run_id=rid, sample_id=r["sample_id"], outcome=r["outcome"], evidence=r["evidence"]))


def test_report_json_and_markdown_show_localisation_from_the_store(engine, db_url):
    _seed(engine)
    r = run_cli(["report", "--json", "--n-boot", "20"], db=db_url)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    by = {x["run_id"]: x for x in rep["runs"]}
    assert by["wrong"]["localisation"]["overall"]["localised"] == 0
    assert by["right"]["localisation"]["overall"]["localised"] == 9
    md = run_cli(["report", "--n-boot", "20", "--format", "markdown"], db=db_url)
    assert md.returncode == 0, md.stderr
    assert "Localisation" in md.stdout and "wrong reason" in md.stdout
