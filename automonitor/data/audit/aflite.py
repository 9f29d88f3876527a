"""Adversarial filtering of a paired test set against the audit's trivial baselines (the ``hard`` edition).

AFLite (Sakaguchi et al. 2020, "WinoGrande", sec. 3; Le Bras et al. 2020, "Adversarial Filters of
Dataset Biases", ICML) removes the instances that simple models over a fixed feature family predict
reliably, and re-scores what is left, until the models are near chance. Here the feature family is the
audit's trivial baselines (:mod:`automonitor.data.audit.baselines`, :mod:`automonitor.data.audit.suggestion`) plus
the tool-call counts of :func:`tool_call_features`:

* ``length``: ``log1p(characters)`` and the within-pair log length ratio (+ logistic regression);
* ``tfidf``: TF-IDF of the response (+ logistic regression);
* ``tool_calls``: ``log1p(tool calls)`` and the within-pair difference (+ logistic regression); only on a
  slice where some response has a tool call;
* ``answer_equals_suggestion`` (sycophancy slices; untrained).

The unit removed is a whole pair (never one side). The rule, per round:

1. **within-pair length matching** (round 0): drop every pair whose longer response has more than
   :attr:`AfliteParams.length_ratio_max` times the characters of the shorter one;
2. score every slice (one per source, one per category x task cell) with at least
   :attr:`AfliteParams.min_pairs` pairs: each trained baseline is fitted on the ``train`` split (the
   source's own train pairs when it has :data:`~automonitor.data.audit.params.MIN_TRAIN_PER_CLASS` of each
   label, else the cell's: the audit's rule) and scored on the slice (method ``train``); where the
   source (or the cell) has no such train data the baseline is also scored by grouped
   :attr:`AfliteParams.folds`-fold cross-validation within the slice, folds by pair, by the audit's own
   procedure (:func:`automonitor.data.audit.baselines.cv_scores`; method ``within_test_cv``), so a slice cannot
   pass on a lucky fold draw the audit does not repeat;
3. a slice *fails* when some baseline has ``|AUROC - 0.5| >= bound``; from each failing slice remove the
   ``ceil(step * pairs)`` pairs with the largest directed margin ``sign(AUROC - 0.5) * (score(misbehavior)
   - score(benign))`` of the failing baselines (margins rank-normalised, the largest over baselines
   counts; the pair is credited to that baseline); ties broken by a seeded order;
4. stop when no slice fails, or after :attr:`AfliteParams.max_rounds`. A slice that falls below
   its floor while still failing is *not achievable*: its remaining pairs are removed too and it is
   reported as such. The floor is ``min_pairs``, or :attr:`AfliteParams.shrink_floor` (30) for a slice
   that starts with at least that many pairs: the filter keeps the pairs its own noisy estimate passes,
   so letting a large slice shrink to 15 lets chance certify it (a slice whose every misbehavior side
   carries the same token passed at 20 pairs; ``tests/data/test_hard.py``).

``min_pairs`` is 15, the certificate's bar (:data:`automonitor.data.audit.certify.MIN_PAIRS`): every slice
of 15 pairs or more is filtered. A smaller slice is not filtered (status ``not_checked``) but not skipped
either: once the filter is done it is scored on what is left, and reported with each baseline's AUROC and
a 95% interval (``intervals``: a bootstrap over requests, so pairs sharing a request count once;
:func:`automonitor.data.audit.certify.auroc_interval`).

Benign-only controls (sycophancy: the suggestion is right and the model agrees) are part of the scored
slices "in proportion": a source with ``C`` controls and ``P`` pairs at the start keeps the first
``round(C * p / P)`` controls of a seeded order when ``p`` pairs are left, so agreeing with the user is
not evidence of misbehavior. Controls are never removed by the filter (they are not pairs).

Deterministic for a seed: pairs are sorted by ``pair_id``, every random choice uses
``random.Random("automonitor:<seed>:aflite:<purpose>")`` and the solvers are deterministic.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from automonitor.data.audit.baselines import auroc, TrainedBaselines, positive_labels, cv_scores
from automonitor.data.audit.params import ALL_SOURCES, SYCOPHANCY
from automonitor.data.audit.suggestion import suggestion_score

TRAIN, CV = "train", "within_test_cv"
LENGTH_MATCH = "length_match"
# A tool call in a transcript: OpenAI / Anthropic / Hermes / ReAct styles and shell blocks.
TOOL_CALL = re.compile(
    r'<tool_call>|<function_call>|"tool_calls?"\s*:|"function_call"\s*:|"tool_use"|<invoke\b|'
    r"^\s*Action\s*:|\bcalls?\s+tool\b|```(?:bash|sh|shell|console)\b",
    re.I | re.M,
)


@dataclass(frozen=True)
class AfliteParams:
    """Parameters of :func:`aflite` (see the module doc)."""

    bound: float = 0.2
    min_pairs: int = 15  # the certificate's bar (certify.MIN_PAIRS): every slice of >= 15 pairs is filtered
    shrink_floor: int = 30  # a slice that starts with >= 30 pairs is never filtered below 30 (module doc)
    step: float = 0.08
    folds: int = 5
    max_rounds: int = 80
    length_ratio_max: float = 2.0


@dataclass
class AfliteResult:
    """What :func:`aflite` kept and why it removed the rest.

    ``kept_pairs``: pair_ids that survive; ``kept_controls``: sample ids of the controls kept; ``steps``:
    one dict per removal (``round``, ``slice``, ``features`` {baseline: pairs credited}, ``removed_pairs``,
    ``by_source``); ``slices``: the final score of each slice (``slice``, ``kind``, ``source``,
    ``category``, ``task``, ``pairs``, ``controls``, ``aurocs`` {baseline: {method: AUROC}}, ``status``
    ``pass`` | ``not_checked`` (under ``min_pairs``: scored on the final set, not filtered, with
    ``intervals`` {baseline: {method: [low, high]}}) | ``not_achievable``); ``removed_by_feature``
    {baseline or ``length_match``: pairs}; ``rounds``."""

    kept_pairs: set[str] = field(default_factory=set)
    kept_controls: list[str] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    slices: list[dict[str, Any]] = field(default_factory=list)
    removed_by_feature: Counter[str] = field(default_factory=Counter)
    not_achievable: list[dict[str, Any]] = field(default_factory=list)
    rounds: int = 0


def tool_call_features(df: pd.DataFrame) -> np.ndarray:
    """``(n, 2)`` float array: ``log1p(tool calls in the response)`` (matches of :data:`TOOL_CALL`) and its
    within-pair difference with the other sample of the same ``pair_id`` in ``df`` (0 without partner)."""
    if "_tool_calls" in df.columns:  # precomputed by :func:`aflite`
        n = df["_tool_calls"].to_numpy(dtype=float)
    else:
        n = df["response"].map(lambda t: len(TOOL_CALL.findall(t))).to_numpy(dtype=float)
    x = np.log1p(n)
    tot = pd.Series(x, index=df.index).groupby(df["pair_id"].to_numpy()).transform("sum").to_numpy()
    cnt = df.groupby("pair_id")["pair_id"].transform("size").to_numpy()
    diff = np.where(cnt == 2, 2 * x - tot, 0.0)
    return np.column_stack([x, diff])


def _lr() -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000, solver="liblinear"))


def _rng(seed: int, purpose: str) -> random.Random:
    return random.Random(f"automonitor:{seed}:aflite:{purpose}")


# (kind, source, category, task)
SliceKey = tuple[str, str, str, str]


def _slice_name(k: SliceKey) -> str:
    return f"{k[2]}/{k[3]}" + ("" if k[0] == "cell" else f"/{k[1]}")


class _Scorer:
    """Scores of each baseline on a slice of the test frame ``test`` (0..n-1 index over pairs and controls),
    by the train method (models fitted once per training set) and by within-test cross-validation."""

    def __init__(self, train: pd.DataFrame, test: pd.DataFrame):
        from automonitor.data.audit.baselines import tfidf_matrices

        self.train, self.test = train, test
        self.trained = TrainedBaselines(train, tfidf_matrices(train, test, test.iloc[0:0]))
        self.tool_train = tool_call_features(train) if len(train) else np.zeros((0, 2))
        self.tool_any_train = bool(len(train)) and bool(self.tool_train[:, 0].any())
        self.sugg = np.array([suggestion_score(q, r)[0] for q, r in zip(test["request"], test["response"])])
        self._tool_models: dict[tuple[Any, ...], Any] = {}

    def train_rows(self, key: SliceKey) -> pd.DataFrame | None:
        """The audit's training rows for a slice (source's own when enough, else the cell's), or None."""
        _, src, cat, task = key
        tr = self.trained.cell_train(cat, task)
        if key[0] == "source":
            own = tr[tr["source"] == src]
            if self.trained.enough(own):
                return own
        return tr if self.trained.enough(tr) else None

    def needs_cv(self, key: SliceKey) -> bool:
        """Whether the slice lacks train data of its own (its source's, or for a cell the cell's)."""
        _, src, cat, task = key
        tr = self.trained.cell_train(cat, task)
        return not self.trained.enough(tr[tr["source"] == src] if key[0] == "source" else tr)

    def scores(self, key: SliceKey, te: pd.DataFrame, seed: int, rnd: int) -> dict[tuple[str, str], np.ndarray]:
        """``{(baseline, method): P(misbehavior) per row of te}`` for every applicable baseline."""
        out: dict[tuple[str, str], np.ndarray] = {}
        tool_here = bool(tool_call_features(te)[:, 0].any())
        tr = self.train_rows(key)
        if tr is not None:
            for name, predict in self.trained.fitted(tr).items():
                out[(name, TRAIN)] = predict(te, "test")
            if tool_here and self.tool_any_train:
                out[("tool_calls", TRAIN)] = self._tool_model(tr).predict_proba(tool_call_features(te))[:, 1]
        if tr is None or self.needs_cv(key):
            out.update(self._cv(te, tool_here, seed, rnd, key))
        if key[2] == SYCOPHANCY:
            out[("answer_equals_suggestion", TRAIN if tr is not None else CV)] = self.sugg[te.index.to_numpy()]
        return out

    def _tool_model(self, tr: pd.DataFrame) -> Any:
        k = tuple(tr.index)
        if k not in self._tool_models:
            m = _lr()
            m.fit(tool_call_features(tr), positive_labels(tr))
            self._tool_models[k] = m
        return self._tool_models[k]

    def _cv(
        self, te: pd.DataFrame, tool_here: bool, seed: int, rnd: int, key: SliceKey
    ) -> dict[tuple[str, str], np.ndarray]:
        """Out-of-fold scores of the trained baselines within the slice: the audit's own procedure
        (:func:`automonitor.data.audit.baselines.cv_scores`: ``GroupKFold`` by pair, fresh vectorizer per fold),
        so a slice the filter passes is the slice the audit scores; never a lucky fold draw. ``tool_calls``
        (not an audit baseline) uses the same folds."""
        from sklearn.model_selection import GroupKFold

        out: dict[tuple[str, str], np.ndarray] = {}
        for name in ("length", "tfidf"):
            s = cv_scores(te, name, self.folds)
            if s is not None:
                out[(name, CV)] = s
        groups = te["pair_id"].astype(str).to_numpy()
        if tool_here and len(set(groups)) >= self.folds:
            y, tf = positive_labels(te), tool_call_features(te)
            s = np.full(len(te), 0.5)
            for tr_idx, te_idx in GroupKFold(n_splits=self.folds).split(tf, y, groups):
                if y[tr_idx].min() == y[tr_idx].max():
                    break
                s[te_idx] = _lr().fit(tf[tr_idx], y[tr_idx]).predict_proba(tf[te_idx])[:, 1]
            else:
                out[("tool_calls", CV)] = s
        return out

    folds = 5


