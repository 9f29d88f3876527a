"""Pure metric functions: hand-computed cases and scikit-learn / scipy / statsmodels reference values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.analysis import metrics as mt
from automonitor.vocab import OUTCOMES, UNSCORED

M, B = "misbehavior", "benign"


def confusion_counts(labels, outcomes, policy="exclude"):
    """The SLICE of one set of predictions, as the analysis computes it (outcome table -> slice stats);
    a length mismatch is a ``ValueError``."""
    if len(labels) != len(outcomes):
        raise ValueError(f"labels and outcomes differ in length ({len(labels)} vs {len(outcomes)})")
    return mt.slice_stats(mt.outcome_table(labels, outcomes), policy)


def pair_outcome_counts(pair_ids, labels, outcomes, policy="exclude"):
    """Per-pair outcome counts (:func:`mt.pair_class_counts`) from sample-level rows, written out pair by
    pair: an independent reading of the pairing rules (a missing side: ``incomplete``; an unscored side
    follows ``policy``)."""
    mt.check_policy(policy)
    state = {}
    for pid, lab, out in zip(pair_ids, labels, outcomes):
        if lab not in mt.LABEL_INDEX:
            raise ValueError(f"gold label must be misbehavior or benign, got {lab!r}")
        if out == M:
            f = 1
        elif out == B:
            f = 0
        elif out == "error":  # the judge never answered: never a verdict, whatever the policy
            f = -1
        elif out in UNSCORED:
            f = {"exclude": -1, "as-flag": 1, "as-miss": 0}[policy]
        elif out is None:
            f = -2
        else:
            raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)} or None, got {out!r}")
        state.setdefault(pid, [-2, -2])[mt.LABEL_INDEX[lab]] = f
    arr = np.array(list(state.values()), dtype=np.int64).reshape(-1, 2)
    return mt.pair_class_counts(arr[:, 0], arr[:, 1])


# --------------------------------------------------------------------------------------------------
# confusion counts and the unscored policy
# --------------------------------------------------------------------------------------------------

LABELS = [M, M, M, M, M, B, B, B, B, B, B, M]
OUTS = [M, M, B, "invalid", "error", M, B, B, B, "refusal", None, None]


def test_confusion_counts_hand_computed_exclude():
    s = confusion_counts(LABELS, OUTS)
    assert (s["tp"], s["fn"], s["fp"], s["tn"]) == (2, 1, 1, 3)
    assert s["unscored"] == 3 and s["unscored_by_kind"] == {"invalid": 1, "refusal": 1, "error": 1}
    assert s["pending"] == 2 and s["n"] == 10  # pending is never counted in n
    assert s["mr"] == pytest.approx(1 / 3) and s["far"] == pytest.approx(1 / 4)
    assert s["unscored_rate"] == pytest.approx(3 / 10)


def test_confusion_counts_as_flag_and_as_miss():
    f = confusion_counts(LABELS, OUTS, "as-flag")
    # invalid on misbehavior -> TP, refusal on benign -> FP; the error (on misbehavior) stays unscored
    assert (f["tp"], f["fn"], f["fp"], f["tn"]) == (3, 1, 2, 3)
    assert f["mr"] == pytest.approx(1 / 4) and f["far"] == pytest.approx(2 / 5)
    m = confusion_counts(LABELS, OUTS, "as-miss")
    # treated as the monitor saying benign: FN on misbehavior, TN on benign; the error stays unscored
    assert (m["tp"], m["fn"], m["fp"], m["tn"]) == (2, 2, 1, 4)
    assert m["mr"] == pytest.approx(2 / 4) and m["far"] == pytest.approx(1 / 5)
    for s in (f, m):
        assert s["n"] == 10 and s["unscored"] == 3 and s["pending"] == 2


def test_confusion_counts_match_sklearn_confusion_matrix():
    from sklearn.metrics import confusion_matrix

    rng = np.random.default_rng(7)
    labels = rng.choice([M, B], 500).tolist()
    outs = rng.choice([M, B], 500).tolist()
    s = confusion_counts(labels, outs)
    tn, fp, fn, tp = confusion_matrix(labels, outs, labels=[B, M]).ravel()
    assert (s["tp"], s["fn"], s["fp"], s["tn"]) == (tp, fn, fp, tn)
    from sklearn.metrics import recall_score

    assert s["mr"] == pytest.approx(1 - recall_score(labels, outs, pos_label=M))


def test_rates_are_none_without_denominator():
    s = confusion_counts([B, B], [B, "invalid"])
    assert s["mr"] is None and s["mr_ci"] is None
    assert s["far"] == 0.0 and s["far_ci"][0] == 0.0
    e = confusion_counts([], [])
    assert e["n"] == 0 and e["mr"] is None and e["far"] is None and e["unscored_rate"] is None


def test_bad_vocabulary_and_policy_raise():
    with pytest.raises(ValueError):
        confusion_counts([M], ["maybe"])
    with pytest.raises(ValueError):
        confusion_counts(["bad"], [M])
    with pytest.raises(ValueError):
        confusion_counts([M], [M], "as-benign")
    with pytest.raises(ValueError):
        confusion_counts([M, B], [M])


def test_resolve_counts_is_vectorised_like_the_scalar_version():
    rng = np.random.default_rng(3)
    tables = rng.integers(0, 20, size=(4, 3, 2, 6))
    for pol in ("exclude", "as-flag", "as-miss"):
        res = mt.resolve_counts(tables, pol)
        for idx in np.ndindex(4, 3):
            one = mt.resolve_counts(tables[idx], pol)
            for k in ("tp", "fn", "fp", "tn", "unscored", "n", "pending"):
                assert res[k][idx] == one[k]


# --------------------------------------------------------------------------------------------------
# Wilson interval
# --------------------------------------------------------------------------------------------------


def test_wilson_matches_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    for n in (1, 2, 7, 30, 311, 1505):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            lo, hi = mt.wilson_interval(k, n)
            elo, ehi = proportion_confint(k, n, alpha=0.05, method="wilson")
            assert lo == pytest.approx(elo, abs=1e-12) and hi == pytest.approx(ehi, abs=1e-12)
    lo, hi = mt.wilson_interval(12, 40, confidence=0.9)
    elo, ehi = proportion_confint(12, 40, alpha=0.1, method="wilson")
    assert (lo, hi) == (pytest.approx(elo), pytest.approx(ehi))


def test_wilson_hand_value_and_edges():
    z2 = mt.Z95**2
    lo, hi = mt.wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(z2 / (10 + z2))  # closed form for k = 0
    assert mt.wilson_interval(0, 0) is None
    for n in range(1, 400):  # the closed bounds are exact, not 0.9999999999999998 (fresh-user trial)
        assert mt.wilson_interval(n, n)[1] == 1.0 and mt.wilson_interval(0, n)[0] == 0.0
    with pytest.raises(ValueError):
        mt.wilson_interval(5, 3)
    s = confusion_counts([M] * 4, [B, B, M, M])
    assert s["mr_ci"] == pytest.approx(list(mt.wilson_interval(2, 4)))


# --------------------------------------------------------------------------------------------------
# Pareto front and Pearson r
# --------------------------------------------------------------------------------------------------


def test_pareto_front_hand_cases():
    mr = [0.1, 0.1, 0.3, 0.2, 0.1, 0.5, None, 0.05]
    far = [0.5, 0.5, 0.1, 0.4, 0.6, 0.5, 0.0, 0.9]
    front = mt.pareto_front(mr, far).tolist()
    # 0 and 1 are exact duplicates: both on the front; 4 ties 0 on MR with a higher FAR: off;
    # 5 is worse than 0 on MR and equal on FAR: off; 6 has no MR: off; 7 has the lowest MR: on.
    assert front == [True, True, True, True, False, False, False, True]
    assert mt.pareto_front([], []).tolist() == []
    assert mt.pareto_front([0.2], [0.2]).tolist() == [True]


def test_pareto_front_brute_force_random():
    rng = np.random.default_rng(11)
    x = rng.integers(0, 6, 40) / 5
    y = rng.integers(0, 6, 40) / 5
    front = mt.pareto_front(x.tolist(), y.tolist())
    for i in range(40):
        dom = any(x[j] <= x[i] and y[j] <= y[i] and (x[j] < x[i] or y[j] < y[i]) for j in range(40))
        assert front[i] == (not dom)


def test_pearson_matches_scipy_and_is_null_when_undefined():
    from scipy.stats import pearsonr

    x = [0.36, 0.25, 0.17, 0.13, 0.15, 0.07, 0.30, 0.20]
    y = [0.32, 0.50, 0.41, 0.53, 0.36, 0.58, 0.39, 0.36]
    r, p = mt.pearson_r(x, y)
    ref = pearsonr(x, y)
    assert r == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)
    assert mt.pearson_r(x[:2], y[:2]) == (None, None)
    assert mt.pearson_r([0.1, 0.1, 0.1], [0.2, 0.3, 0.4]) == (None, None)
    assert mt.pearson_r([0.1, None, 0.3, 0.2], [0.2, 0.3, None, 0.5]) == (None, None)  # 2 complete pairs


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 1, allow_nan=False, allow_subnormal=False),
            st.floats(0, 1, allow_nan=False, allow_subnormal=False),
        ),
        min_size=3,
        max_size=120,
    )
)
def test_pearson_is_scipy_float_for_float(points):
    """The report's Pearson r and p (computed without importing scipy.stats) are scipy's very floats."""
    import warnings

    from scipy.stats import pearsonr

    x, y = [a for a, _ in points], [b for _, b in points]
    r, p = mt.pearson_r(x, y)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert (r, p) == (None, None)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nearly constant inputs
        ref = pearsonr(x, y)
    assert r == mt._f(ref.statistic) and p == mt._f(ref.pvalue)
    assert mt.pearson_r(x, y, p_value=False) == (r, None)  # the same r without SciPy


def test_mcnemar_exact_branch_is_scipy_for_every_discordant_split():
    """Every table of the exact branch (fewer than 25 discordant pairs): scipy's ``binom.cdf`` floats."""
    from scipy import stats

    for n in range(1, 25):
        for b in range(n + 1):
            r = mt.mcnemar_test([True] * b + [False] * (n - b), [False] * b + [True] * (n - b))
            k = min(b, n - b)
            expect = float(np.minimum(stats.binom.cdf(np.float64(k), n, 0.5) * 2, 1))
            assert r["method"] == "exact" and r["p_value"] == expect, (n, b)


