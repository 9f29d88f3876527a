"""Evidence grounding: is each span a monitor quoted really in the text it judged?

For every quoted span the status is

- ``exact``: found verbatim (``str.find``) in the text;
- ``normalized``: found after normalising both sides: Unicode NFKC, case folding, curly quotes and
  dashes mapped to ASCII, every run of whitespace collapsed to one space; the span is also stripped of
  surrounding whitespace, quote marks and ellipses (``...``/``…``) that models add around a quotation;
- ``not_found``: neither, i.e. hallucinated evidence (also an empty span).

``start``/``end`` are character offsets into the ORIGINAL text (``text[start:end]`` is the matched
region, mapped back from the normalised text), so the app can highlight them; ``None`` when not found.
The first occurrence is reported.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Iterable, TypedDict

import numpy as np
import numpy.typing as npt

from automonitor.jsontypes import JSONValue

STATUSES: tuple[str, ...] = ("exact", "normalized", "not_found")

_CHAR_MAP = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "`": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u2033": '"',
    "\u00ab": '"',
    "\u00bb": '"',
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\u2212": "-",
}
_ASCII_WS = np.zeros(256, dtype=bool)
_ASCII_WS[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True  # exactly the ASCII chars with str.isspace()
_STRIP = " \t\r\n\"'`\u2018\u2019\u201c\u201d\u00ab\u00bb"
_CLEANED_EDGES = _STRIP + ".\u2026"  # a span that starts or ends with none of these is clean as it is
_ELLIPSIS = re.compile(r"^(?:\.\.\.|\u2026)+|(?:\.\.\.|\u2026)+$")


@lru_cache(maxsize=16384)
def normalize_with_map(text: str) -> tuple[str, npt.NDArray[np.intp]]:
    """Normalised text and, for each of its characters, the index of the original character it came from.

    Normalisation: per character NFKC + casefold (+ curly quotes/dashes to ASCII), then each run of
    whitespace becomes one space. Returns ``(normalised, index)`` with ``len(index) == len(normalised)``.
    ASCII text takes a vectorised fast path. Results are cached (the same response is grounded for
    many runs).
    """
    if text.isascii():
        joined = " ".join(text.lower().split())
        if len(joined) == len(text):  # no run of whitespace and none at the ends: every character kept, each
            return joined, np.arange(len(text), dtype=np.intp)  # whitespace character a space (most texts)
        return normalize_ascii(text)
    chars: list[str] = []
    index: list[int] = []
    in_ws = False
    for i, c in enumerate(text):
        if c.isspace():
            if not in_ws:
                chars.append(" ")
                index.append(i)
            in_ws = True
            continue
        in_ws = False
        for d in unicodedata.normalize("NFKC", _CHAR_MAP.get(c, c)).casefold():
            if d.isspace():  # NFKC can turn e.g. U+00A0 into a space; isspace already caught it
                d = " "
            chars.append(d)
            index.append(i)
    return "".join(chars), np.asarray(index, dtype=np.intp)


def normalize_ascii(text: str) -> tuple[str, npt.NDArray[np.intp]]:
    """:func:`normalize_with_map` of an ASCII ``text``, vectorised: each whitespace character a space, a run of
    them one space (its first character's index)."""
    a = np.frombuffer(text.lower().encode("ascii"), dtype=np.uint8)
    ws = _ASCII_WS[a]
    prev = np.concatenate(([False], ws[:-1]))
    keep = ~(ws & prev)
    out = np.where(ws, np.uint8(32), a)[keep]
    return out.tobytes().decode("ascii"), np.flatnonzero(keep)


def normalize(text: str) -> str:
    """The normalised form of ``text`` (see :func:`normalize_with_map`), without surrounding spaces."""
    if text.isascii():  # fast path for short strings such as spans: same result, no offset map
        return " ".join(text.lower().split())
    return normalize_with_map(text)[0].strip()


class GroundedSpan(TypedDict):
    """A span grounded by :func:`ground_span`: the quoted text, its status and character offsets into the text."""

    span: str
    status: str  # "exact" | "normalized" | "not_found"
    start: int | None
    end: int | None


class GroundedEvidence(GroundedSpan):
    """A span grounded by :func:`ground_evidence`, with the field its offsets refer to."""

    field: str | None  # "response" | "request" | None


def _span_text(span: JSONValue) -> str:
    if isinstance(span, str):
        return span
    if isinstance(span, dict):
        for key in ("quote", "text", "span", "evidence"):
            value = span.get(key)
            if isinstance(value, str):
                return value
    return "" if span is None else str(span)


def _clean_span(span: str) -> str:
    if not span or (span[0] not in _CLEANED_EDGES and span[-1] not in _CLEANED_EDGES):
        return span
    prev = None
    s = span
    while s != prev:
        prev = s
        s = _ELLIPSIS.sub("", s.strip(_STRIP)).strip(_STRIP)
    return s


class _Quote:
    """A quoted span prepared for :func:`_locate`: its text ``s``, ``cleaned`` (:func:`_clean_span`) and their
    normalised form ``ns``, computed only when a verbatim search failed (most quotes are found verbatim: the
    normalisation was a third of grounding a report's 54,000 quotes)."""

    __slots__ = ("s", "cleaned", "_ns")

    def __init__(self, span: JSONValue) -> None:
        self.s = _span_text(span)
        self.cleaned = _clean_span(self.s) if self.s.strip() else ""
        self._ns: str | None = None

    @property
    def ns(self) -> str:
        if self._ns is None:
            self._ns = normalize(self.cleaned) if self.cleaned else ""
        return self._ns


def _locate(text: str, q: _Quote, *, tried: bool = False) -> tuple[str, int, int] | None:
    """(status, start, end) of the prepared span in ``text``, or ``None``; ``tried``: the caller searched
    ``text`` for the span verbatim already and did not find it."""
    s, cleaned = q.s, q.cleaned
    if not tried:
        i = text.find(s)
        if i >= 0:
            return "exact", i, i + len(s)
    if cleaned and cleaned is not s:
        i = text.find(cleaned)
        if i >= 0:  # verbatim once the quote marks around it are removed: still a normalised match
            return "normalized", i, i + len(cleaned)
    ns = q.ns
    if ns:
        nt, index = normalize_with_map(text)
        j = nt.find(ns)
        if j >= 0:
            return "normalized", int(index[j]), int(index[j + len(ns) - 1]) + 1
    return None


def ground_span(text: str, span: JSONValue) -> GroundedSpan:
    """Ground one quoted span in ``text``.

    Args:
        text: the judged text (e.g. a sample's response).
        span: the quotation (a string; a dict with ``quote``/``text``/``span`` is accepted too).
    Returns:
        ``{"span": str, "status": "exact"|"normalized"|"not_found", "start": int|None, "end": int|None}``
        with offsets into ``text``.
    """
    q = _Quote(span)
    s = q.s
    hit = _locate(text, q) if (text and s.strip()) else None
    if hit is None:
        return {"span": s, "status": "not_found", "start": None, "end": None}
    return {"span": s, "status": hit[0], "start": hit[1], "end": hit[2]}


def ground_evidence(response: str, request: str | None, spans: Iterable[JSONValue]) -> list[GroundedEvidence]:
    """Ground spans in the sample's response first, then (if not found there) in its request.

    Each result of :func:`ground_span` gets ``"field": "response" | "request" | None`` telling which text
    the offsets refer to.
    """
    return [ground_quote(response, request, sp) for sp in spans or []]


def ground_quote(response: str, request: str | None, span: JSONValue) -> GroundedEvidence:
    """One span of :func:`ground_evidence`: grounded in ``response`` first, then in ``request``; the result
    depends on those texts and the span alone (a caller may keep it per sample and quote)."""
    status, start, end, field = locate_quote(response, request, span)
    return {"span": _span_text(span), "status": status, "start": start, "end": end, "field": field}


def locate_quote(response: str, request: str | None, span: JSONValue) -> tuple[str, int | None, int | None, str | None]:
    """:func:`ground_quote` without the quoted text: ``(status, start, end, field)`` (``start``/``end``/``field``
    ``None`` when not found), for a caller that grounds many quotes and keeps only these."""
    if isinstance(span, str):
        if not span or span.isspace():  # an empty span (str.strip() would leave nothing): never found
            return "not_found", None, None, None
        if response:
            i = response.find(span)
            if i >= 0:  # most quotes: verbatim in the response
                return "exact", i, i + len(span), "response"
        return locate_text(response, request, span)
    q = _Quote(span)
    hit, field = None, None
    if q.s.strip():
        if response:
            hit, field = _locate(response, q, tried=isinstance(span, str)), "response"
        if hit is None and request:
            hit, field = _locate(request, q), "request"
    if hit is None:
        return "not_found", None, None, None
    return hit[0], hit[1], hit[2], field


def locate_text(response: str, request: str | None, s: str) -> tuple[str, int | None, int | None, str | None]:
    """:func:`locate_quote` of a text quote ``s`` (not blank: neither empty nor all whitespace) that is not verbatim
    in ``response`` (the caller searched it; an empty ``response`` too): the steps of :func:`_locate` in the response
    (not searched verbatim again) and then in the request, without a :class:`_Quote` per quote (the quotes not found
    verbatim, hallucinated ones above all, were most of a report's grounding CPU). Returns ``(status, start, end,
    field)`` as :func:`locate_quote`; a result for a quote that breaks the condition is undefined."""
    cleaned = _clean_span(s)
    ns: str | None = None
    for text, field, tried in ((response, "response", True), (request, "request", False)):
        if not text:
            continue
        if not tried:
            i = text.find(s)
            if i >= 0:
                return "exact", i, i + len(s), field
        if cleaned and cleaned is not s:
            i = text.find(cleaned)
            if i >= 0:  # verbatim once the quote marks around it are removed: still a normalised match
                return "normalized", i, i + len(cleaned), field
        if ns is None:
            ns = normalize(cleaned) if cleaned else ""
        if ns:
            nt, index = normalize_with_map(text)
            j = nt.find(ns)
            if j >= 0:
                return "normalized", int(index[j]), int(index[j + len(ns) - 1]) + 1, field
    return "not_found", None, None, None


def summary_of_counts(
    n: int, counts: dict[str, int], in_request: int, predictions_with_evidence: int | None = None
) -> dict[str, int | float | None]:
    """Counts and shares of grounding statuses: ``{"spans", "exact", "normalized", "not_found",
    "exact_share", "normalized_share", "not_found_share", "in_request"}`` (shares ``None`` when there is no
    span), plus ``predictions_with_evidence`` when given, from the number of spans ``n``, the count of each
    status (``counts``: ``{status: count}`` for every one of :data:`STATUSES`) and how many spans were found
    in the request."""
    out: dict[str, int | float | None] = {"spans": n, **{st: counts[st] for st in STATUSES}}
    for st in STATUSES:
        out[f"{st}_share"] = None if n == 0 else counts[st] / n
    out["in_request"] = in_request
    if predictions_with_evidence is not None:
        out["predictions_with_evidence"] = predictions_with_evidence
    return out
