"""Span disagreements reach adjudication and agreed spans become gold: annotators who all chose
``misbehavior`` but marked spans whose F1 is below ``SPAN_F1_THRESHOLD`` put the item in the
adjudication queue (reason ``span_disagreement``) and finalize waits for the adjudicator; spans they
agree on are stored by finalize as ``annotated`` gold spans (note: who agreed, the span F1 and who
finalized), once, however often finalize runs. SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from automonitor import annotation as ann
from helpers import candidate_row, fast_user
from store import session_scope
from store.models import Sample
from store.queries.samples import insert_samples
from store.queries.spans import spans_by_sample

M, B = "misbehavior", "benign"
CODE = "def solve(n):\n    if n == 3:\n        return 42\n    x = n * 2\n    return x\n"
L2 = (CODE.index("if n == 3:"), CODE.index("if n == 3:") + len("if n == 3:"))
L3 = (CODE.index("return 42"), CODE.index("return 42") + len("return 42"))
L4 = (CODE.index("x = n * 2"), CODE.index("x = n * 2") + len("x = n * 2"))
L5 = (CODE.index("return x"), CODE.index("return x") + len("return x"))

# pair -> (anna's spans, bert's spans) on its misbehavior side; both say misbehavior / benign as intended
PLAN = {
    "same": ([L2], [L2]),  # identical: F1 1 -> consensus, gold spans stored
    "close": ([L2, L3], [L2]),  # F1 2*10/(19+10) = 0.69 >= 0.5 -> consensus, merge stored
    "apart": ([L2], [L4]),  # no overlap: F1 0 -> span_disagreement
    "partly": ([L2, L3, L4], [L3]),  # F1 2*9/(28+9) = 0.49 < 0.5 -> span_disagreement
    "one_marked": ([L2], []),  # one marked nothing: a span is optional -> consensus, the one mark stored
    "unmarked": ([], []),  # nobody marked: no span to compare, consensus without gold spans
}


@pytest.fixture
def spans_team(engine):
    users = {n: fast_user(engine, n, "annotator") for n in ("anna", "bert")}
    root = fast_user(engine, "root", "admin")
    rows = [
        candidate_row(
            id=f"{pid}-{lab[0]}",
            pair_id=pid,
            category="specification_gaming",
            task="code",
            label=lab,
            request=f"Solve {pid}.",
            response=CODE if lab == M else f"def solve(n):\n    return n * 2  # {pid}\n",
        )
        for pid in PLAN
        for lab in (M, B)
    ]
    with session_scope(engine) as s:
        insert_samples(s, rows)
    ann.assign(engine, root, k=2, seed=1)
    for pid, marks in PLAN.items():
        for name, spans in zip(("anna", "bert"), marks):
            ann.save_label(engine, users[name], f"{pid}-m", M, evidence=spans or None)
            ann.save_label(engine, users[name], f"{pid}-b", B)
    for u in users.values():
        ann.submit_batch(engine, u)
    return engine, users, root


def _gold(engine, ids):
    with session_scope(engine) as s:
        got = spans_by_sample(s, ids)
    return {sid: [(g["start"], g["end"], g["provenance"], g["note"]) for g in v] for sid, v in got.items()}


def test_span_disagreement_is_queued_with_its_f1(spans_team):
    engine, _, root = spans_team
    assert ann.SPAN_F1_THRESHOLD == 0.5
    queue = ann.adjudication_queue(engine, root)
    got = {e.sample_id: (e.reason, e.span_f1) for e in queue}
    assert set(got) == {"apart-m", "partly-m"}  # one annotator marking no span is no disagreement
    assert {r for r, _ in got.values()} == {"span_disagreement"}
    assert got["apart-m"][1] == 0.0
    assert got["partly-m"][1] == pytest.approx(2 * 9 / (28 + 9))
    assert "span_disagreement" in ann.QUEUE_REASONS
    # the adjudicator is shown each annotator's spans (names hidden) and offered their merge
    e = next(x for x in queue if x.sample_id == "apart-m")
    assert sorted(x["evidence_spans"] for x in e.labels) == [[L2], [L4]]
    assert {x["annotator"] for x in e.labels} == {"Annotator 1", "Annotator 2"}
    assert ann.proposed_spans(e.labels) == [L2, L4]


def test_finalize_stores_agreed_spans_and_waits_for_span_adjudication(spans_team):
    engine, _, root = spans_team
    res = ann.finalize_pairs(engine, root)
    assert sorted(res.accepted) == ["close", "one_marked", "same", "unmarked"] and res.rejected == {}
    assert res.pending == 2
    gold = _gold(engine, [f"{p}-{s}" for p in PLAN for s in "mb"])
    note = "agreed by anna, bert ({}); finalized by root"
    f1 = "lowest pairwise span F1 {}"
    assert gold == {
        "same-m": [(*L2, "annotated", note.format(f1.format("1.00")))],
        "close-m": [
            (*L2, "annotated", note.format(f1.format("0.69"))),
            (*L3, "annotated", note.format(f1.format("0.69"))),
        ],
        "one_marked-m": [(*L2, "annotated", note.format("one annotator marked no span"))],
    }
    with session_scope(engine) as s:
        meta = s.get(Sample, "close-m").meta["annotation"]
    assert meta["gold_spans"] == [list(L2), list(L3)] and meta["resolution"] == "consensus"
    # finalize again: nothing more is accepted and the spans are not written twice
    again = ann.finalize_pairs(engine, root)
    assert again.accepted == [] and again.pending == 2
    assert _gold(engine, ["same-m", "close-m"]) == {k: gold[k] for k in ("same-m", "close-m")}
    # the adjudicator resolves the span disagreements; finalize then takes those pairs with the resolved spans
    ann.adjudicate(engine, root, "apart-m", M, spans=[L2])
    ann.adjudicate(engine, root, "partly-m", M, spans=[L3])
    assert ann.adjudication_queue(engine, root) == []
    done = ann.finalize_pairs(engine, root)
    assert sorted(done.accepted) == ["apart", "partly"] and done.pending == 0
    after = _gold(engine, ["apart-m", "partly-m"])
    assert after == {
        "apart-m": [(*L2, "annotated", "adjudicated by root")],
        "partly-m": [(*L3, "annotated", "adjudicated by root")],
    }


def test_a_missing_span_is_queued_only_when_the_setting_asks(spans_team, monkeypatch):
    engine, _, root = spans_team
    monkeypatch.setenv("AUTOMONITOR_QUEUE_MISSING_SPANS", "1")
    got = {e.sample_id: (e.reason, e.span_f1, e.unmarked) for e in ann.adjudication_queue(engine, root)}
    assert got["one_marked-m"] == ("missing_span", 0.0, 1)
    assert "one annotator marked no span" in ann.QUEUE_REASONS["missing_span"]
    assert got["apart-m"] == ("span_disagreement", 0.0, 0)
    res = ann.finalize_pairs(engine, root)
    assert "one_marked" not in res.accepted and res.pending == 3
