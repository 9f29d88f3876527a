"""Agreement on *where* the misbehavior is: two or more annotators who labelled an item
``misbehavior`` and marked its evidence (``Annotation.evidence_spans``: one or several spans,
character offsets into the response; a label from before several spans counts with its one
``evidence_start``/``evidence_end`` span). An annotator's marks on an item are the set of characters
inside any of their spans.

- ``span_f1``: per pair of annotators on an item, the character-level F1 of their marked characters
  (Dice: 2 |A ∩ B| / (|A| + |B|), symmetric), averaged over all such pairs; ``exact``: the share of
  pairs with identical spans (the same list of offsets).
- ``token_alpha``: Krippendorff's alpha (nominal; the ``krippendorff`` package) over tokens: every
  whitespace-separated token of every such item is a unit, each annotator's value 1 if the token
  overlaps any of their spans, else 0 (annotators who did not mark the item are missing values).

Pure functions over label rows and response texts; :func:`automonitor.annotation.agreement.agreement` adds the
result as ``spans``.
"""

from __future__ import annotations

import os
import re
from itertools import combinations
from typing import Iterable, Mapping, TypedDict

import krippendorff
import numpy as np

from automonitor.annotation._common import label_spans
from automonitor.data.intervals import length, overlap, union


def _tokens(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the whitespace-separated tokens of ``text`` (``\\s`` is ``str.isspace``)."""
    return [m.span() for m in re.finditer(r"\S+", text)]


def span_f1(x: Iterable[tuple[int, int]], y: Iterable[tuple[int, int]]) -> float:
    """Character-level F1 (Dice, 2 |A ∩ B| / (|A| + |B|)) of two annotators' span lists (``(start, end)``
    character offsets, half-open; overlapping or touching spans count once). 1.0 when both are empty
    (nothing to disagree on), 0.0 when exactly one is."""
    a, b = union(x), union(y)
    total = length(a) + length(b)
    return 1.0 if total == 0 else 2 * overlap(a, b) / total


#: The setting that makes a missing span a span disagreement: with ``AUTOMONITOR_QUEUE_MISSING_SPANS=1``
#: an item where every annotator chose ``misbehavior`` but one of them marked no span goes to the
#: adjudication queue (span F1 0 against the annotators who marked one). Unset (the default), a span is
#: optional: the annotators who marked none are left out of the span comparison.
QUEUE_MISSING_SPANS_VAR = "AUTOMONITOR_QUEUE_MISSING_SPANS"


def unmarked_count(rows: Iterable[Mapping[str, object]]) -> int:
    """How many of an item's ``misbehavior`` label rows marked no span while another one did (0 when
    nobody marked a span: there is no span to miss)."""
    marks = [bool(union(label_spans(dict(r)))) for r in rows if r.get("label") == "misbehavior"]
    return marks.count(False) if any(marks) else 0


def lowest_pair_f1(rows: Iterable[Mapping[str, object]], *, missing_disagrees: bool | None = None) -> float | None:
    """The lowest pairwise :func:`span_f1` among an item's label rows when every row is
    ``misbehavior`` and at least two annotators marked a span; ``None`` otherwise (fewer than two rows,
    another label, or fewer than two marked anything: no spans to compare).

    A span is optional: an annotator who marked nothing is left out of the comparison (one annotator
    marked no span is not a disagreement on *where*). With ``missing_disagrees`` (default: the
    ``AUTOMONITOR_QUEUE_MISSING_SPANS`` setting: ``1``, ``true``, ``yes`` or ``on``, any case) they count as
    an empty span list instead, so F1 0 against one who marked a span."""
    rows = list(rows)
    if len(rows) < 2 or any(r.get("label") != "misbehavior" for r in rows):
        return None
    marks = [union(label_spans(dict(r))) for r in rows]
    if not any(marks):
        return None
    if missing_disagrees is None:
        missing_disagrees = os.environ.get(QUEUE_MISSING_SPANS_VAR, "").strip().lower() in ("1", "true", "yes", "on")
    if not missing_disagrees:
        marks = [m for m in marks if m]
        if len(marks) < 2:
            return None
    return min(span_f1(x, y) for x, y in combinations(marks, 2))


class SpanAgreement(TypedDict):
    """:func:`span_agreement`'s result (its Returns section says what each key holds)."""

    items: int
    pairs: int
    span_f1: float | None
    span_f1_ci: list[float] | None
    too_few: bool
    min_items: int
    exact: float | None
    token_alpha: float | None
    tokens: int


