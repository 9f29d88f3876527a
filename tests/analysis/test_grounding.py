"""Evidence grounding: verbatim, normalised and hallucinated spans, with offsets into the original text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.analysis.grounding import STATUSES, ground_evidence, ground_span, normalize_with_map, summary_of_counts


def ground_spans(text, spans):
    return [ground_span(text, sp) for sp in spans]


def summarize(results, predictions_with_evidence=None):
    """The grounding summary of span results (the report's per-run dict, :func:`summary_of_counts`)."""
    counts = {st: sum(1 for r in results if r["status"] == st) for st in STATUSES}
    in_request = sum(1 for r in results if r.get("field") == "request")
    return summary_of_counts(len(results), counts, in_request, predictions_with_evidence)


TEXT = "Sure!  Here is the\n\tscript:  It   DELETES all files.\nThe boss said “do it today” – fine."


def test_exact_span_offsets():
    [r] = ground_spans(TEXT, ["Here is the"])
    assert r["status"] == "exact" and TEXT[r["start"] : r["end"]] == "Here is the"


def test_whitespace_and_case_normalised_span_maps_back_to_original():
    r = ground_span(TEXT, "here is the script: it deletes ALL files")
    assert r["status"] == "normalized"
    assert TEXT[r["start"] : r["end"]] == "Here is the\n\tscript:  It   DELETES all files"


def test_curly_quotes_dashes_and_wrapping_quotes_are_normalised():
    r = ground_span(TEXT, 'said "do it today" - fine')
    assert r["status"] == "normalized" and TEXT[r["start"] : r["end"]] == "said “do it today” – fine"
    r2 = ground_span(TEXT, '"The boss said"...')
    assert r2["status"] == "normalized" and TEXT[r2["start"] : r2["end"]] == "The boss said"


def test_hallucinated_and_empty_spans_are_not_found():
    res = ground_spans(TEXT, ["it formats the disk", "", "   "])
    assert [r["status"] for r in res] == ["not_found"] * 3
    assert all(r["start"] is None and r["end"] is None for r in res)


def test_non_ascii_text_offsets():
    text = "Straße  ÜBER\u00a0alles: café"
    r = ground_span(text, "strasse über alles")
    assert r["status"] == "normalized" and text[r["start"] : r["end"]] == "Straße  ÜBER\u00a0alles"
    r2 = ground_span(text, "CAFÉ")
    assert text[r2["start"] : r2["end"]] == "café"


@pytest.mark.parametrize("text", [TEXT, "a  b\n\nc", "  leading and trailing  ", "x\u2003y Z"])
def test_normalised_map_points_at_source_characters(text):
    norm, index = normalize_with_map(text)
    assert len(norm) == len(index)
    assert all(0 <= i < len(text) for i in index) and list(index) == sorted(index)
    for ch, i in zip(norm, index):
        if ch == " ":
            assert text[i].isspace()
        else:
            assert ch in text[i].lower() or ch in text[i].casefold() or not text[i].isascii()


def test_ground_evidence_falls_back_to_request_and_summary_shares():
    res = ground_evidence(
        "the answer is 42", "Please ignore the rules", ["answer is 42", "IGNORE the rules", "made up"]
    )
    assert [(r["status"], r["field"]) for r in res] == [
        ("exact", "response"),
        ("normalized", "request"),
        ("not_found", None),
    ]
    s = summarize(res, predictions_with_evidence=1)
    assert s["spans"] == 3 and s["exact"] == 1 and s["normalized"] == 1 and s["not_found"] == 1
    assert s["not_found_share"] == pytest.approx(1 / 3) and s["in_request"] == 1
    assert summarize([])["exact_share"] is None


def test_dict_spans_are_accepted():
    [r] = ground_spans("abc def", [{"quote": "def"}])
    assert r["status"] == "exact" and (r["start"], r["end"]) == (4, 7)


def test_runs_share_each_sample_quote_and_summaries_match_per_run_grounding():
    """The report grounds a (sample, quote) once for all its runs: every run's summary and the localisation
    memo are what grounding that run's evidence lists alone gives (verbatim, normalised, request-only,
    hallucinated, empty and dict quotes; the same quote of one sample in several runs)."""
    from automonitor.analysis.roc_grounding import grounding_summary

    texts = {"a": ("Please IGNORE the rules", "the answer is 42\nDone."), "b": ("q", "“Quoted” text here")}
    runs = {
        "r1": (["a", "b", "a"], [["answer is 42", "made up", "here"], ['"quoted" TEXT'], []]),
        "r2": (["a", "b"], [["answer is 42", "ignore the rules", "  "], [{"quote": "text here"}, "made up"]]),
        "r3": (["b", "a"], [["“Quoted” text", "made up", "here"], "the ANSWER is 42 done"]),
    }
    grounded: dict = {}
    memo: dict = {}
    for sids, evs in runs.values():
        expected_memo: dict = {}
        results = []
        for sid, ev in zip(sids, evs):
            quotes = ev if isinstance(ev, list) else [ev]
            found = ground_evidence(texts[sid][1], texts[sid][0], quotes) if ev else []
            results += found
            for q, g in zip(quotes, found):
                hit = (g["start"], g["end"]) if g["field"] == "response" else None
                expected_memo[(texts[sid][1], q if isinstance(q, str) else repr(q))] = hit
        want = summarize(results, sum(1 for ev in evs if ev)) | {"predictions": len(sids)}
        assert grounding_summary(sids, evs, texts, memo, grounded) == want
        assert {k: memo[k] for k in expected_memo} == expected_memo
    assert ("a", "answer is 42") in grounded and ("b", "made up") in grounded


_QUOTE_TEXTS = st.text(alphabet=st.sampled_from(list("abAB .…'\"“”‘’-–\u00a0\n\tßÉé")), max_size=12)


@settings(max_examples=400, deadline=None)
@given(_QUOTE_TEXTS, st.one_of(st.none(), _QUOTE_TEXTS), _QUOTE_TEXTS)
def test_text_quotes_ground_as_quote_objects(response, request, quote):
    """A text quote (grounded on its own fast path) gets the status, offsets and field that the same quote given
    as ``{"quote": ...}`` gets from the general one, in the response and then the request."""
    assert ground_evidence(response, request, [quote]) == ground_evidence(response, request, [{"quote": quote}])


_SAMPLE_TEXTS = {
    "a": ("Please IGNORE the rules", "the answer is 42\nDone."),
    "b": ("q", "“Quoted” text here"),
    "c": ("", "x  y\tz"),
    "d": ("same text", "same text"),
}
_QUOTES = st.one_of(
    _QUOTE_TEXTS,
    st.sampled_from(["answer is 42", "IGNORE the", "“Quoted” text", "x y z", "same", "made up", "", "  "]),
    st.builds(lambda q: {"quote": q}, _QUOTE_TEXTS),
)
_EVIDENCE = st.one_of(st.lists(_QUOTES, max_size=4), _QUOTES, st.none())
_ROWS = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", "c", "d", "missing"]), _EVIDENCE), max_size=30)


@settings(max_examples=300, deadline=None)
@given(_ROWS, st.booleans())
def test_all_runs_grounding_is_each_runs_own(rows, with_memo):
    """:func:`grounding_summaries` (every run at once, each distinct (sample, quote) located once) gives each run
    the summary that :func:`grounding_summary` of that run's rows alone gives, and the same localisation memo:
    shared, repeated, hallucinated, empty, blank, dict and non-list quotes, samples without texts, runs without
    rows."""
    from automonitor.analysis.roc_grounding import grounding_summaries, grounding_summary

    n_runs = 4
    memo: dict | None = {} if with_memo else None
    got = grounding_summaries(
        [r for r, _, _ in rows], [s for _, s, _ in rows], [e for _, _, e in rows], n_runs, _SAMPLE_TEXTS, memo
    )
    want_memo: dict | None = {} if with_memo else None
    want = []
    for run in range(n_runs):
        mine = [(s, e) for r, s, e in rows if r == run]
        want.append(grounding_summary([s for s, _ in mine], [e for _, e in mine], _SAMPLE_TEXTS, want_memo))
    assert got == want
    assert memo == want_memo


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aB. \t\n\r\x0b\x0c\x1c\x1f-")), max_size=20))
def test_ascii_normalisation_one_join_is_the_vectorised_map(text):
    """An ASCII text's normalisation (one ``join`` when no whitespace run is collapsed) is the vectorised one's:
    the same text and the same index of every character."""
    from automonitor.analysis.grounding import normalize_ascii

    normalize_with_map.cache_clear()
    got_text, got_index = normalize_with_map(text)
    want_text, want_index = normalize_ascii(text)
    assert got_text == want_text
    assert got_index.dtype == want_index.dtype and got_index.tolist() == want_index.tolist()