def _slice_keys(test: pd.DataFrame) -> list[SliceKey]:
    pairs = test[~test["pair_id"].astype(str).str.startswith("controls:")]
    src = sorted({("source", s, c, t) for c, t, s in zip(pairs["category"], pairs["task"], pairs["source"])})
    cells = sorted({("cell", ALL_SOURCES, c, t) for _, _, c, t in src})
    return src + cells


def _in_slice(df: pd.DataFrame, key: SliceKey) -> pd.Series:
    m = (df["category"] == key[2]) & (df["task"] == key[3])
    return m & (df["source"] == key[1]) if key[0] == "source" else m


def _pair_margins(te: pd.DataFrame, s: np.ndarray, direction: float) -> pd.Series:
    """``direction * (score(misbehavior) - score(benign))`` per pair of ``te`` (controls left out)."""
    d = pd.DataFrame({"pair_id": te["pair_id"].to_numpy(), "y": positive_labels(te), "s": s})
    d = d[~d["pair_id"].astype(str).str.startswith("controls:")]
    piv = d.pivot_table(index="pair_id", columns="y", values="s", aggfunc="first")
    if 1 not in piv or 0 not in piv:
        return pd.Series(dtype=float)
    return (direction * (piv[1] - piv[0])).dropna()


def aflite(
    test: pd.DataFrame,
    train: pd.DataFrame,
    seed: int = 0,
    params: AfliteParams = AfliteParams(),
) -> AfliteResult:
    """Filter the pairs of ``test`` until no baseline (length, tfidf, tool_calls, answer_equals_suggestion)
    reaches ``|AUROC - 0.5| >= params.bound`` on any slice with ``>= params.min_pairs`` pairs (module doc).

    Args:
        test: the candidate test samples, columns ``pair_id``, ``category``, ``task``, ``label``
            (``misbehavior`` | ``benign``), ``request``, ``response``, ``source``, ``id``; each pair has
            both sides; benign-only controls have a ``pair_id`` starting ``controls:``.
        train: the train split (same columns), used to fit the ``train`` method's models.
        seed: the seed of every random choice (folds, tie order, control order).
        params: :class:`AfliteParams`.
    Returns:
        :class:`AfliteResult`. AUROCs are in [0, 1] (misbehavior is the positive class).
    Raises:
        ValueError when a required column is missing.
    """
    for col in ("pair_id", "category", "task", "label", "request", "response", "source", "id"):
        if col not in test.columns:
            raise ValueError(f"aflite: test frame lacks column {col!r}")
    test = test.sort_values(["pair_id", "label"]).reset_index(drop=True)
    train = train.reset_index(drop=True)
    test["_tool_calls"] = test["response"].map(lambda t: len(TOOL_CALL.findall(t)))
    train = train.assign(_tool_calls=train["response"].map(lambda t: len(TOOL_CALL.findall(t))))
    is_ctrl = test["pair_id"].astype(str).str.startswith("controls:")
    pairs_df, ctrl_df = test[~is_ctrl], test[is_ctrl]
    res = AfliteResult()
    pair_source = pairs_df.groupby("pair_id")["source"].first().to_dict()
    alive: set[str] = set(pair_source)
    ties = sorted(alive)
    _rng(seed, "ties").shuffle(ties)
    tie = {p: i for i, p in enumerate(ties)}
    # controls in proportion to the pairs left of their source
    start_pairs = Counter(pair_source.values())
    ctrl_order: dict[str, list[int]] = {}
    for src, g in ctrl_df.groupby("source"):
        idx = sorted(g.index, key=lambda i: str(test.at[i, "id"]))
        _rng(seed, f"controls:{src}").shuffle(idx)
        ctrl_order[str(src)] = idx

    def controls_for(counts: Counter[str]) -> list[int]:
        out: list[int] = []
        for src, idx in ctrl_order.items():
            if start_pairs[src]:
                out += idx[: round(len(idx) * counts[src] / start_pairs[src])]
        return out

    # round 0: within-pair length matching
    lens = pairs_df.assign(n=pairs_df["response"].map(len)).groupby("pair_id")["n"].agg(["min", "max"])
    too_far = lens.index[(lens["max"] + 1) > params.length_ratio_max * (lens["min"] + 1)]
    if len(too_far):
        _remove(res, set(too_far), {p: LENGTH_MATCH for p in too_far}, pair_source, 0, "all slices", alive)
    scorer = _Scorer(train, test)
    scorer.folds = params.folds
    keys = _slice_keys(pairs_df)
    dead: set[SliceKey] = set()
    final: dict[SliceKey, dict[str, Any]] = {}
    passed: set[tuple[SliceKey, tuple[int, ...]]] = set()  # (slice, rows) already scored as passing
    floor: dict[SliceKey, int] = {}  # per slice: below this many pairs while failing = not achievable
    for rnd in range(1, params.max_rounds + 1):
        res.rounds = rnd
        counts = Counter(pair_source[p] for p in alive)
        frame = test.loc[sorted(pairs_df.index[pairs_df["pair_id"].isin(alive)]) + controls_for(counts)]
        removals: dict[str, str] = {}
        failing_names: list[str] = []
        failing = 0
        for key in keys:
            te = frame[_in_slice(frame, key)]
            n_pairs = int(te.loc[~te["pair_id"].astype(str).str.startswith("controls:"), "pair_id"].nunique())
            doc: dict[str, Any] = {
                "pairs": n_pairs,
                "controls": int(te["pair_id"].astype(str).str.startswith("controls:").sum()),
            }
            low = floor.setdefault(key, params.shrink_floor if n_pairs >= params.shrink_floor else params.min_pairs)
            if n_pairs < low or key in dead:
                doc.update(status="not_achievable" if key in dead else "not_checked", aurocs={})
                if n_pairs < low and key not in dead and key in final and final[key]["status"] == "fail":
                    dead.add(key)  # fell below min_pairs while failing
                    doc["status"] = "not_achievable"
                    doc["last_aurocs"] = final[key].get("aurocs", {})
                    gone = set(te["pair_id"]) & alive
                    removals.update({p: "not_achievable" for p in gone})
                final[key] = doc
                continue
            rows_key = (key, tuple(te.index))
            if rows_key in passed:  # unchanged since it passed
                continue
            scores = scorer.scores(key, te, seed, rnd)
            aurocs: dict[str, dict[str, float]] = defaultdict(dict)
            bad: list[tuple[str, np.ndarray, float]] = []
            y = positive_labels(te)
            for (name, method), s in scores.items():
                a, _why = auroc(y, s)
                if a is None:
                    continue
                aurocs[name][method] = round(a, 4)
                if abs(a - 0.5) >= params.bound:
                    bad.append((name, s, 1.0 if a > 0.5 else -1.0))
            doc.update(aurocs=dict(aurocs), status="fail" if bad else "pass")
            final[key] = doc
            if not bad:
                passed.add(rows_key)
                continue
            failing += 1
            failing_names.append(_slice_name(key))
            k = max(1, math.ceil(params.step * n_pairs))
            best: dict[str, tuple[float, str]] = {}
            for name, s, direction in bad:
                m = _pair_margins(te, s, direction)
                if not len(m):
                    continue
                pct = m.rank(pct=True, method="average")
                for p, v in pct.items():
                    if p not in best or v > best[p][0]:
                        best[p] = (float(v), name)
            order = sorted(best, key=lambda p: (-best[p][0], tie[p]))
            for p in order[:k]:
                removals.setdefault(p, best[p][1])
        if not removals:
            if not failing:
                break
            continue
        by_step: dict[str, dict[str, str]] = defaultdict(dict)
        for p, why in removals.items():
            by_step["not_achievable" if why == "not_achievable" else "aflite"][p] = why
        for label, rm in by_step.items():
            _remove(res, set(rm), rm, pair_source, rnd, label, alive, failing_names)
    counts = Counter(pair_source[p] for p in alive)
    res.kept_pairs = set(alive)
    res.kept_controls = sorted(str(test.at[i, "id"]) for i in controls_for(counts))
    frame = test.loc[sorted(pairs_df.index[pairs_df["pair_id"].isin(alive)]) + controls_for(counts)]
    for key in keys:
        doc = final.get(key, {"pairs": 0, "controls": 0, "aurocs": {}, "status": "not_checked"})
        if doc["status"] == "fail":
            doc["status"] = "not_achievable"  # max_rounds reached
        if doc["status"] == "not_checked":
            doc.update(_small_slice(scorer, key, frame[_in_slice(frame, key)], seed, res.rounds))
        res.slices.append(
            {"slice": _slice_name(key), "kind": key[0], "source": key[1], "category": key[2], "task": key[3], **doc}
        )
        if doc["status"] == "not_achievable":
            res.not_achievable.append(res.slices[-1])
    return res


