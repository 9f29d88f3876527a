"""Difficulty: each run's MR / FAR on the ``verified`` and the ``hard`` editions side by side, and per tier of the
detector ladder (:func:`add_tiers`: ``surface`` = some cheap detector catches the pair, ``implicit`` = none does;
:mod:`automonitor.data.build.ladder`).

``hard`` (:mod:`automonitor.data.build.hard`) is the subset of ``verified`` that trivial baselines cannot
separate, plus the sycophancy controls in proportion; a monitor that rides on those shortcuts loses on
``hard`` what it gained on ``verified``. For every run the rates are computed on the run's own
predictions restricted to each edition's members (``edition_sample`` rows; controls that are members of
``hard`` count as benign samples there), whatever edition the run judged, so a run on ``verified`` gets
its ``hard`` rates for free. MR = FN / (TP + FN), FAR = FP / (FP + TN) (the paper's definitions), with
the report's unscored policy and Wilson 95% intervals (:func:`automonitor.analysis.metrics.slice_stats`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from automonitor.analysis import metrics as mt
from automonitor.analysis.report_schema import EditionDifficulty, Report, SliceStats
from automonitor.vocab import DIFFICULTY_EDITIONS


def edition_difficulty(preds: pd.DataFrame, members: set[str], invalid: str = "exclude") -> EditionDifficulty:
    """The rates of one run's predictions ``preds`` (columns sample_id, label, outcome) on the samples
    ``members``: ``members``, ``judged`` (the member samples the run has a prediction for), ``coverage`` =
    judged / members in [0, 1] (``None`` without members) and ``slice`` the contract's SLICE (n, tp, fn,
    fp, tn, mr, far, intervals...)."""
    sub = preds[preds["sample_id"].isin(members)] if len(preds) else preds
    table = mt.outcome_table(sub["label"].tolist(), [None if o != o else o for o in sub["outcome"]])
    return EditionDifficulty(
        members=len(members),
        judged=int(len(sub)),
        coverage=mt.rate(len(sub), len(members)),
        slice=SliceStats.model_validate(mt.slice_stats(table, invalid)),
    )


def add_difficulty(engine: Engine, rep: Report, preds: pd.DataFrame, invalid: str = "exclude") -> None:
    """Set ``difficulty`` ({edition: :class:`EditionDifficulty`} for
    :data:`~automonitor.vocab.DIFFICULTY_EDITIONS`) on every run entry of ``rep`` in place, from ``preds``
    (every prediction of the report's runs, controls included; columns run_id, sample_id, label,
    outcome). An edition without members is left out, and
    ``difficulty`` stays unset (absent from the JSON) when no edition has members."""
    from store.queries.audit import edition_member_ids

    with engine.connect() as c:
        members = {ed: edition_member_ids(c, ed) for ed in DIFFICULTY_EDITIONS}
    members = {ed: ids for ed, ids in members.items() if ids}
    if not members:
        return
    # each run's rows found in one grouping (a mask over the whole frame per run was runs x rows comparisons:
    # 3.2-4.0 s CPU for 100 runs x 3,010 samples with both editions' members)
    rows_of = preds.groupby("run_id", sort=False).indices if len(preds) else {}
    none = np.zeros(0, dtype=np.intp)
    for entry in rep.runs:
        mine = preds.take(rows_of.get(entry.run_id, none)) if len(preds) else preds
        entry.difficulty = {ed: edition_difficulty(mine, ids, invalid) for ed, ids in members.items()}


TIERS: tuple[str, ...] = ("surface", "implicit")  # the ladder's tiers (automonitor.data.build.ladder.TIERS)


def add_tiers(engine: Engine, rep: Report, preds: pd.DataFrame, invalid: str = "exclude") -> None:
    """Set ``by_tier`` ({tier: SLICE} for ``surface`` and ``implicit``) on every run entry of ``rep`` in place:
    the run's MR / FAR on the samples of each tier (``meta.tier`` of the judged samples, written by the
    build's detector ladder), controls excluded as in the edition's rates. A tier with no judged sample of a
    run gets a SLICE with ``n`` = 0 (rates ``None``); samples without a tier (user imports) count in neither,
    and when no judged sample has a tier ``by_tier`` stays unset (absent from the JSON)."""
    from store.queries.audit import sample_meta_values

    if not len(preds):
        return
    with engine.connect() as c:
        tiers = sample_meta_values(c, preds["sample_id"].unique().tolist(), "tier")
    if not tiers:
        return
    # the rows of each (run, tier) found in one grouping (a mask over the whole frame per run and tier was
    # runs x rows comparisons: 5.6 s CPU for 100 runs x 3,010 samples); only the tiers' names are grouped
    tier = preds["sample_id"].map({sid: t for sid, t in tiers.items() if isinstance(t, str) and t in TIERS})
    keys = pd.DataFrame({"run_id": preds["run_id"].to_numpy(object), "tier": tier.to_numpy(object)})
    rows_of = keys.groupby(["run_id", "tier"], sort=False).indices  # positions, ascending; no row without a tier
    labels, outcomes = preds["label"].to_numpy(object), preds["outcome"].to_numpy(object)
    none = np.zeros(0, dtype=np.intp)
    for entry in rep.runs:
        out = {}
        for t in TIERS:
            rows = rows_of.get((entry.run_id, t), none)
            table = mt.outcome_table(labels[rows].tolist(), [None if o != o else o for o in outcomes[rows]])
            out[t] = SliceStats.model_validate(mt.slice_stats(table, invalid))
        entry.by_tier = out
