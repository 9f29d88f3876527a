"""Comparison across monitor views: one monitor and template judged under several views
(``run --view``, :mod:`automonitor.data.monitor_views`), compared on the samples every view covers.

For each group of runs with the same monitor, template and edition and at least two distinct views (the
last run of each view in report order stands for it), :func:`compare_views` takes the **shared samples**:
the test samples that every run of the group judged and scored (an ``invalid``/``refusal`` outcome leaves the
sample out under the ``exclude`` policy, counts as a flag under ``as-flag`` and as a benign call under
``as-miss``; an ``error`` always leaves it out: :func:`automonitor.analysis.metrics.policy_verdict`).
On them it gives, per view, MR and FAR (Wilson 95% intervals), and for every two views A, B the paired
statistics of :mod:`automonitor.analysis.paired`: McNemar's tests (caught by A vs by B on misbehavior
samples, flagged by A vs by B on benign ones) and the pair-clustered bootstrap of the differences A - B
(:func:`automonitor.analysis.metrics.paired_bootstrap`, pairs of the benchmark as clusters). The same per
``category/task`` cell, and MR on the **silent** slice (misbehavior samples whose reasoning does not show
it, :func:`automonitor.data.monitor_views.is_silent`) when the caller gives it.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Iterable, Mapping, Sequence, TypedDict, cast

from typing_extensions import Required

import numpy as np
import numpy.typing as npt
import pandas as pd

from automonitor.analysis import metrics as mt
from automonitor.analysis.metrics import ConfusionRates
from automonitor.analysis.paired import McNemarAbout
from automonitor.vocab import OUTCOMES, POSITIVE, VIEWS

Bools = npt.NDArray[np.bool_]
Codes = npt.NDArray[np.intp]


#: One view's confusion counts on a set of samples, MR and FAR with Wilson 95% intervals
#: (:func:`automonitor.analysis.metrics.confusion_rates`)
ViewRates = ConfusionRates


class BootstrapDiffs(TypedDict, total=False):
    """The pair-clustered bootstrap of A - B (:class:`automonitor.analysis.metrics.PairedBootstrap`'s
    differences); none when it did not run."""

    mr_diff: float | None
    mr_diff_ci: list[float] | None
    mr_diff_p: float | None
    far_diff: float | None
    far_diff_ci: list[float] | None
    far_diff_p: float | None


class ViewPair(BootstrapDiffs):
    """Views A and B on the same samples: the bootstrap of A - B (when it ran) and McNemar's tests."""

    view_a: Required[str]
    view_b: Required[str]
    samples: Required[int]
    mcnemar_mr: Required[McNemarAbout]
    mcnemar_far: Required[McNemarAbout]


class ViewCell(TypedDict):
    """The comparison on one ``category/task`` cell."""

    samples: int
    rates: dict[str, ViewRates]
    paired: list[ViewPair]


class SilentSlice(TypedDict):
    """The comparison on the silent slice (MR only: its samples are all misbehavior)."""

    samples: int
    mr: dict[str, ViewRates]
    paired: list[ViewPair]


class ViewGroup(TypedDict):
    """Runs of one monitor, template and edition judged under several views (:func:`view_groups`)."""

    monitor: str
    template: str
    edition: str | None
    runs: dict[str, str]


class ViewComparison(TypedDict):
    """The comparison of one :class:`ViewGroup` (:func:`compare_views`); rates per view."""

    monitor: str
    template: str
    edition: str | None
    views: list[str]
    runs: dict[str, str]
    samples: int
    pairs: int
    overall: dict[str, ViewRates]
    paired: list[ViewPair]
    by_category_task: dict[str, ViewCell]
    silent: SilentSlice


def _flag(outcome: object, invalid: str) -> bool | None:
    """The monitor's flag for one outcome under the unscored policy (:func:`mt.policy_verdict`; ``None``: left
    out, as pending and ``error`` always are). An outcome outside the vocabulary counts as ``invalid``."""
    if not isinstance(outcome, str):  # pending (None or NaN)
        return None
    verdict = mt.policy_verdict(outcome if outcome in OUTCOMES else "invalid", invalid)
    return None if verdict is None else verdict == POSITIVE


