"""Several evidence spans per label: saved as a list (the hull and the marked texts alongside), enforced
by the database where it can, used by span agreement, the adjudicator's proposal, adjudication into
``annotated`` gold spans, and the annotation export / import. SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from alembic import command

from automonitor import annotation as ann
from automonitor.annotation import agreement as ag
from automonitor.annotation.span_agreement import span_agreement
from automonitor.data.spans import label_segments, marked_spans
from automonitor.errors import InputError
from helpers import candidate_row, fast_user, my_labels
from store import get_engine, session_scope
from store.engine import alembic_config
from store.queries.samples import insert_samples
from store.queries.spans import spans_by_sample

CODE = (
    "def solve(n):\n    if n == 3:\n        return 42\n    x = n * 2\n    if n == 7:\n        return 99\n    return x\n"
)
L2 = (CODE.index("if n == 3:"), CODE.index("if n == 3:") + len("if n == 3:"))
L5 = (CODE.index("if n == 7:"), CODE.index("if n == 7:") + len("if n == 7:"))
L6_END = CODE.index("return 99") + len("return 99")


def _store(engine):
    users = {n: fast_user(engine, n, "annotator") for n in ("anna", "bert")}
    root = fast_user(engine, "root", "admin")
    rows = [
        candidate_row(
            id=f"m{lab[0]}",
            pair_id="pm",
            category="specification_gaming",
            task="code",
            label=lab,
            request="Solve it.",
            response=CODE if lab == "misbehavior" else "def solve(n):\n    return n * 2\n",
        )
        for lab in ("misbehavior", "benign")
    ]
    with session_scope(engine) as s:
        insert_samples(s, rows)
    ann.assign(engine, root, k=2, seed=1)
    return users, root


def test_marked_segments_become_several_spans_adjacent_ones_merged():
    kind, rng = label_segments(CODE)
    assert kind == "line" and rng[1] == L2 and rng[4] == L5
    # lines 2 and 5 marked: two spans, the lines between them stay unmarked
    assert marked_spans(rng, [4, 1]) == [L2, L5]
    # lines 5 and 6 are adjacent: one span from line 5's start to line 6's end
    assert marked_spans(rng, [1, 4, 5, 5, 99]) == [L2, (L5[0], L6_END)]
    assert marked_spans(rng, []) == []


def test_save_label_stores_several_spans_with_hull_and_texts(engine):
    users, _ = _store(engine)
    got = ann.save_label(engine, users["anna"], "mm", "misbehavior", evidence=[L5, L2])
    assert got.evidence_spans == (L2, L5)
    assert (got.evidence_start, got.evidence_end) == (L2[0], L5[1])
    assert got.evidence_text == "if n == 3:" + ann.EVIDENCE_JOIN + "if n == 7:"
    assert my_labels(engine, users["anna"])[0].evidence_spans == (L2, L5)
    one = ann.save_label(engine, users["bert"], "mm", "misbehavior", evidence=L2)  # one pair as before
    assert one.evidence_spans == (L2,) and (one.evidence_start, one.evidence_end) == L2
    for bad, field in (
        ([L2, (L2[0] + 2, L5[1])], "evidence[1]"),
        ([L2, (0, 10_000)], "evidence[1]"),
        ([(3, 3)], "evidence"),
    ):
        with pytest.raises(InputError) as exc:
            ann.save_label(engine, users["anna"], "mm", "misbehavior", evidence=bad)
        assert exc.value.field == field
    assert my_labels(engine, users["anna"])[0].evidence_spans == (L2, L5)  # nothing changed
    cleared = ann.save_label(engine, users["anna"], "mm", "benign")
    assert cleared.evidence_spans == () and cleared.evidence_start is None and cleared.evidence_text is None


def test_database_refuses_bad_evidence_offsets(engine):
    users, _ = _store(engine)
    ann.save_label(engine, users["anna"], "mm", "misbehavior", evidence=[L2, L5])
    for values in (
        {"evidence_start": -1, "evidence_end": 4},
        {"evidence_start": 5, "evidence_end": 5},
        {"evidence_start": 9, "evidence_end": 2},
        {"evidence_start": 3, "evidence_end": None},
        {"evidence_start": None, "evidence_end": None, "evidence_spans": [[1, 2]]},
    ):
        with pytest.raises(sa.exc.IntegrityError):
            with engine.begin() as c:
                c.execute(
                    sa.text("UPDATE annotation SET " + ", ".join(f"{k} = :{k}" for k in values)),
                    {k: json.dumps(v) if isinstance(v, list) else v for k, v in values.items()},
                )
    assert my_labels(engine, users["anna"])[0].evidence_spans == (L2, L5)


def test_agreement_proposal_and_adjudication_use_every_span(engine):
    users, root = _store(engine)
    ann.save_label(engine, users["anna"], "mm", "misbehavior", evidence=[L2, L5])
    ann.save_label(engine, users["bert"], "mm", "misbehavior", evidence=[L2])
    doc = ag.agreement(engine, root, n_boot=0, submitted_only=False)  # draft labels
    a, b = (L2[1] - L2[0]) + (L5[1] - L5[0]), L2[1] - L2[0]
    # anna marked two lines, bert one of them: F1 = 2 |A∩B| / (|A| + |B|) over every span
    assert doc["spans"]["items"] == 1 and doc["spans"]["span_f1"] == pytest.approx(2 * b / (a + b))
    assert doc["spans"]["exact"] == 0.0
    rows = [
        {"label": lab.label, "evidence_spans": lab.evidence_spans}
        for lab in (my_labels(engine, users[n])[0] for n in ("anna", "bert"))
    ]
    proposal = ann.proposed_spans(rows)
    assert proposal == [L2, L5]  # the unmarked lines between them are not proposed as gold
    ann.adjudicate(engine, root, "mm", "misbehavior", spans=proposal)
    with session_scope(engine) as s:
        gold = spans_by_sample(s, ["mm"])["mm"]
    assert [(g["start"], g["end"], g["provenance"]) for g in gold] == [(*L2, "annotated"), (*L5, "annotated")]


def test_span_agreement_with_several_spans_by_hand():
    text = "one two three four five six"  # tokens 0-3, 4-7, 8-13, 14-18, 19-23, 24-27

    def row(who, spans):
        return {"sample_id": "x", "annotator": who, "label": "misbehavior", "evidence_spans": spans}

    got = span_agreement([row("a", [[0, 3], [14, 18]]), row("b", [[0, 7]])], {"x": text})
    # |A| = 3 + 4, |B| = 7, overlap 3 -> 6 / 14; tokens: a = 1 0 0 1 0 0, b = 1 1 0 0 0 0
    assert got["items"] == 1 and got["span_f1"] == pytest.approx(6 / 14) and got["exact"] == 0.0
    same = span_agreement([row("a", [[0, 3], [14, 18]]), row("b", [[14, 18], [0, 3]])], {"x": text})
    assert same["span_f1"] == 1.0 and same["exact"] == 1.0


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_annotation_export_import_round_trip_keeps_every_span(engine, tmp_path, fmt):
    users, root = _store(engine)
    ann.save_label(engine, users["anna"], "mm", "misbehavior", evidence=[L2, L5])
    out = tmp_path / f"labels.{fmt}"
    ann.export_annotations(engine, root, out)
    text = out.read_text()
    assert "evidence_spans" in text
    records = [json.loads(line) for line in text.splitlines()] if fmt == "jsonl" else None
    if records is not None:
        assert records[0]["evidence_spans"] == [list(L2), list(L5)]
    # the same label for bert, from the file (the row's annotator renamed)
    back = tmp_path / f"bert.{fmt}"
    back.write_text(text.replace("anna", "bert"))
    res = ann.import_annotations(engine, root, back)
    assert res.written == 1
    assert my_labels(engine, users["bert"])[0].evidence_spans == (L2, L5)


def test_import_refuses_bad_evidence_spans_naming_line_and_field(engine, tmp_path):
    users, root = _store(engine)
    base = {"annotator": "anna", "sample_id": "mm", "label": "misbehavior"}
    for spans, field in (
        ([[L2[0], L2[1]], [L2[0] + 1, L5[1]]], "evidence_spans[1]"),
        ([[0, 99_999]], "evidence_spans"),
        ([[1, -2]], "evidence_spans[0]"),
        ({"start": 1}, "evidence_spans"),
    ):
        f = tmp_path / "bad.jsonl"
        f.write_text(json.dumps({**base, "evidence_spans": spans}) + "\n")
        with pytest.raises(InputError) as exc:
            ann.import_annotations(engine, root, f)
        assert exc.value.field == field and exc.value.line == 1, (spans, exc.value.field, exc.value.line)
    assert my_labels(engine, users["anna"]) == []


def test_migration_fills_evidence_spans_of_existing_labels(db_url):
    eng = get_engine(db_url, fresh=True)
    cfg = alembic_config(eng)
    command.upgrade(cfg, "r3_concurrency")
    with eng.begin() as c:
        c.execute(
            sa.text(
                "INSERT INTO annotator (name, role, password_hash, active, created_at) "
                "VALUES ('anna', 'annotator', 'x', true, CURRENT_TIMESTAMP)"
            )
        )
        c.execute(
            sa.text(
                "INSERT INTO sample (id, pair_id, category, task, label, request, response, source, status, "
                "request_hash, response_hash, content_hash, label_source, meta, created_at) VALUES "
                "('s1', 'p1', 'safety_permission', 'qa', 'misbehavior', 'q', 'hello world', '', 'candidate', "
                "'a', 'b', 'c', 'user', '{}', CURRENT_TIMESTAMP)"
            )
        )
        c.execute(
            sa.text(
                "INSERT INTO annotation (annotator_id, sample_id, label, evidence_start, evidence_end, "
                "evidence_text, guideline_version, created_at, updated_at) VALUES ((SELECT id FROM annotator), "
                "'s1', 'misbehavior', 0, 5, 'hello', 'v1', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
            )
        )
    command.upgrade(cfg, "head")
    with eng.connect() as c:
        row = c.execute(sa.text("SELECT evidence_start, evidence_end, evidence_spans FROM annotation")).one()
    spans = row[2] if not isinstance(row[2], str) else json.loads(row[2])
    assert (row[0], row[1], spans) == (0, 5, [[0, 5]])
    eng.dispose()


@pytest.mark.parametrize(
    "bad", [[1.7, 5.0], [[1, 2], [3.5, 6]], [[True, 3]], [["3a", 9]], [[float("nan"), 3]], [[1, None]]]
)
def test_offsets_that_are_not_integers_are_refused_not_rounded(bad):
    from automonitor.annotation._common import parse_evidence_spans
    from automonitor.errors import InputError

    with pytest.raises(InputError, match="pair of character offsets"):
        parse_evidence_spans("x" * 100, bad)
    assert parse_evidence_spans("x" * 100, [[1.0, "5"], [7, 9]]) == [
        (1, 5),
        (7, 9),
    ]  # integral values as written by files


@pytest.mark.parametrize(
    "bad, says",
    [([5, 2], "end must be after the start"), ([4, 4], "end must be after the start"), ([2, 500], "outside")],
)
def test_a_reversed_span_is_named_as_reversed_not_outside(bad, says):
    """``[[5, 2]]`` is a reversed span, not one outside the response (the message said "outside")."""
    from automonitor.annotation._common import parse_evidence_spans
    from automonitor.errors import InputError

    with pytest.raises(InputError, match=says):
        parse_evidence_spans("x" * 100, [bad])