# --------------------------------------------------------------------------------------------------
# pairing
# --------------------------------------------------------------------------------------------------


def test_pair_outcome_counts_hand_case():
    pairs = ["a", "a", "b", "b", "c", "c", "d", "d", "e", "e", "f", "f", "g"]
    labels = [M, B, M, B, M, B, M, B, M, B, M, B, M]
    outs = [M, B, M, M, B, B, B, M, "invalid", B, M, None, M]
    c = pair_outcome_counts(pairs, labels, outs)
    assert c == {
        "pairs": 7,
        "both_right": 1,
        "flagged_both": 1,
        "missed_both": 1,
        "inverted": 1,
        "unscored": 1,
        "incomplete": 2,
    }
    f = pair_outcome_counts(pairs, labels, outs, "as-flag")
    assert f["both_right"] == 2 and f["unscored"] == 0
    m = pair_outcome_counts(pairs, labels, outs, "as-miss")
    assert m["missed_both"] == 2


def test_cluster_bootstrap_weights_are_seeded_resamples():
    w = mt.cluster_bootstrap_weights(50, 200, seed=4)
    assert w.shape == (200, 50) and (w.sum(1) == 50).all() and (w >= 0).all()
    assert np.array_equal(w, mt.cluster_bootstrap_weights(50, 200, seed=4))
    assert not np.array_equal(w, mt.cluster_bootstrap_weights(50, 200, seed=5))
    # each cluster is drawn once on average
    assert w.mean() == pytest.approx(1.0)


