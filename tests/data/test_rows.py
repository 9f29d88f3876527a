"""One validation path for imported rows: the pydantic row models of ``automonitor.data.row_models``
and ``validate_one``, whose errors become problems located at file, line and field. JSON stays strict;
CSV cells (text) are converted where the format says so."""

from __future__ import annotations

import pytest

from automonitor.errors import InputError
from automonitor.data.records import Problems, RawRecord
from automonitor.data.row_models import AnnotationRow, PairRow, PredictionRow, validate_one

PAIR = {
    "pair_id": "q1",
    "category": "safety_permission",
    "task": "code",
    "request": "Read a file.",
    "response": "Sure.",
    "label": "misbehavior",
}


def problems_of(model, data, *, text_cells=False, line=3):
    problems = Problems("f.jsonl")
    row = validate_one(model, RawRecord(line, data, text_cells=text_cells), problems)
    return row, [(p.line, p.field, p.message) for p in problems.items]


# ---------------------------------------------------------------------------------------------- the path


def test_validate_returns_lines_and_raises_one_located_error_listing_the_problems():
    records = [
        RawRecord(1, dict(PAIR)),
        RawRecord(2, dict(PAIR, task="math")),
        RawRecord(4, dict(PAIR, label="meh", response=7)),
    ]
    problems = Problems("pairs.jsonl", limit=10)
    ok = [(r.line, row) for r in records if (row := validate_one(PairRow, r, problems)) is not None]
    assert [(line, row.pair_id) for line, row in ok] == [(1, "q1")]
    with pytest.raises(InputError) as ei:
        problems.raise_if_any()
    err = ei.value
    assert (err.file, err.line, err.field) == ("pairs.jsonl", 2, "task")
    assert [(p.line, p.field) for p in err.problems] == [(2, "task"), (4, "response"), (4, "label")]
    assert "unknown task 'math'" in str(err) and "must be a string, got a number" in str(err)


def test_problem_order_unknown_fields_then_missing_then_field_order():
    data = {k: v for k, v in PAIR.items() if k not in ("task", "label")}
    data.update(category="nope", lable="benign", meta=None)  # a JSON null is an absent field
    row, found = problems_of(PairRow, data)
    assert row is None
    assert [(f, m.split(" (")[0]) for _, f, m in found] == [
        ("lable", "unknown field 'lable'"),
        ("task", "missing required fields task, label"),
        ("category", "unknown category 'nope'"),
    ]
    assert all(line == 3 for line, _, _ in found)


def test_a_field_name_that_is_not_utf8_is_a_problem_without_a_field():
    row, found = problems_of(PairRow, dict(PAIR, **{"caf\udce9": "x"}))
    assert row is None and found == [
        (3, None, "a field name is not UTF-8 text: byte 0xe9 at character 4 is not valid UTF-8")
    ]


def test_messages_are_shown_as_written_even_with_braces():
    _, found = problems_of(PairRow, dict(PAIR, category="{field} {message}"))
    assert found[0][2].startswith("unknown category '{field} {message}' (allowed: ")


# ----------------------------------------------------------------------------------------------- pair rows


def test_pair_row_keeps_text_and_leaves_defaults_to_the_importer():
    row, found = problems_of(PairRow, dict(PAIR, request="  Read a file.\n", sample_id="", source=""))
    assert found == [] and row is not None
    assert (row.request, row.sample_id, row.source, row.label_source, row.meta) == (
        "  Read a file.\n",
        None,
        None,
        None,
        {},
    )


def test_pair_meta_is_an_object_in_json_and_a_json_text_in_csv():
    row, found = problems_of(PairRow, dict(PAIR, meta='{"a": [1, 2.5]}'), text_cells=True)
    assert found == [] and row is not None and row.meta == {"a": [1, 2.5]}
    _, found = problems_of(PairRow, dict(PAIR, meta='{"a": 1}'))  # JSONL: a string is not an object
    assert found == [(3, "meta", "must be a JSON object, got a string")]
    _, found = problems_of(PairRow, dict(PAIR, meta='{"a": 1e999}'), text_cells=True)
    assert found[0][:2] == (3, "meta") and found[0][2].startswith("meta.a is not a finite number")
    _, found = problems_of(PairRow, dict(PAIR, meta={"k": "a\x00b"}))
    assert found == [(3, "meta", "not clean text: meta.k: contains a NUL character")]


# ----------------------------------------------------------------------------------------- prediction rows

PRED = {"sample_id": " s1 ", "outcome": " benign "}


def test_prediction_score_is_strict_in_json_and_converted_in_csv():
    _, found = problems_of(PredictionRow, dict(PRED, score="0.5"))
    assert found == [(3, "score", "score must be a number, got '0.5'")]
    _, found = problems_of(PredictionRow, dict(PRED, score=True))
    assert found == [(3, "score", "score must be a number, got True")]
    row, found = problems_of(PredictionRow, dict(PRED, score=" 0.5 "), text_cells=True)
    assert found == [] and row is not None and row.score == 0.5
    _, found = problems_of(PredictionRow, dict(PRED, score="high"), text_cells=True)
    assert found == [(3, "score", "score must be a number, got 'high'")]
    _, found = problems_of(PredictionRow, dict(PRED, score="nan"), text_cells=True)
    assert found == [(3, "score", "score must be in [0, 1], got nan")]
    row, _ = problems_of(PredictionRow, dict(PRED, score=1))
    assert row is not None and row.score == 1.0 and isinstance(row.score, float)


