"""Localisation metrics: evidence scored against gold spans, in ``report --json`` and the
markdown report."""

from __future__ import annotations

import json

import pytest

from automonitor import analysis
from automonitor.analysis.localisation import describe_overlap, score_sample, slice_localisation
from automonitor.vocab import CATEGORIES
from helpers import run_cli
from localisation_seed import BAD_LINE, HARMLESS, localisation_frames, seed_localisation

M, B = "misbehavior", "benign"


def test_quotes_on_the_wrong_line_score_zero_localised_hits_with_the_same_miss_rate():
    preds, runs, texts, gold = localisation_frames({"right": BAD_LINE, "wrong": HARMLESS})
    rep = analysis.analyze(preds, runs, texts=texts, gold_spans=gold, n_boot=50).to_dict()
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
    rep2 = analysis.analyze(preds, runs, texts=texts, n_boot=50).to_dict()
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


def test_report_json_and_markdown_show_localisation_from_the_store(engine, db_url):
    seed_localisation(engine)
    r = run_cli(["report", "--json", "--n-boot", "20"], db=db_url)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    by = {x["run_id"]: x for x in rep["runs"]}
    assert by["wrong"]["localisation"]["overall"]["localised"] == 0
    assert by["right"]["localisation"]["overall"]["localised"] == 9
    md = run_cli(["report", "--n-boot", "20", "--format", "markdown"], db=db_url)
    assert md.returncode == 0, md.stderr
    assert "Localisation" in md.stdout and "wrong reason" in md.stdout