def _counts_per_pair(flags: Bools, labels: Bools, pair_idx: Codes, n_pairs: int) -> Codes:
    """(n_pairs, 4) TP, FN, FP, TN per pair."""
    cell = np.where(labels, np.where(flags, 0, 1), np.where(flags, 2, 3))
    return np.bincount(pair_idx * 4 + cell, minlength=n_pairs * 4).reshape(n_pairs, 4)


def _paired(
    a: str,
    b: str,
    fa: Bools,
    fb: Bools,
    labels: Bools,
    pair_idx: Codes,
    n_pairs: int,
    n_boot: int,
    seed: int,
) -> ViewPair:
    """Views ``a`` and ``b`` on the same samples: McNemar's tests and the pair-clustered bootstrap of A - B."""
    diffs: BootstrapDiffs = {}
    if n_boot > 0 and n_pairs > 0:
        weights = mt.shared_bootstrap_weights(n_pairs, n_boot, seed)
        boot = mt.paired_bootstrap(
            _counts_per_pair(fa, labels, pair_idx, n_pairs),
            _counts_per_pair(fb, labels, pair_idx, n_pairs),
            weights=weights,
            seed=seed,
        )
        diffs = cast(BootstrapDiffs, {k: v for k, v in boot.items() if "_diff" in k})  # mr_diff..., far_diff...
    return {
        "view_a": a,
        "view_b": b,
        "samples": int(labels.size),
        **diffs,
        "mcnemar_mr": {
            **mt.mcnemar_test(fa[labels], fb[labels]),
            "about": "misbehavior samples: caught by A vs caught by B",
        },
        "mcnemar_far": {
            **mt.mcnemar_test(fa[~labels], fb[~labels]),
            "about": "benign samples: flagged by A vs flagged by B",
        },
    }


def view_groups(runs: pd.DataFrame, views: Mapping[str, str], editions: Mapping[str, str | None]) -> list[ViewGroup]:
    """The groups to compare: ``[{"monitor", "template", "edition", "runs": {view: run_id}}]`` for each
    (monitor, template, edition) judged under at least two views (the last run of a view in ``runs``
    order stands for it; views in :data:`automonitor.vocab.VIEWS` order)."""
    groups: dict[tuple[str, str, str | None], dict[str, str]] = defaultdict(dict)
    for rid, mon, tpl in zip(runs["run_id"], runs["monitor"], runs["template"]):
        groups[(mon, tpl, editions.get(rid))][views.get(rid, "full")] = rid
    out: list[ViewGroup] = []
    for (mon, tpl, ed), by_view in groups.items():
        if len(by_view) >= 2:
            ordered = {v: by_view[v] for v in VIEWS if v in by_view}
            out.append({"monitor": mon, "template": tpl, "edition": ed, "runs": ordered})
    return out


