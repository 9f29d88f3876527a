"""Agreement coefficients against hand-computed and published values, the libraries (scikit-learn,
krippendorff), the ``unsure`` policy, seeded bootstrap intervals, and the store-backed document."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from automonitor.annotation import agreement as ag
from automonitor import annotation as ann
from automonitor.errors import InputError, PermissionDenied
from store import session_scope
from store.queries.samples import insert_samples

from helpers import candidate_row, fast_user

M, B, U = "misbehavior", "benign", "unsure"


def frame(labels: dict[str, list[str | None]], category="sycophancy_bias", task="qa") -> pd.DataFrame:
    rows = []
    for rater, labs in labels.items():
        for i, lab in enumerate(labs):
            if lab is not None:
                rows.append(
                    {
                        "sample_id": f"s{i:03d}",
                        "annotator": rater,
                        "label": lab,
                        "category": category,
                        "task": task,
                        "seconds_spent": float(i + 1),
                    }
                )
    return pd.DataFrame(rows)


def test_two_annotators_match_hand_computed_values():
    df = frame({"a": [M] * 5 + [B] * 5, "b": [M] * 4 + [B] * 5 + [M]})
    s = ag.slice_agreement(df, n_boot=0)
    assert s["items"] == 10 and s["annotators"] == ["a", "b"]
    assert s["percent_agreement"] == pytest.approx(0.8)
    assert s["cohen_kappa"] == pytest.approx(0.6)  # po .8, pe .5
    assert s["krippendorff_alpha"] == pytest.approx(1 - 19 * 4 / 200)  # 0.62
    # unsure as a (unused) third category: q = 3
    assert s["pabak"] == pytest.approx((3 * 0.8 - 1) / 2)
    assert s["gwet_ac1"] == pytest.approx((0.8 - 0.25) / 0.75)
    m = ag.slice_agreement(df, n_boot=0, unsure="missing")  # q = 2
    assert m["pabak"] == pytest.approx(0.6) and m["gwet_ac1"] == pytest.approx(0.6)
    assert m["cohen_kappa"] == pytest.approx(0.6)


def test_skewed_labels_kappa_paradox_ac1_and_pabak_stay_high():
    df = frame({"a": [B] * 18 + [M, B], "b": [B] * 18 + [B, M]})
    s = ag.slice_agreement(df, n_boot=0, unsure="missing")
    assert s["percent_agreement"] == pytest.approx(0.9)
    assert s["cohen_kappa"] == pytest.approx((0.9 - 0.905) / 0.095)  # slightly negative
    assert s["gwet_ac1"] == pytest.approx((0.9 - 0.095) / 0.905)
    assert s["pabak"] == pytest.approx(0.8)


def test_published_krippendorff_example_nominal_alpha():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 observers x 12 units, nominal
    nan = np.nan
    data = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
        ]
    )
    m = np.where(np.isnan(data), -1, data - 1).T.astype(int)
    m = m[(m >= 0).sum(axis=1) >= 2]
    q = 5
    got = ag._coefficients(np.ones((1, len(m))), ag._item_terms(m, q), ag._pairs_terms(m, q), q)
    assert got["krippendorff_alpha"][0] == pytest.approx(0.743, abs=5e-4)


def test_closed_form_replicate_formulas_equal_the_libraries_with_missing_labels():
    rng = np.random.default_rng(3)
    for trial in range(5):
        m = rng.integers(0, 3, size=(60, 4))
        m[rng.random(m.shape) < 0.35] = -1
        m = m[(m >= 0).sum(axis=1) >= 2]
        closed = ag._coefficients(np.ones((1, len(m))), ag._item_terms(m, 3), ag._pairs_terms(m, 3), 3)
        kappa, alpha = ag._library_point(m, [M, B, U])
        assert closed["krippendorff_alpha"][0] == pytest.approx(alpha)
        assert closed["cohen_kappa"][0] == pytest.approx(kappa)
        # Light's kappa is the mean of the pairwise scikit-learn kappas
        pairwise = []
        for a in range(4):
            for b in range(a + 1, 4):
                both = (m[:, a] >= 0) & (m[:, b] >= 0)
                pairwise.append(cohen_kappa_score(m[both, a], m[both, b], labels=[0, 1, 2]))
        assert kappa == pytest.approx(np.mean(pairwise))


def test_unsure_policy_and_items_with_a_single_label():
    df = frame({"a": [U, U, M, B, M], "b": [U, M, M, B, None]})
    cat = ag.slice_agreement(df, n_boot=0)
    assert cat["items"] == 4  # the last item has one label only
    assert cat["percent_agreement"] == pytest.approx(3 / 4)  # (U,U) agrees, (U,M) disagrees
    miss = ag.slice_agreement(df, n_boot=0, unsure="missing")
    assert miss["items"] == 2 and miss["percent_agreement"] == pytest.approx(1.0)
    with pytest.raises(InputError):
        ag.slice_agreement(df, unsure="ignore")
    one = ag.slice_agreement(frame({"a": [M, M], "b": [M, M]}), n_boot=0)
    assert one["percent_agreement"] == 1.0
    assert one["cohen_kappa"] is None and one["krippendorff_alpha"] is None  # undefined, not 0 or 1
    empty = ag.slice_agreement(frame({"a": [M]}), n_boot=200)
    assert empty["items"] == 0 and empty["percent_agreement"] is None and empty["ci"]["pabak"] is None


def test_bootstrap_intervals_are_seeded_and_bracket_the_estimate():
    rng = np.random.default_rng(0)
    truth = rng.choice([M, B], size=120)
    noisy = lambda: [t if rng.random() < 0.85 else rng.choice([M, B, U]) for t in truth]  # noqa: E731
    df = frame({"a": noisy(), "b": noisy(), "c": noisy()})
    s1 = ag.slice_agreement(df, n_boot=500, seed=1)
    s2 = ag.slice_agreement(df, n_boot=500, seed=1)
    s3 = ag.slice_agreement(df, n_boot=500, seed=2)
    assert s1["ci"] == s2["ci"] and s1["ci"] != s3["ci"]
    for k in ag.METRICS:
        lo, hi = s1["ci"][k]
        assert lo < s1[k] < hi, k
        assert hi - lo < 0.3


def test_document_breakdowns_confusion_and_time():
    a = frame({"x": [M, B, M, B], "y": [M, B, B, B]}, "sycophancy_bias", "qa")
    b = frame({"x": [M, M, U], "y": [M, M, M]}, "specification_gaming", "code")
    b["sample_id"] = "t" + b["sample_id"]
    doc = ag.compute_agreement(pd.concat([a, b]), n_boot=100)
    assert {"items", "annotators", "percent_agreement", "cohen_kappa", "krippendorff_alpha", "by_category"} <= set(doc)
    assert doc["items"] == 7 and doc["annotators"] == ["x", "y"] and doc["labels"] == 14
    assert list(doc["by_category"]) == ["sycophancy_bias", "specification_gaming"]
    assert doc["by_category"]["sycophancy_bias"]["percent_agreement"] == pytest.approx(0.75)
    assert doc["by_category"]["specification_gaming"]["percent_agreement"] == pytest.approx(2 / 3)
    assert set(doc["by_category"]["sycophancy_bias"]) >= {
        "items",
        "annotators",
        "percent_agreement",
        "cohen_kappa",
        "krippendorff_alpha",
    }
    assert doc["by_category_task"]["specification_gaming"]["code"]["items"] == 3
    (conf,) = doc["confusion"]
    assert (conf["a"], conf["b"], conf["items"]) == ("x", "y", 7)
    assert conf["matrix"] == [[3, 1, 0], [0, 2, 0], [1, 0, 0]]
    assert doc["time_per_item"]["x"] == {
        "labels": 7,
        "timed": 7,
        "median_s": 2.0,
        "mean_s": pytest.approx((1 + 2 + 3 + 4 + 1 + 2 + 3) / 7),
    }
    rows = ag.flat_rows(doc)
    assert [r["slice"] for r in rows].count("category x task") == 2


def test_store_agreement_is_admin_only_and_counts_the_stored_labels(engine):
    a = fast_user(engine, "a1", "annotator")
    b = fast_user(engine, "a2", "annotator")
    admin = fast_user(engine, "adm", "admin")
    rows = []
    for p in range(4):
        req = f"q{p}"
        for lab in (M, B):
            resp = f"{lab}{p}"
            rows.append(
                candidate_row(
                    id=f"x{p}{lab[0]}",
                    pair_id=f"x{p}",
                    category="specification_gaming",
                    task="code",
                    label=lab,
                    request=req,
                    response=resp,
                )
            )
    with session_scope(engine) as s:
        insert_samples(s, rows)
    ann.assign(engine, admin, k=2, seed=0)
    for r in rows:
        ann.save_label(engine, a, r["id"], r["label"], seconds_spent=4)
        ann.save_label(engine, b, r["id"], r["label"] if r["id"] != "x0m" else U, note="why", seconds_spent=8)
    with pytest.raises(PermissionDenied):
        ag.agreement(engine, a)
    doc = ag.agreement(engine, admin, n_boot=50, submitted_only=False)  # every label here is a draft
    assert doc["items"] == 8 and doc["annotators"] == ["a1", "a2"]
    assert doc["percent_agreement"] == pytest.approx(7 / 8)
    assert list(doc["by_category"]) == ["specification_gaming"]
    assert doc["time_per_item"]["a2"]["median_s"] == 8.0
    ref = ag.compute_agreement(ag.label_table(engine, admin), n_boot=50)
    assert {k: v for k, v in doc.items() if k not in ("submitted_only", "spans")} == ref
    assert (
        doc["spans"]["items"] == 0
    )  # no evidence spans marked (span agreement: tests/annotation/test_span_agreement.py)
    assert ag.agreement(engine, admin, n_boot=0, submitted_only=True)["items"] == 0
    # the contract's default: submitted labels only (drafts need submitted_only=False / --include-drafts)
    assert ag.agreement(engine, admin, n_boot=0)["items"] == 0
    with pytest.raises(InputError):
        ag.agreement(engine, admin, n_boot=-1)