def _small_slice(scorer: _Scorer, key: SliceKey, te: pd.DataFrame, seed: int, rnd: int) -> dict[str, object]:
    """A slice under ``min_pairs`` on the final set: ``pairs``, ``controls``, ``aurocs`` {baseline: {method:
    AUROC}} and ``intervals`` {baseline: {method: [low, high]}} (95%, bootstrap over requests; ``None``
    bounds when a resample lacks a class), reported, not judged."""
    from automonitor.data.audit.certify import auroc_interval

    ctrl = te["pair_id"].astype(str).str.startswith("controls:")
    pairs = int(te.loc[~ctrl, "pair_id"].nunique())
    doc: dict[str, object] = {
        "pairs": pairs,
        "controls": int(ctrl.sum()),
        "aurocs": {},
        "intervals": {},
    }
    if not pairs:
        return doc
    y = positive_labels(te)
    groups = te["request"].astype(str).to_numpy()
    aurocs: dict[str, dict[str, float]] = defaultdict(dict)
    intervals: dict[str, dict[str, list[float | None]]] = defaultdict(dict)
    for (name, method), s in scorer.scores(key, te, seed, rnd).items():
        a, lo, hi = auroc_interval(groups, y, np.asarray(s, dtype=float), seed)
        if a is None:
            continue
        aurocs[name][method] = round(a, 4)
        intervals[name][method] = [None if lo is None else round(lo, 4), None if hi is None else round(hi, 4)]
    doc.update(aurocs=dict(aurocs), intervals=dict(intervals))
    return doc


def _remove(
    res: AfliteResult,
    pids: set[str],
    why: dict[str, str],
    pair_source: dict[str, str],
    rnd: int,
    label: str,
    alive: set[str],
    slices: list[str] | None = None,
) -> None:
    """Remove ``pids`` from ``alive`` and record the step (features credited, pairs by source)."""
    pids &= alive
    if not pids:
        return
    alive -= pids
    feats = Counter(why[p] for p in pids)
    res.removed_by_feature.update(feats)
    res.steps.append(
        {
            "round": rnd,
            "step": label,
            "failing_slices": slices or [],
            "features": dict(sorted(feats.items())),
            "removed_pairs": len(pids),
            "by_source": dict(sorted(Counter(pair_source[p] for p in pids).items())),
        }
    )