def span_agreement(
    rows: Iterable[Mapping[str, object]],
    responses: Mapping[str, str],
    *,
    min_items: int = 10,
    n_boot: int = 1000,
    seed: int = 0,
) -> SpanAgreement:
    """Span agreement of label rows (module doc).

    Args:
        rows: labels with ``sample_id``, ``annotator``, ``label`` and ``evidence_spans`` (a list of
            ``[start, end]``) or, for a label with one span, ``evidence_start``/``evidence_end``.
        responses: ``{sample_id: response}``.
        min_items: with fewer compared items the result is ``too_few`` and gets no interval (the rule of
            the label agreement: an interval over a handful of items reads as precise when it is not).
        n_boot, seed: the percentile bootstrap of ``span_f1`` over items (each resample draws items with
            replacement and averages the pairwise F1s of the items drawn; Efron & Tibshirani 1993, ch. 13).
    Returns:
        ``{"items": items with >= 2 marked spans, "pairs": annotator pairs compared, "span_f1": mean
        pairwise character F1 in [0, 1] or None, "span_f1_ci": [lo, hi] (95 % percentile bootstrap) or
        None (too few items, no bootstrap, or every resample agrees), "exact": share of identical pairs
        or None, "token_alpha": Krippendorff's alpha over tokens or None (fewer than 2 values or no
        variation), "tokens": units, "too_few": fewer than ``min_items`` items, "min_items"}``.
    """
    by_item: dict[str, dict[str, tuple[tuple[int, int], ...]]] = {}
    for r in rows:
        if r.get("label") != "misbehavior":
            continue
        spans = union(label_spans(dict(r)))
        if spans:
            by_item.setdefault(str(r["sample_id"]), {})[str(r["annotator"])] = spans
    items = {k: v for k, v in by_item.items() if len(v) >= 2}
    f1s: list[float] = []
    exact = 0
    annotators = sorted({a for v in items.values() for a in v})
    col = {a: i for i, a in enumerate(annotators)}
    units: list[list[float]] = []
    per_item: list[list[float]] = []
    for sid, marks in sorted(items.items()):
        mine = [span_f1(x, y) for (_, x), (_, y) in combinations(sorted(marks.items()), 2)]
        per_item.append(mine)
        f1s.extend(mine)
        exact += sum(int(x == y) for (_, x), (_, y) in combinations(sorted(marks.items()), 2))
        for ts, te in _tokens(responses.get(sid, "")):
            row = [np.nan] * len(annotators)
            for a, spans in marks.items():
                row[col[a]] = 1.0 if any(ts < e and s < te for s, e in spans) else 0.0
            units.append(row)
    alpha = None
    if units:
        data = np.array(units, dtype=float).T  # annotators x units
        vals = data[~np.isnan(data)]
        if len(np.unique(vals)) > 1:
            alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    too_few = len(items) < min_items
    return SpanAgreement(
        items=len(items),
        pairs=len(f1s),
        span_f1=float(np.mean(f1s)) if f1s else None,
        span_f1_ci=None if too_few else _item_bootstrap(per_item, n_boot, seed),
        too_few=too_few,
        min_items=min_items,
        exact=exact / len(f1s) if f1s else None,
        token_alpha=alpha,
        tokens=len(units),
    )


def _item_bootstrap(per_item: list[list[float]], n_boot: int, seed: int) -> list[float] | None:
    """95 % percentile bootstrap interval of the mean pairwise span F1, resampling items (each item's
    pair F1s stay together); ``None`` without items or resamples, or when every resample gives the same
    value (a point would read as certainty)."""
    if not per_item or n_boot <= 0:
        return None
    sums = np.array([sum(v) for v in per_item], dtype=float)
    counts = np.array([len(v) for v in per_item], dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(per_item), size=(n_boot, len(per_item)))
    means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    if float(np.ptp(means)) == 0.0:
        return None
    lo, hi = np.percentile(means, [2.5, 97.5])
    return [float(lo), float(hi)]