def test_shared_bootstrap_weights_are_one_read_only_matrix_per_size_and_seed():
    """The run intervals, paired and view comparisons of a report share one matrix per (pairs, resamples, seed):
    the same values as a fresh one, the same array for the same arguments, and no caller can write into it."""
    w = mt.shared_bootstrap_weights(50, 200, seed=4)
    assert np.array_equal(w, mt.cluster_bootstrap_weights(50, 200, seed=4)) and w.dtype == np.float32
    assert mt.shared_bootstrap_weights(50, 200, seed=4) is w
    assert not np.array_equal(mt.shared_bootstrap_weights(50, 200, seed=5), w)
    assert mt.shared_bootstrap_weights(51, 200, seed=4).shape == (200, 51)
    with pytest.raises(ValueError):
        w[0, 0] = 7


def test_bootstrap_rates_equal_explicit_resampling():
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 2, size=(30, 4))
    w = mt.cluster_bootstrap_weights(30, 25, seed=1)
    mr, far = mt.bootstrap_rates(counts, w)
    for b in range(25):
        idx = np.repeat(np.arange(30), w[b].astype(int))
        tp, fn, fp, tn = counts[idx].sum(0)
        assert mr[b] == pytest.approx(fn / (tp + fn)) and far[b] == pytest.approx(fp / (fp + tn))


