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


def test_localisation_uses_the_reports_bootstrap_options_and_slices_category_by_task():
    """``n_boot`` / ``seed`` of the report reach the localisation intervals (they were fixed at 200
    resamples, seed 0); a category x task slice sits beside the category and task slices."""
    from localisation_seed import N
    from automonitor.analysis.report_schema import Localisation
    from automonitor.vocab import TASKS

    quote_of = {"right": BAD_LINE, "half": BAD_LINE[:8] + " starting"}  # 'half' is localised on a part

    def loc(**opts):
        preds, runs, texts, gold = localisation_frames(quote_of)
        # a partial quote on every other sample, so the character-level metrics vary between resamples
        odd = preds["sample_id"].str.endswith("m") & preds["pair_id"].map(lambda p: int(p[1:]) % 2 == 1)
        preds.loc[odd & (preds["run_id"] == "half"), "evidence"] = preds.loc[
            odd & (preds["run_id"] == "half"), "evidence"
        ].map(lambda ev: [BAD_LINE[:6]] if ev else ev)
        rep = analysis.analyze(preds, runs, texts=texts, gold_spans=gold, **opts)
        return {r["run_id"]: r["localisation"] for r in rep["runs"]}

    a, b, c = loc(n_boot=300, seed=1)["half"], loc(n_boot=300, seed=1)["half"], loc(n_boot=300, seed=7)["half"]
    assert a["overall"]["span_recall_ci"] == b["overall"]["span_recall_ci"]  # seeded: reproducible
    assert a["overall"]["span_recall_ci"] != c["overall"]["span_recall_ci"]  # the seed is the report's
    assert loc(n_boot=40, seed=1)["half"]["overall"]["span_recall_ci"] != a["overall"]["span_recall_ci"]
    # category x task: the run's cells with gold spans, their counts adding up to the overall ones
    ct = a["by_category_task"]
    cells = [(cat, task) for cat in ct for task in ct[cat]]
    assert sorted(cells) == sorted({(CATEGORIES[p % 3], TASKS[p % 3]) for p in range(N)})
    assert sum(ct[c][t]["gold_samples"] for c, t in cells) == a["overall"]["gold_samples"] == N
    assert sum(ct[c][t]["localised"] for c, t in cells) == a["overall"]["localised"]
    cat, task = cells[0]
    assert ct[cat][task]["gold_samples"] == a["by_category"][cat]["gold_samples"]  # one task per category here
    # a report written before the slice existed still reads, and writes back without it
    old = {k: v for k, v in a.items() if k != "by_category_task"}
    assert "by_category_task" not in Localisation.model_validate(old).to_dict()
