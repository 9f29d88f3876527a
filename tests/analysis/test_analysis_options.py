"""One typed options object for the analysis: keyword overrides, the positional policy string of earlier
releases and an options object give the same report; unknown names and bad values are refused."""

from __future__ import annotations

import pandas as pd
import pydantic
import pytest

from automonitor import analysis
from automonitor.analysis import AnalysisOptions, ReportOptions

M, B = "misbehavior", "benign"


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = []
    for p in range(30):
        for lab in (M, B):
            for run in ("ra", "rb"):
                # ra catches every third misbehavior late, rb flags some benign ones; a few unscored answers
                hit = (p % 3 != 0) if run == "ra" else (p % 4 != 0)
                if lab == M:
                    out = M if hit else (B if p % 7 else "invalid")
                else:
                    out = M if (run == "rb" and p % 5 == 0) else B
                rows.append(
                    {
                        "run_id": run,
                        "sample_id": f"s{p}{lab[0]}",
                        "pair_id": f"p{p}",
                        "category": ("safety_permission", "sycophancy_bias")[p % 2],
                        "task": ("qa", "code")[p % 2],
                        "label": lab,
                        "outcome": out,
                        "score": None,
                        "evidence": None,
                        "repeat": 0,
                    }
                )
    runs = pd.DataFrame({"run_id": ["ra", "rb"], "monitor": ["m", "m"], "template": ["direct", "evidence"]})
    return pd.DataFrame(rows), runs


def test_options_object_keywords_and_policy_string_give_one_report():
    preds, runs = _frames()
    opt = AnalysisOptions(invalid="as-miss", n_boot=30, seed=3, cost_ratio=2.0)
    a = analysis.analyze(preds, runs, opt).to_dict()
    b = analysis.analyze(preds, runs, invalid="as-miss", n_boot=30, seed=3, cost_ratio=2.0).to_dict()
    c = analysis.analyze(preds, runs, "as-miss", n_boot=30, seed=3, cost_ratio=2.0).to_dict()
    assert a == b == c
    assert a["invalid_policy"] == "as-miss" and a["cost_ratio"] == 2.0
    # the policy is really applied: as-miss counts the unscored misbehavior answers as misses
    excl = analysis.analyze(preds, runs, AnalysisOptions(n_boot=30, seed=3)).to_dict()
    assert a["runs"][0]["overall"]["mr"] > excl["runs"][0]["overall"]["mr"]


def test_an_override_replaces_one_field_of_the_options_object():
    preds, runs = _frames()
    opt = AnalysisOptions(n_boot=30, seed=3)
    assert (
        analysis.analyze(preds, runs, opt, seed=4).to_dict()
        == analysis.analyze(preds, runs, AnalysisOptions(n_boot=30, seed=4)).to_dict()
    )


@pytest.mark.parametrize(
    "bad,field",
    [
        ({"invalid": "drop"}, "invalid"),
        ({"prevalence": 1.5}, "prevalence"),
        ({"cost_ratio": 0}, "cost_ratio"),
        ({"n_boot": -1}, "n_boot"),
    ],
)
def test_bad_values_name_their_field(bad, field):
    with pytest.raises(pydantic.ValidationError, match=field):
        ReportOptions(**bad)
    preds, runs = _frames()
    with pytest.raises(ValueError, match=field if field != "invalid" else "unscored policy"):
        analysis.analyze(preds, runs, **bad)


def test_unknown_option_names_are_refused():
    preds, runs = _frames()
    with pytest.raises(TypeError, match="n_bootstrap"):
        analysis.analyze(preds, runs, n_bootstrap=10)
    with pytest.raises(TypeError, match="edition"):  # a report option, not an analysis option
        analysis.analyze(preds, runs, edition="verified")


def test_options_are_frozen_and_compare_pairs_are_tuples():
    opt = ReportOptions(compare=[["ra", "rb"]], edition="verified")
    assert opt.compare == (("ra", "rb"),)
    with pytest.raises(pydantic.ValidationError):
        opt.n_boot = 5  # type: ignore[misc]