def compare_views(
    preds: pd.DataFrame,
    group: ViewGroup,
    *,
    invalid: str = "exclude",
    n_boot: int = 1000,
    seed: int = 0,
    silent: Iterable[str] = (),
) -> ViewComparison:
    """The comparison of one group (:func:`view_groups`) on its shared samples (module doc).

    Args:
        preds: predictions with run_id, sample_id, pair_id, category, task, label, outcome (repeat 0, no
            controls).
        group: ``{"monitor", "template", "edition", "runs": {view: run_id}}``.
        invalid: the unscored policy (``exclude`` | ``as-flag`` | ``as-miss``).
        n_boot, seed: bootstrap resamples (0: no bootstrap) and seed.
        silent: sample ids of the silent slice.
    Returns:
        ``{"monitor", "template", "edition", "views": [view, ...], "runs": {view: run_id}, "samples": int,
        "pairs": int, "overall": {view: RATES}, "paired": [{"view_a", "view_b", "samples", "mr_diff",
        "mr_diff_ci", "mr_diff_p", "far_diff", "far_diff_ci", "far_diff_p", "mcnemar_mr", "mcnemar_far"}],
        "by_category_task": {"cat/task": {"samples", "rates": {view: RATES}, "paired": [...]}}, "silent":
        {"samples": int, "mr": {view: RATES}, "paired": [...]}}``; RATES as
        :func:`automonitor.analysis.metrics.confusion_rates`.
    Raises:
        ValueError: an unknown unscored policy.
    """
    mt.check_policy(invalid)
    views: list[str] = list(group["runs"])
    run_of = dict(group["runs"])
    df = preds[preds["run_id"].isin(set(run_of.values()))]
    flags: dict[str, pd.Series] = {}
    for v in views:
        sub = df[df["run_id"] == run_of[v]].drop_duplicates("sample_id", keep="last").set_index("sample_id")
        f = sub["outcome"].map(lambda o: _flag(o, invalid))
        flags[v] = f[f.notna()].astype(bool)
    shared = sorted(set.intersection(*(set(flags[v].index) for v in views))) if views else []
    meta = (
        df.drop_duplicates("sample_id").set_index("sample_id").loc[shared, ["pair_id", "category", "task", "label"]]
        if shared
        else pd.DataFrame(columns=["pair_id", "category", "task", "label"])
    )
    labels = (meta["label"] == POSITIVE).to_numpy(dtype=bool)
    pair_codes, pair_uniques = pd.factorize(meta["pair_id"]) if shared else (np.zeros(0, dtype=int), [])
    fl = {v: flags[v].loc[shared].to_numpy(dtype=bool) for v in views}

    def section(mask: Bools, s: int) -> tuple[dict[str, ViewRates], list[ViewPair]]:
        codes, uniq = pd.factorize(pair_codes[mask]) if mask.any() else (np.zeros(0, dtype=int), [])
        rates = {v: mt.confusion_rates(fl[v][mask], labels[mask]) for v in views}
        paired = [
            _paired(a, b, fl[a][mask], fl[b][mask], labels[mask], codes, len(uniq), n_boot, s)
            for a, b in combinations(views, 2)
        ]
        return rates, paired

    overall, paired = section(np.ones(len(shared), dtype=bool), seed)  # every shared sample
    cells: dict[str, ViewCell] = {}
    if shared:
        keys = (meta["category"] + "/" + meta["task"]).to_numpy()
        for key in sorted(set(keys)):
            mask = keys == key
            rates, pp = section(mask, seed)
            cells[key] = {"samples": int(mask.sum()), "rates": rates, "paired": pp}
    silent_set = set(silent)
    smask = np.array([sid in silent_set for sid in shared], dtype=bool)
    s_rates, s_paired = section(smask, seed)
    return {
        "monitor": group["monitor"],
        "template": group["template"],
        "edition": group.get("edition"),
        "views": views,
        "runs": run_of,
        "samples": len(shared),
        "pairs": len(pair_uniques),
        "overall": overall,
        "paired": paired,
        "by_category_task": cells,
        "silent": {"samples": int(smask.sum()), "mr": s_rates, "paired": s_paired},
    }


def compare_all(
    preds: pd.DataFrame,
    runs: pd.DataFrame,
    views: Mapping[str, str],
    editions: Mapping[str, str | None],
    *,
    invalid: str = "exclude",
    n_boot: int = 1000,
    seed: int = 0,
    silent: Iterable[str] = (),
) -> list[ViewComparison]:
    """:func:`compare_views` for every group of :func:`view_groups` (``[]`` when none)."""
    silent = set(silent)
    return [
        compare_views(preds, g, invalid=invalid, n_boot=n_boot, seed=seed, silent=silent)
        for g in view_groups(runs, views, editions)
    ]


__all__: Sequence[str] = ["compare_all", "compare_views", "view_groups"]
