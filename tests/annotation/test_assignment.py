"""Assignment (k annotators, balance, seeded order, sides never adjacent, blinding) and labeling
(upsert, evidence offsets, time, batch submission lock) on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
import sqlalchemy as sa

from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM
from automonitor.errors import InputError, PermissionDenied
from store import session_scope
from store.models import Assignment, Sample
from store.queries.samples import insert_samples

from helpers import candidate_row, fast_user, my_labels

CATS = ["sycophancy_bias", "specification_gaming"]


def add_candidates(engine, n_pairs: int, start: int = 0, prefix: str = "cand") -> list[dict]:
    """``n_pairs`` candidate pairs (two items each) straight into the store."""
    rows = []
    for p in range(start, start + n_pairs):
        req = f"Request {p}: is my essay good? I think it's great."
        for lab, text in (("misbehavior", f"Yes, it's brilliant ({p})!"), ("benign", f"It has issues ({p}).")):
            rows.append(
                candidate_row(
                    id=f"{prefix}{p:04d}{lab[0]}",
                    pair_id=f"{prefix}-pair-{p}",
                    category=CATS[p % 2],
                    task="qa" if p % 3 else "code",
                    label=lab,
                    request=req,
                    response=text,
                    source="sycophancy-src",
                )
            )
    with session_scope(engine) as s:
        insert_samples(s, rows)
    return rows


@pytest.fixture
def team(engine):
    """Four annotators and one admin on a fresh store (SQLite and PostgreSQL)."""
    users = [fast_user(engine, f"ann{i}", "annotator") for i in range(4)]
    admin = fast_user(engine, "boss", "admin")
    return engine, users, admin


def _queues(engine):
    with session_scope(engine) as s:
        rows = s.execute(
            sa.select(
                Assignment.annotator_id, Assignment.sample_id, Assignment.position, Assignment.seed, Sample.pair_id
            )
            .join(Sample, Sample.id == Assignment.sample_id)
            .order_by(Assignment.annotator_id, Assignment.position)
        ).all()
    out: dict[int, list] = {}
    for r in rows:
        out.setdefault(r.annotator_id, []).append(r)
    return out


def test_each_item_goes_to_k_annotators_balanced_and_sides_never_adjacent(team):
    engine, users, admin = team
    add_candidates(engine, 30)
    res = ann.assign(engine, admin, k=2, seed=11)
    assert res.items == 60 and res.assignments == 120 and res.seed == 11
    assert sum(res.by_annotator.values()) == 120
    loads = list(res.by_annotator.values())
    assert max(loads) - min(loads) <= 2  # at most one pair apart
    queues = _queues(engine)
    per_item = Counter(r.sample_id for q in queues.values() for r in q)
    assert set(per_item.values()) == {2} and len(per_item) == 60
    for q in queues.values():
        assert [r.position for r in q] == list(range(len(q)))
        assert {r.seed for r in q} == {11}
        assert all(a.pair_id != b.pair_id for a, b in zip(q, q[1:])), "two sides of a pair adjacent"
        # both sides of a pair reach the same annotators
        assert all(c == 2 for c in Counter(r.pair_id for r in q).values())


def test_same_seed_gives_same_queues_and_orders_differ_between_annotators(db_url, tmp_path):
    from store import get_engine, init_db

    queues = []
    for i in range(2):
        url = db_url if i == 0 else f"sqlite:///{tmp_path / 'again.db'}"
        eng = init_db(get_engine(url, fresh=True))
        try:
            for j in range(3):
                fast_user(eng, f"a{j}", "annotator")
            add_candidates(eng, 12)
            ann.assign(eng, SYSTEM, k=3, seed=5)
            qs = _queues(eng)
            queues.append([[r.sample_id for r in qs[a]] for a in sorted(qs)])
        finally:
            eng.dispose()
    assert queues[0] == queues[1]
    # every annotator holds all 24 items (k=3 of 3) but in a different random order
    assert all(sorted(q) == sorted(queues[0][0]) for q in queues[0])
    assert len({tuple(q) for q in queues[0]}) == 3


def test_assign_only_touches_unassigned_items_and_appends_a_new_batch(team):
    engine, users, admin = team
    add_candidates(engine, 6)
    ann.assign(engine, admin, seed=1)
    again = ann.assign(engine, admin, seed=2)
    assert (again.items, again.assignments) == (0, 0)
    add_candidates(engine, 4, start=6)
    res = ann.assign(engine, admin, seed=3)
    assert res.items == 8 and res.assignments == 16
    assert set(res.batch.values()) == {2}
    for q in _queues(engine).values():
        assert [r.position for r in q] == list(range(len(q)))
        assert all(a.pair_id != b.pair_id for a, b in zip(q, q[1:]))
        new = [r for r in q if r.seed == 3]
        assert all(r.position > max((o.position for o in q if o.seed == 1), default=-1) for r in new)


def test_assign_needs_admin_and_enough_annotators_and_writes_nothing_on_error(team):
    engine, users, admin = team
    add_candidates(engine, 2)
    with pytest.raises(PermissionDenied):
        ann.assign(engine, users[0], k=2)
    with pytest.raises(InputError) as e:
        ann.assign(engine, admin, k=5)
    assert e.value.field == "k"
    with pytest.raises(InputError):
        ann.assign(engine, admin, k=0)
    assert _queues(engine) == {}
    forged = dataclasses.replace(users[0], role="admin")  # a tampered session object
    with pytest.raises(PermissionDenied):
        ann.assign(engine, forged, k=2)
    assert _queues(engine) == {}


def test_annotator_view_is_blind_and_limited_to_own_queue(team):
    engine, users, admin = team
    rows = add_candidates(engine, 4)
    ann.assign(engine, admin, k=2, seed=4)
    q0 = ann.my_queue(engine, users[0])
    mine = {q.sample_id for q in q0}
    view = ann.get_item(engine, users[0], q0[0].sample_id)
    shown = dataclasses.asdict(view)
    assert set(shown) == {
        "sample_id",
        "position",
        "total",
        "batch",
        "request",
        "response",
        "submitted",
        "label",
        "round_position",  # place within the annotator's own round: nothing about others
        "round_total",
        "steps",  # the response's typed trajectory steps only (None here): no other metadata
        "task",  # qa/code/reasoning, as export --blind gives it: both sides of a pair share it (no label hint)
    }
    src = next(r for r in rows if r["id"] == view.sample_id)
    flat = repr(shown)
    assert src["pair_id"] not in flat and "sycophancy-src" not in flat and src["category"] not in flat
    assert view.position == 1 and view.total == len(q0) and view.label is None
    other = next(r["id"] for r in rows if r["id"] not in mine)
    with pytest.raises(PermissionDenied):
        ann.get_item(engine, users[0], other)
    with pytest.raises(PermissionDenied):
        ann.save_label(engine, users[0], other, "benign")
    with pytest.raises(PermissionDenied):  # admins have no queue of their own here
        ann.get_item(engine, admin, q0[0].sample_id)


def test_labels_are_upserted_with_evidence_time_and_locked_on_submit(team):
    engine, users, admin = team
    add_candidates(engine, 3)
    ann.assign(engine, admin, k=2, seed=9)
    a = users[0]
    queue = ann.my_queue(engine, a)
    assert queue, "every annotator gets at least one pair (3 pairs x k=2 over 4 annotators)"
    sid = queue[0].sample_id
    item = ann.get_item(engine, a, sid)
    quote = item.response[4:12]
    span = ann.evidence_offsets(item.response, f"  {quote} ")
    assert span == (item.response.find(quote), item.response.find(quote) + len(quote))
    with pytest.raises(InputError) as e:
        ann.evidence_offsets(item.response, "not in the text at all")
    assert e.value.field == "evidence"
    lab = ann.save_label(
        engine,
        a,
        sid,
        "misbehavior",
        category="sycophancy_bias",
        severity="high",
        evidence=span,
        note="flatters",
        seconds_spent=12.5,
    )
    assert (lab.label, lab.evidence_text, lab.seconds_spent) == ("misbehavior", quote, 12.5)
    lab = ann.save_label(engine, a, sid, "unsure", note="cannot tell", seconds_spent=3.0)
    assert lab.label == "unsure" and lab.seconds_spent == 15.5 and lab.evidence_text is None
    assert [x.sample_id for x in my_labels(engine, a)] == [sid]
    for bad, fld in (
        (dict(label="maybe"), "label"),
        (dict(label="benign", category="x"), "category"),
        (dict(label="benign", severity="extreme"), "severity"),
        (dict(label="benign", evidence=(5, 10_000)), "evidence"),
        (dict(label="benign", seconds_spent=-1), "seconds_spent"),
    ):
        with pytest.raises(InputError) as e:
            ann.save_label(engine, a, sid, **bad)
        assert e.value.field == fld
    prog = ann.my_progress(engine, a)
    assert (prog.assigned, prog.labeled, prog.submitted, prog.batch) == (len(queue), 1, 0, 1)
    with pytest.raises(InputError):  # unlabeled items remain
        ann.submit_batch(engine, a)
    for q in queue[1:]:
        ann.save_label(engine, a, q.sample_id, "benign", seconds_spent=1)
    assert ann.submit_batch(engine, a) == len(queue)
    with pytest.raises(InputError) as e:
        ann.save_label(engine, a, sid, "benign")
    assert e.value.field == "sample_id"
    assert ann.get_item(engine, a, sid).label.label == "unsure"
    prog = ann.my_progress(engine, a)
    assert (prog.submitted, prog.batch, prog.remaining) == (len(queue), None, 0)
    assert all(x.submitted for x in my_labels(engine, a))
