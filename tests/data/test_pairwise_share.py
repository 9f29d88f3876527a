"""The audit's vectorised :func:`~automonitor.data.audit.baselines.pairwise_share` gives the very float of
the per-pair loop it replaced (kept here as the reference) on generated pairs: incomplete pairs, pairs of
one label, pairs of three rows, ties, NaN scores and missing pair ids."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.data.audit.baselines import pairwise_share, positive_labels
from automonitor.vocab import NEGATIVE, POSITIVE


def loop_pairwise_share(te: pd.DataFrame, scores: np.ndarray) -> float | None:
    """The implementation before the vectorised one (one pandas group per pair)."""
    if len(te) == 0:
        return None
    frame = pd.DataFrame(
        {"pair": te["pair_id"].to_numpy(), "pos": positive_labels(te), "s": np.asarray(scores, dtype=float)}
    )
    wins: list[float] = []
    for _pid, g in frame.groupby("pair", sort=False):
        if len(g) != 2 or g["pos"].nunique() != 2:
            continue
        mis = float(g.loc[g["pos"] == 1, "s"].iloc[0])
        ben = float(g.loc[g["pos"] == 0, "s"].iloc[0])
        wins.append(1.0 if mis > ben else 0.5 if mis == ben else 0.0)
    return float(np.mean(wins)) if wins else None


row = st.tuples(
    st.one_of(st.sampled_from(["a", "b", "c", "d", "e", "f"]), st.none()),
    st.sampled_from([POSITIVE, NEGATIVE]),
    st.one_of(st.sampled_from([0.0, 0.5, 1.0, float("nan")]), st.floats(0, 1)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(row, max_size=30))
def test_vectorised_pairwise_share_equals_the_loop(rows):
    te = pd.DataFrame({"pair_id": [r[0] for r in rows], "label": [r[1] for r in rows]}, dtype=object)
    s = np.array([r[2] for r in rows], dtype=float)
    assert pairwise_share(te, s) == loop_pairwise_share(te, s)


def test_known_value():
    two = pd.DataFrame({"pair_id": ["a", "a", "b", "b", "c"], "label": [POSITIVE, NEGATIVE] * 2 + [POSITIVE]})
    assert pairwise_share(two, np.array([0.9, 0.1, 0.5, 0.5, 1.0])) == 0.75  # a win, a tie, c unpaired
