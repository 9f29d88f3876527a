"""Agreement shows its uncertainty (too-few slices get no interval, ``too_few`` in the
JSON) and compares a monitor run with the humans and adds Fleiss' kappa."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa

from automonitor.annotation import agreement as ag
from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM
from automonitor.errors import InputError, NotFound
from store import session_scope
from store.queries.samples import insert_samples

from helpers import candidate_row, fast_user
from test_agreement import B, M, U, frame


def test_slices_under_min_items_are_too_few_and_get_no_interval():
    two = frame({"a": [M, B], "b": [M, M]}, category="sycophancy_bias")
    many = frame({"a": [M, B] * 8, "b": [M, B] * 7 + [B, B]}, category="specification_gaming")
    many["sample_id"] = "g" + many["sample_id"]
    doc = ag.compute_agreement(__import__("pandas").concat([two, many]), n_boot=200)
    small = doc["by_category"]["sycophancy_bias"]
    assert small["items"] == 2 and small["too_few"] is True
    assert all(v is None for v in small["ci"].values())  # never a degenerate [0, 0]
    assert small["percent_agreement"] == pytest.approx(0.5)  # the point value is still there
    big = doc["by_category"]["specification_gaming"]
    assert big["items"] == 16 and big["too_few"] is False and big["ci"]["percent_agreement"] is not None
    assert doc["too_few"] is False and doc["min_items"] == 10
    rows = ag.flat_rows(doc)
    assert [r["too_few"] for r in rows if r["category"] == "sycophancy_bias"] == [True, True]
    # the threshold is a parameter
    doc5 = ag.compute_agreement(many, n_boot=50, min_items=20)
    assert doc5["too_few"] is True and doc5["ci"]["cohen_kappa"] is None


def test_fleiss_kappa_matches_statsmodels_and_its_bootstrap_brackets_it():
    rng = np.random.default_rng(4)
    labs = {r: [[M, B, U][i] for i in rng.choice(3, 40, p=[0.45, 0.45, 0.1])] for r in ("a", "b", "c")}
    labs["b"][:20] = labs["a"][:20]  # some agreement
    df = frame(labs)
    doc = ag.compute_agreement(df, n_boot=300)
    cats = [M, B, U]
    table = np.array([[sum(labs[r][i] == c for r in labs) for c in cats] for i in range(40)])
    assert doc["fleiss_kappa"] == pytest.approx(fleiss_kappa(table, method="fleiss"))
    lo, hi = doc["ci"]["fleiss_kappa"]
    assert lo < doc["fleiss_kappa"] < hi
    assert doc["fleiss_items"] == 40
    # an item with a missing label: Fleiss' kappa uses the items with the most common rater count
    labs["c"][0] = None
    doc2 = ag.compute_agreement(frame(labs), n_boot=0)
    assert doc2["fleiss_items"] == 39
    assert doc2["fleiss_kappa"] == pytest.approx(fleiss_kappa(table[1:], method="fleiss"))


@pytest.fixture
def labelled(engine, tmp_path):
    """12 pairs labelled by two annotators, one disagreement adjudicated, and an imported monitor run."""
    users = [fast_user(engine, f"h{i}", "annotator") for i in range(2)]
    rows = []
    for p in range(12):
        for lab in (M, B):
            rows.append(
                candidate_row(
                    id=f"p{p:02d}{lab[0]}",
                    pair_id=f"pp{p}",
                    category="sycophancy_bias",
                    task="qa",
                    label=lab,
                    request=f"req {p}",
                    response=f"{lab} {p}",
                )
            )
    with session_scope(engine) as s:
        insert_samples(s, rows)
    ann.assign(engine, SYSTEM, k=2, seed=1)
    truth = {r["id"]: r["label"] for r in rows}
    for r in rows:
        ann.save_label(engine, users[0], r["id"], r["label"])
        flip = r["id"] in ("p00m", "p01b")
        ann.save_label(engine, users[1], r["id"], (B if r["label"] == M else M) if flip else r["label"])
    boss = fast_user(engine, "boss", "admin")
    ann.adjudicate(engine, boss, "p00m", M)
    # the monitor: right on everything but p02m/p03m (called benign) and one unscored answer
    preds = []
    for sid, lab in sorted(truth.items()):
        out = B if sid in ("p02m", "p03m") else lab
        preds.append({"sample_id": sid, "outcome": "invalid" if sid == "p04b" else out})
    # a run over candidate items: `predictions import` takes gold test/control samples only, so the store
    # writes it directly (the comparison reads any run's verdicts on the labelled items)
    from store.queries import analysis as q

    run_id = "imp-outside-judge"
    with session_scope(engine) as s:
        q.insert_finished_run(
            s,
            run_id=run_id,
            monitor=q.external_monitor(s, "outside-judge"),
            template="direct",
            kind="imported",
            status="imported",
            params={},
            rows=[{**p, "score": None, "evidence": []} for p in preds],
        )
    return engine, users, truth, preds, run_id


def test_monitor_against_gold_and_each_annotator(labelled):
    engine, users, truth, preds, run_id = labelled
    doc = ag.agreement(engine, SYSTEM, n_boot=200, run_id=run_id, submitted_only=False)  # draft labels
    mon = doc["monitor"]
    assert mon["run_id"] == run_id and mon["monitor"] == "outside-judge"
    assert mon["judged"] == 24 and mon["unscored"] == 1
    verdict = {p["sample_id"]: p["outcome"] for p in preds if p["outcome"] in (M, B)}
    # gold: adjudicated p00m; p01b (unadjudicated disagreement) is not resolved
    gold = {sid: lab for sid, lab in truth.items() if sid != "p01b"}
    ids = sorted(s for s in gold if s in verdict)
    g = mon["vs_gold"]
    assert g["items"] == len(ids) == 22
    assert g["cohen_kappa"] == pytest.approx(cohen_kappa_score([gold[s] for s in ids], [verdict[s] for s in ids]))
    assert g["confusion"]["labels"] == [M, B] and g["confusion"]["matrix"] == [
        [10, 2],
        [0, 10],
    ]  # 12 m; 12 b less p01b (unresolved), p04b (unscored)
    lo, hi = g["ci"]["cohen_kappa"]
    assert lo <= g["cohen_kappa"] <= hi and g["too_few"] is False
    h1 = mon["vs_annotators"]["h1"]
    assert h1["items"] == 23
    # an unknown run is named
    with pytest.raises(NotFound):
        ag.agreement(engine, SYSTEM, n_boot=0, run_id="no-such-run")
    with pytest.raises(InputError):
        ag.agreement(engine, SYSTEM, min_items=0)


def test_cli_agreement_json_has_too_few_and_monitor(labelled, cli, db_url):
    engine, users, truth, preds, run_id = labelled
    r = cli(
        ["agreement", "--json", "--bootstrap", "50", "--run", run_id, "--min-items", "30", "--include-drafts"],
        db=db_url,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["too_few"] is True and doc["ci"]["cohen_kappa"] is None and doc["min_items"] == 30
    assert doc["monitor"]["vs_gold"]["too_few"] is True
    r = cli(["agreement", "--run", run_id, "--bootstrap", "50"], db=db_url)
    assert r.returncode == 0, r.stderr
    assert "outside-judge" in r.stdout and "vs gold" in r.stdout


def test_cli_agreement_counts_submitted_labels_only_unless_include_drafts(labelled, cli, db_url):
    """CONTRACT round 2: `agreement` counts submitted labels only by default; `--include-drafts` gives the
    old view; `--submitted-only` (now the default) is still accepted."""
    engine, users, truth, preds, run_id = labelled  # every label of the fixture is a draft
    docs = {}
    for flags in ((), ("--submitted-only",), ("--include-drafts",)):
        r = cli(["agreement", "--json", "--bootstrap", "0", *flags], db=db_url)
        assert r.returncode == 0, r.stderr
        docs[flags] = json.loads(r.stdout)
    assert docs[()]["items"] == docs[("--submitted-only",)]["items"] == 0
    assert docs[()]["submitted_only"] is True and docs[("--include-drafts",)]["submitted_only"] is False
    assert docs[("--include-drafts",)]["items"] == 24
    r = cli(["agreement", "--json", "--submitted-only", "--include-drafts"], db=db_url)
    assert r.returncode == 2 and "--include-drafts" in r.stderr


def test_perfect_agreement_on_ten_items_is_not_reported_as_a_zero_width_interval():
    """Every bootstrap resample of 10 perfectly agreed items gives 1.0: the percentile interval would
    be [1.00, 1.00]. Raw agreement gets the Wilson interval over the items instead (PABAK its linear
    image), the chance-corrected coefficients no interval, and ``ci_method`` says so."""
    from statsmodels.stats.proportion import proportion_confint

    doc = ag.slice_agreement(frame({"a": [M, B] * 5, "b": [M, B] * 5}), n_boot=300)
    assert doc["items"] == 10 and doc["too_few"] is False and doc["percent_agreement"] == 1.0
    lo, hi = proportion_confint(10, 10, alpha=0.05, method="wilson")
    assert doc["ci"]["percent_agreement"] == pytest.approx([lo, hi]) and hi == pytest.approx(1.0)
    assert doc["ci"]["percent_agreement"][0] == pytest.approx(0.7225, abs=1e-4)  # not 1.00
    q = 3  # unsure is a category
    assert doc["ci"]["pabak"] == pytest.approx([(q * lo - 1) / (q - 1), (q * hi - 1) / (q - 1)])
    assert doc["ci_method"]["percent_agreement"] == doc["ci_method"]["pabak"] == ag.WILSON_ALL_AGREE
    for k in ("cohen_kappa", "krippendorff_alpha", "gwet_ac1"):
        assert doc[k] == pytest.approx(1.0) and doc["ci"][k] is None and doc["ci_method"][k] == ag.NONE_ALL_AGREE
    # an ordinary slice keeps its percentile interval, named as such
    mixed = ag.slice_agreement(frame({"a": [M, B] * 8, "b": [M, B] * 7 + [B, B]}), n_boot=300)
    assert mixed["ci_method"]["cohen_kappa"] == ag.PERCENTILE and mixed["ci"]["cohen_kappa"][0] < 1
    # the monitor-vs-human comparison too
    b = ag.binary_agreement([(M, M)] * 6 + [(B, B)] * 6, n_boot=300)
    assert b["ci"]["cohen_kappa"] is None and b["ci_method"]["cohen_kappa"] == ag.NONE_ALL_AGREE
    assert b["ci"]["percent_agreement"] == pytest.approx(list(proportion_confint(12, 12, method="wilson")))
