"""Agreement on *where* the misbehavior is: two or more annotators who labelled an item
``misbehavior`` and marked its evidence span (``Annotation.evidence_start/end``, character offsets into
the response).

- ``span_f1``: per pair of annotators on an item, the character-level F1 of their spans (Dice:
  2 |A ∩ B| / (|A| + |B|), symmetric), averaged over all such pairs; ``exact``: the share of pairs
  with identical offsets.
- ``token_alpha``: Krippendorff's alpha (nominal; the ``krippendorff`` package) over tokens: every
  whitespace-separated token of every such item is a unit, each annotator's value 1 if the token
  overlaps their span, else 0 (annotators who did not mark the item are missing values).

Pure functions over label rows and response texts; :func:`automonitor.annotation.agreement.agreement` adds the
result as ``spans``.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Iterable, Mapping

import krippendorff
import numpy as np


def _tokens(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the whitespace-separated tokens of ``text`` (one pass, no regex)."""
    out, start = [], None
    for i, ch in enumerate(text):
        if ch.isspace():
            if start is not None:
                out.append((start, i))
                start = None
        elif start is None:
            start = i
    if start is not None:
        out.append((start, len(text)))
    return out


def span_agreement(rows: Iterable[Mapping[str, Any]], responses: Mapping[str, str]) -> dict[str, Any]:
    """Span agreement of label rows (module doc).

    Args:
        rows: labels with ``sample_id``, ``annotator``, ``label``, ``evidence_start``, ``evidence_end``.
        responses: ``{sample_id: response}``.
    Returns:
        ``{"items": items with >= 2 marked spans, "pairs": annotator pairs compared, "span_f1": mean
        pairwise character F1 in [0, 1] or None, "exact": share of identical pairs or None,
        "token_alpha": Krippendorff's alpha over tokens or None (fewer than 2 values or no variation),
        "tokens": units}``.
    """
    by_item: dict[str, dict[str, tuple[int, int]]] = {}
    for r in rows:
        s, e = r.get("evidence_start"), r.get("evidence_end")
        if r.get("label") != "misbehavior" or s is None or e is None or s != s or e != e:
            continue
        s, e = int(s), int(e)
        if e > s:
            by_item.setdefault(str(r["sample_id"]), {})[str(r["annotator"])] = (s, e)
    items = {k: v for k, v in by_item.items() if len(v) >= 2}
    f1s: list[float] = []
    exact = 0
    annotators = sorted({a for v in items.values() for a in v})
    col = {a: i for i, a in enumerate(annotators)}
    units: list[list[float]] = []
    for sid, marks in sorted(items.items()):
        for (_, (s1, e1)), (_, (s2, e2)) in combinations(sorted(marks.items()), 2):
            inter = max(0, min(e1, e2) - max(s1, s2))
            f1s.append(2 * inter / ((e1 - s1) + (e2 - s2)))
            exact += int((s1, e1) == (s2, e2))
        for ts, te in _tokens(responses.get(sid, "")):
            row = [np.nan] * len(annotators)
            for a, (s, e) in marks.items():
                row[col[a]] = 1.0 if (ts < e and s < te) else 0.0
            units.append(row)
    alpha = None
    if units:
        data = np.array(units, dtype=float).T  # annotators x units
        vals = data[~np.isnan(data)]
        if len(np.unique(vals)) > 1:
            alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    return {
        "items": len(items),
        "pairs": len(f1s),
        "span_f1": float(np.mean(f1s)) if f1s else None,
        "exact": exact / len(f1s) if f1s else None,
        "token_alpha": alpha,
        "tokens": len(units),
    }
