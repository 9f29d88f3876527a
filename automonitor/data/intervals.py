"""Character spans as ``(start, end)`` intervals (half-open): their union and the characters two unions
share, for the localisation metrics (:mod:`automonitor.analysis.localisation`) and the annotators' span
agreement (:mod:`automonitor.annotation.span_agreement`)."""

from __future__ import annotations

from typing import Iterable

Spans = tuple[tuple[int, int], ...]
"""Sorted, disjoint, non-empty ``(start, end)`` spans, as :func:`union` returns them."""


def union(spans: Iterable[tuple[int, int]]) -> Spans:
    """Non-empty ``(start, end)`` spans merged where they overlap or touch, sorted."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)


def trimmed(text: str, a: int, b: int) -> tuple[int, int]:
    """``(a, b)`` moved in past the whitespace at both ends of ``text[a:b]`` (``a == b`` when it is blank)."""
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def length(spans: Spans) -> int:
    """Characters covered by the disjoint ``spans``."""
    return sum(b - a for a, b in spans)


def overlap(x: Spans, y: Spans) -> int:
    """Characters in both of two :func:`union` results (two-pointer walk)."""
    i = j = inter = 0
    while i < len(x) and j < len(y):
        inter += max(0, min(x[i][1], y[j][1]) - max(x[i][0], y[j][0]))
        if x[i][1] <= y[j][1]:
            i += 1
        else:
            j += 1
    return inter