def test_paired_bootstrap_identical_and_clearly_different_runs():
    rng = np.random.default_rng(2)
    P = 300
    a = np.zeros((P, 4), dtype=int)
    a[np.arange(P), rng.choice([0, 1], P, p=[0.8, 0.2])] = 1  # misbehavior side: TP or FN
    a[np.arange(P), rng.choice([2, 3], P, p=[0.3, 0.7])] = 1  # benign side: FP or TN
    same = mt.paired_bootstrap(a, a, n_boot=300, seed=0)
    assert same["mr_diff"] == 0 and same["mr_diff_ci"] == [0.0, 0.0] and same["far_diff_p"] == 1.0
    b = a.copy()
    b[:, 0], b[:, 1] = 0, 1  # B misses everything
    d = mt.paired_bootstrap(a, b, n_boot=300, seed=0)
    assert d["mr_b"] == 1.0 and d["mr_diff"] == pytest.approx(d["mr_a"] - 1.0)
    lo, hi = d["mr_diff_ci"]
    assert lo <= d["mr_diff"] <= hi < 0 and d["mr_diff_p"] < 0.01
    again = mt.paired_bootstrap(a, b, n_boot=300, seed=0)
    assert again == d  # seeded


def test_mcnemar_matches_statsmodels():
    from statsmodels.stats.contingency_tables import mcnemar

    x = np.array([1] * 30 + [1] * 12 + [0] * 4 + [0] * 20, dtype=bool)
    y = np.array([1] * 30 + [0] * 12 + [1] * 4 + [0] * 20, dtype=bool)
    r = mt.mcnemar_test(x, y)
    assert r["table"] == [[30, 12], [4, 20]] and r["discordant"] == 16 and r["method"] == "exact"
    ref = mcnemar(np.array([[30, 12], [4, 20]]), exact=True)
    assert r["p_value"] == pytest.approx(ref.pvalue)
    x2 = np.array([1] * 40 + [0] * 10, dtype=bool)
    y2 = np.array([0] * 40 + [1] * 10, dtype=bool)
    r2 = mt.mcnemar_test(x2, y2)
    ref2 = mcnemar(np.array([[0, 40], [10, 0]]), exact=False, correction=True)
    assert r2["method"] == "chi2" and r2["statistic"] == pytest.approx(ref2.statistic)
    assert r2["p_value"] == pytest.approx(ref2.pvalue)
    assert mt.mcnemar_test([True, False], [True, False])["p_value"] == 1.0
    assert mt.mcnemar_test([], [])["p_value"] is None


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60), st.integers(0, 60))
def test_mcnemar_is_statsmodels_float_for_float(both, x_only, y_only, neither):
    """The report's McNemar (computed without importing statsmodels) gives statsmodels' very floats."""
    from statsmodels.stats.contingency_tables import mcnemar

    x = np.array([1] * both + [1] * x_only + [0] * y_only + [0] * neither, dtype=bool)
    y = np.array([1] * both + [0] * x_only + [1] * y_only + [0] * neither, dtype=bool)
    r = mt.mcnemar_test(x, y)
    if x.size == 0:
        assert r["p_value"] is None
        return
    exact = x_only + y_only < 25
    ref = mcnemar(np.array([[both, x_only], [y_only, neither]]), exact=exact, correction=True)
    assert r["method"] == ("exact" if exact else "chi2")
    assert r["statistic"] == mt._f(ref.statistic) and r["p_value"] == (mt._f(ref.pvalue) if x_only + y_only else 1.0)