def test_prediction_evidence_is_a_list_in_json_and_a_json_array_in_csv():
    row, found = problems_of(PredictionRow, dict(PRED, evidence='["as you said"]'), text_cells=True)
    assert found == [] and row is not None and row.evidence == ["as you said"]
    row, _ = problems_of(PredictionRow, dict(PRED, evidence="null"), text_cells=True)
    assert row is not None and row.evidence == []
    _, found = problems_of(PredictionRow, dict(PRED, evidence='["x"'), text_cells=True)
    assert found[0][:2] == (3, "evidence") and found[0][2].startswith("evidence must be a JSON array of strings")
    _, found = problems_of(PredictionRow, dict(PRED, evidence="quote"))
    assert found == [(3, "evidence", "evidence must be a list of strings")]


def test_prediction_values_strip_ids_and_keep_extra_fields_in_meta():
    row, found = problems_of(PredictionRow, dict(PRED, raw="r", vendor={"v": 1}, note=None))
    assert found == [] and row is not None
    assert row.prediction_values() == {
        "sample_id": "s1",
        "outcome": "benign",
        "score": None,
        "evidence": [],
        "raw": "r",
        "reason": None,
        "pred_category": None,
        "severity": None,
        "meta": {"extra": {"vendor": {"v": 1}, "note": None}},
    }


def test_prediction_missing_and_wrong_fields_are_named():
    _, found = problems_of(PredictionRow, {"sample_id": "  ", "outcome": "unsafe", "raw": 5})
    assert found == [
        (3, "sample_id", "sample_id is missing"),
        (3, "outcome", "outcome must be one of misbehavior, benign, invalid, refusal, error, got 'unsafe'"),
        (3, "raw", "raw must be a string"),
    ]
    _, found = problems_of(PredictionRow, dict(PRED, pred_category="x" * 33))
    assert found == [(3, "pred_category", "pred_category longer than 32 characters")]
    deep: dict = {"a": 1}
    for _ in range(20):
        deep = {"a": deep}
    _, found = problems_of(PredictionRow, dict(PRED, vendor=deep))
    assert found[0][:2] == (3, "vendor") and "nested" in found[0][2]


def test_prediction_file_checks_list_several_problems_at_the_first():
    from automonitor.runs.prediction_files import validate_stream

    def validate_rows(records, known, file):
        return validate_stream(records, lambda ids: dict.fromkeys(known), file)

    records = [
        RawRecord(2, {"sample_id": "a", "outcome": "benign"}, text_cells=True),
        RawRecord(3, {"sample_id": "zz", "outcome": "benign"}, text_cells=True),
        RawRecord(4, {"sample_id": "a", "outcome": "benign", "score": "2"}, text_cells=True),
        RawRecord(5, {"sample_id": "a", "outcome": "benign"}, text_cells=True),
    ]
    with pytest.raises(InputError) as ei:
        validate_rows(records, {"a"}, "p.csv")
    err = ei.value
    assert (err.file, err.line, err.field) == ("p.csv", 3, "sample_id") and "unknown sample_id 'zz'" in str(err)
    assert [(p.line, p.field) for p in err.problems] == [(3, "sample_id"), (4, "score"), (5, "sample_id")]
    assert "duplicate sample_id 'a' (first on line 2)" in str(err)
    assert validate_rows(records[:1], {"a"}, "p.csv")[0]["outcome"] == "benign"


# ----------------------------------------------------------------------------------------- annotation rows

LABEL = {"annotator": " ann1 ", "sample_id": " s1 ", "label": " benign "}


def test_annotation_row_reads_json_and_csv_cells_alike():
    for text_cells, cells in (
        (False, {"evidence_start": 3, "evidence_end": 7, "seconds_spent": 2.5, "category": "", "note": "  n "}),
        (True, {"evidence_start": "3", "evidence_end": "7", "seconds_spent": "2.5", "category": "", "note": "  n "}),
    ):
        row, found = problems_of(AnnotationRow, dict(LABEL, **cells, created_at="ignored"), text_cells=text_cells)
        assert found == [] and row is not None
        assert (row.annotator, row.sample_id, row.label) == (" ann1 ", "s1", "benign")
        assert (row.evidence_start, row.evidence_end, row.seconds_spent) == (3, 7, 2.5)
        assert (row.category, row.severity, row.note, row.guideline_version) == (None, None, "n", None)


def test_annotation_row_problems_name_the_field():
    _, found = problems_of(AnnotationRow, {"sample_id": "s1", "label": "spam", "severity": "extreme"})
    assert found == [
        (3, "annotator", "missing annotator"),
        (3, "label", "label must be one of misbehavior, benign, unsure, not 'spam'"),
        (3, "severity", "severity must be one of low, medium, high, not 'extreme'"),
    ]
    _, found = problems_of(AnnotationRow, dict(LABEL, evidence_start="x", seconds_spent=-1))
    assert found == [
        (3, "evidence_start", "evidence_start must be an integer"),
        (3, "seconds_spent", "seconds_spent must be a non-negative number"),
    ]
    _, found = problems_of(AnnotationRow, dict(LABEL, evidence_start=4))
    assert found == [(3, "evidence_end", "evidence_start and evidence_end go together")]
    _, found = problems_of(AnnotationRow, dict(LABEL, note="x" * 5001, guideline_version=3))
    assert found == [
        (3, "guideline_version", "guideline_version must be text"),
        (3, "note", "note longer than 5000 characters"),
    ]
