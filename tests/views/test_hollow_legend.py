"""The legend's words for a template's hollow runs say why they are hollow (too few samples, a partial import,
or both among them): a partial imported run is not called a run with too few samples."""

from __future__ import annotations

import pandas as pd
import pytest

from automonitor.runs.coverage import PARTIAL_NOT_ELIGIBLE
from automonitor.views.figures import hollow_legend
from automonitor.views.honest_points import TOO_FEW


@pytest.mark.parametrize(
    ("reasons", "words"),
    [
        (None, "too few samples"),  # a frame without reasons (the plane before honest_points)
        (["", TOO_FEW], "too few samples"),
        ([PARTIAL_NOT_ELIGIBLE, PARTIAL_NOT_ELIGIBLE], "partial import"),
        ([PARTIAL_NOT_ELIGIBLE, TOO_FEW], "not eligible"),
        ([PARTIAL_NOT_ELIGIBLE, None], "not eligible"),
    ],
)
def test_hollow_legend_names_the_reason(reasons, words):
    d = pd.DataFrame({"run_id": ["a", "b"]})
    if reasons is not None:
        d["not_eligible"] = reasons
    assert hollow_legend(d) == words