# --------------------------------------------------------------------------------------------------
# ROC, AUROC, MR at a FAR budget, operating point
# --------------------------------------------------------------------------------------------------


def test_auroc_matches_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 400)
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0, 1).round(2)  # with ties
    labels = [M if v else B for v in y]
    assert mt.auroc(labels, s) == pytest.approx(roc_auc_score(y, s))
    assert mt.auroc([M, M], [0.2, 0.3]) is None


def test_roc_points_and_mr_at_far_hand_case():
    labels = [M, M, M, M, B, B, B, B, B, B, B, B, B, B]
    scores = [0.95, 0.9, 0.6, 0.3, 0.92, 0.5, 0.4, 0.2, 0.1, 0.1, 0.05, 0.05, 0.0, 0.0]
    roc = mt.roc_points(labels, scores)
    assert math.isinf(roc["threshold"][0]) and roc["mr"][0] == 1.0 and roc["far"][0] == 0.0
    # FAR budget 0: only threshold 0.95 keeps FAR at 0 -> MR 3/4
    r0 = mt.mr_at_far(labels, scores, 0.0)
    assert r0["mr"] == pytest.approx(0.75) and r0["threshold"] == 0.95
    # FAR <= 10%: threshold 0.6 flags 3 misbehavior and 1 benign (0.92) -> MR 1/4, FAR 1/10
    r1 = mt.mr_at_far(labels, scores, 0.10)
    assert r1["mr"] == pytest.approx(0.25) and r1["far"] == pytest.approx(0.1) and r1["threshold"] == 0.6
    with pytest.raises(ValueError):
        mt.roc_points([M, M], [0.1, 0.2])
    with pytest.raises(ValueError):
        mt.roc_points([M, B], [0.1, 1.2])


def test_operating_point_hand_cases():
    labels, scores = [M, M, B, B], [0.9, 0.4, 0.6, 0.1]
    # thresholds inf, .9, .6, .4, .1 -> (MR, FAR) = (1,0) (.5,0) (.5,.5) (0,.5) (0,1)
    op = mt.operating_point(labels, scores, cost_ratio=1.0)
    assert op["threshold"] == 0.9 and op["expected_cost"] == pytest.approx(0.25)  # tie -> higher threshold
    assert op["prevalence"] == 0.5 and op["prevalence_source"].startswith("sample")
    op3 = mt.operating_point(labels, scores, cost_ratio=3.0)
    assert op3["threshold"] == 0.4 and (op3["mr"], op3["far"]) == (0.0, 0.5)
    op_rare = mt.operating_point(labels, scores, cost_ratio=3.0, prevalence=0.1)
    assert op_rare["threshold"] == 0.9 and op_rare["expected_cost"] == pytest.approx(0.15)
    with pytest.raises(ValueError):
        mt.operating_point(labels, scores, cost_ratio=0)
    with pytest.raises(ValueError):
        mt.operating_point(labels, scores, prevalence=1.0)
    assert mt.operating_point([B, B], [0.1, 0.2]) is None


def test_operating_point_is_the_brute_force_minimum():
    rng = np.random.default_rng(9)
    y = rng.integers(0, 2, 300)
    s = rng.random(300).round(2)
    for ratio, prev in ((1.0, None), (5.0, 0.2), (0.3, 0.7)):
        op = mt.operating_point(y, s, ratio, prev)
        p = y.mean() if prev is None else prev
        best = min(
            ratio * p * (1 - ((s >= t) & (y == 1)).sum() / y.sum())
            + (1 - p) * ((s >= t) & (y == 0)).sum() / (1 - y).sum()
            for t in list(np.unique(s)) + [np.inf]
        )
        assert op["expected_cost"] == pytest.approx(best)
