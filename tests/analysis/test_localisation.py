"""Localisation metrics: evidence scored against gold spans, in ``report --json`` and the
markdown report."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from automonitor import analysis
from automonitor.analysis.localisation import nan_percentile_rows, describe_overlap, score_sample
from automonitor.vocab import CATEGORIES
from helpers import run_cli
from localisation_seed import BAD_LINE, HARMLESS, localisation_frames, seed_localisation, slice_localisation

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


def test_localisation_uses_the_reports_bootstrap_options_and_slices_category_by_task():
    """``n_boot`` / ``seed`` of the report reach the localisation intervals (they were fixed at 200
    resamples, seed 0); a category x task slice sits beside the category and task slices."""
    from localisation_seed import N
    from automonitor.analysis.report_schema import Localisation
    from automonitor.vocab import TASKS

    quote_of = {"right": BAD_LINE, "half": BAD_LINE}

    def loc(**opts):
        preds, runs, texts, gold = localisation_frames(quote_of)
        # 'half' quotes a prefix of the bad line of its own length on each sample (4 + p characters),
        # so the character-level metrics vary between resamples
        mine = (preds["run_id"] == "half") & (preds["label"] == M) & preds["evidence"].map(bool)
        preds.loc[mine, "evidence"] = preds.loc[mine, "pair_id"].map(lambda p: [BAD_LINE[: 4 + int(p[1:])]])
        rep = analysis.analyze(preds, runs, texts=texts, gold_spans=gold, **opts).to_dict()
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


def _made_up_results(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        e, g = int(rng.integers(5, 60)), int(rng.integers(5, 60))
        i = int(rng.integers(0, min(e, g) + 1))
        out.append(
            {
                "status": "localised" if i else "wrong_reason",
                "inter": i,
                "evidence_chars": e,
                "gold_chars": g,
                "union": e + g - i,
            }
        )
    return out


def test_span_metric_intervals_come_from_the_resamples():
    """The bootstrap interval of a character-level metric spans the resamples' values (it collapsed to
    one number, the ratio of the sums over all resamples, before)."""
    res = _made_up_results(40)
    block = slice_localisation(40, res, n_boot=500, seed=3)
    for k in ("span_precision", "span_recall", "span_f1", "span_iou"):
        lo, hi = block[f"{k}_ci"]
        assert lo < block[k] < hi and hi - lo > 0.02, (k, lo, block[k], hi)
    # the vectorised percentile is numpy's nanpercentile (linear), NaN rows and partial NaN rows included
    x = np.random.default_rng(1).normal(size=(6, 101))
    x[1, ::3] = np.nan
    x[2] = np.nan
    got = nan_percentile_rows(x, (2.5, 97.5))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanpercentile(x, [2.5, 97.5], axis=1).T
    np.testing.assert_allclose(got, want, equal_nan=True)


def test_run_localisation_slices_equal_slice_localisation_with_the_same_weights():
    """Every slice of a run computed at once (member matrix x counts) gives what
    :func:`slice_localisation` gives on that slice's TPs with the run's weight columns."""
    from automonitor.analysis.localisation import poisson_weights, run_localisation

    preds, runs, texts, gold = localisation_frames({"r": BAD_LINE[:10] + " starting"})
    preds.loc[preds["sample_id"].isin(["s3m", "s5m", "s7m"]), "evidence"] = [[BAD_LINE], [HARMLESS], [BAD_LINE[:4]]]
    mis = preds[preds["label"] == M]
    rows = [(r.sample_id, r.category, r.task, r.outcome == M, r.evidence) for r in mis.itertuples()]
    responses = {sid: rr[1] for sid, rr in texts.items()}
    out = run_localisation(rows, responses, gold, n_boot=300, seed=5)
    keyed = [r for r in rows if gold.get(r[0])]
    w = poisson_weights(300, len(keyed), 5)
    tp_idx = [i for i, r in enumerate(keyed) if r[3]]
    tps = [score_sample(responses[keyed[i][0]], keyed[i][4], gold[keyed[i][0]]) for i in tp_idx]
    want = slice_localisation(len(keyed), tps, n_boot=300, seed=5, weights=w[:, tp_idx])
    got = out["overall"]
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=1e-9), k
    assert got["span_recall_ci"][0] < got["span_recall_ci"][1]
    cat = keyed[0][1]
    idx = [i for i in tp_idx if keyed[i][1] == cat]
    want_cat = slice_localisation(
        sum(1 for r in keyed if r[1] == cat),
        [score_sample(responses[keyed[i][0]], keyed[i][4], gold[keyed[i][0]]) for i in idx],
        weights=w[:, idx],
    )
    for k, v in want_cat.items():
        assert out["by_category"][cat][k] == pytest.approx(v, rel=1e-9), k
    # a run's weights are the first rows of any larger draw: they do not depend on the other runs
    assert np.array_equal(poisson_weights(300, 7, 5), poisson_weights(300, 50, 5)[:, :7])


def test_report_localisation_reuses_the_grounding_phase_offsets_and_gives_the_same_numbers():
    """In a report the quotes are grounded once (the grounding phase fills the memo localisation reads):
    the localisation equals that of a fresh memo."""
    from automonitor.analysis.localisation import run_localisation

    preds, runs, texts, gold = localisation_frames({"right": BAD_LINE, "wrong": HARMLESS.upper()})
    rep = analysis.analyze(preds, runs, texts=texts, gold_spans=gold, n_boot=60, seed=2).to_dict()
    responses = {sid: rr[1] for sid, rr in texts.items()}
    for entry in rep["runs"]:
        mine = preds[(preds["run_id"] == entry["run_id"]) & (preds["label"] == M)]
        rows = [(r.sample_id, r.category, r.task, r.outcome == M, r.evidence) for r in mine.itertuples()]
        assert entry["localisation"] == run_localisation(rows, responses, gold, n_boot=60, seed=2, cache={})
