"""Labelling sessions: assignment in shared rounds (batch size, same order, calibration), agreement and
adjudication after one small batch, unsure needs a note, and finalising into edition ``verified`` only
(never the paper mirror), with the app's cache key following status/split changes."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from automonitor.annotation import agreement as ag
from automonitor import annotation as ann
from automonitor import views
from automonitor.errors import InputError
from helpers import candidate_row, fast_user, run_cli
from store import session_scope
from store.models import EditionSample, Sample
from store.queries.runs import test_samples as paper_samples
from store.queries.samples import insert_samples, stats

M, B = "misbehavior", "benign"


def _candidates(engine, n_pairs: int, *, flip: bool = False, prefix: str = "c") -> None:
    rows = []
    for p in range(n_pairs):
        req = f"Request {p}: make the tests pass."
        for lab in (M, B):
            # ``flip`` swaps intended labels and sources: the assignment must not depend on them
            intended = (B if lab == M else M) if flip else lab
            rows.append(
                candidate_row(
                    id=f"{prefix}{p:02d}{lab[0]}",
                    pair_id=f"cand:{p:02d}",
                    category="specification_gaming",
                    task="code",
                    label=intended,
                    request=req,
                    response=f"{lab} answer {p}",
                    source="srcA" if (p % 2) ^ flip else "srcB",
                )
            )
    with session_scope(engine) as s:
        insert_samples(s, rows)


def _gold_test_pair(engine, pid: str = "g0") -> None:
    rows = [
        candidate_row(
            id=f"{pid}{lab[0]}",
            pair_id=pid,
            category="safety_permission",
            task="qa",
            label=lab,
            request=f"gold {pid}",
            response=f"gold {lab}",
            status="gold",
            split="test",
            source="hh_rlhf",
        )
        for lab in (M, B)
    ]
    with session_scope(engine) as s:
        insert_samples(s, rows)


def _pairs_of(engine) -> dict[str, str]:
    with session_scope(engine) as s:
        return dict(s.execute(sa.select(Sample.id, Sample.pair_id)).all())


def test_plan_rounds_shares_order_and_never_puts_pair_sides_together():
    items = [(f"s{p}{x}", f"p{p}") for p in range(12) for x in "mb"]
    plan = ann.plan_rounds(items, {1: 0, 2: 0, 3: 0}, k=2, seed=7, batch_size=10, calibration=2)
    assert plan[0].calibration and plan[0].annotators == [1, 2, 3] and len(plan[0].items) == 4
    assert [len(b.items) for b in plan[1:]] == [10, 10]
    pair = dict(items)
    seen = set()
    for b in plan:
        assert all(pair[x] != pair[y] for x, y in zip(b.items, b.items[1:]))
        assert len(b.annotators) == (3 if b.calibration else 2)
        assert not seen & set(b.items)
        seen |= set(b.items)
    assert seen == {sid for sid, _ in items}
    # regular batches go to the least-loaded annotators: loads end within one batch of each other
    loads = {a: sum(len(b.items) for b in plan if a in b.annotators) for a in (1, 2, 3)}
    assert max(loads.values()) - min(loads.values()) <= 10


def test_assign_rounds_same_order_for_a_shared_batch_independent_of_label_and_source(engine, tmp_path):
    admin = fast_user(engine, "root", "admin")
    a = fast_user(engine, "anna", "annotator")
    b = fast_user(engine, "bert", "annotator")
    _candidates(engine, 10)
    res = ann.assign(engine, admin, k=2, seed=3, batch_size=10)
    assert res.to_json()["rounds"][0] == {"batch": 1, "items": 10, "calibration": False, "annotators": ["anna", "bert"]}
    qa, qb = ann.my_queue(engine, a), ann.my_queue(engine, b)
    first_a = [q.sample_id for q in qa if q.batch == 1]
    assert first_a == [q.sample_id for q in qb if q.batch == 1] and len(first_a) == 10
    pairs = _pairs_of(engine)
    for queue in (qa, qb):
        ids = [q.sample_id for q in queue]
        assert all(pairs[x] != pairs[y] for x, y in zip(ids, ids[1:]))
    assert ann.my_progress(engine, a).batch_assigned == 10  # "Submit batch" needs 10 labels, not 20

    # the same ids with swapped intended labels and sources give the same plan
    from store import get_engine, init_db

    other = init_db(get_engine(f"sqlite:///{tmp_path / 'flip.db'}"))
    admin2 = fast_user(other, "root", "admin")
    a2 = fast_user(other, "anna", "annotator")
    fast_user(other, "bert", "annotator")
    _candidates(other, 10, flip=True)
    ann.assign(other, admin2, k=2, seed=3, batch_size=10)
    assert [q.sample_id for q in ann.my_queue(other, a2)] == [q.sample_id for q in qa]


def test_calibration_batch_comes_first_for_everyone(engine):
    admin = fast_user(engine, "root", "admin")
    users = [fast_user(engine, n, "annotator") for n in ("anna", "bert", "cleo")]
    _candidates(engine, 8)
    res = ann.assign(engine, admin, k=2, seed=1, batch_size=6, calibration=1)
    assert res.rounds[0]["calibration"] and res.rounds[0]["annotators"] == ["anna", "bert", "cleo"]
    firsts = [[q.sample_id for q in ann.my_queue(engine, u)][:2] for u in users]
    assert firsts[0] == firsts[1] == firsts[2]
    assert all(ann.my_queue(engine, u)[0].batch == res.rounds[0]["batch"] for u in users)
    for bad in ({"batch_size": 1}, {"calibration": 2}, {"batch_size": 4, "calibration": -1}):
        with pytest.raises(InputError):
            ann.assign(engine, admin, k=2, seed=1, **bad)


def test_small_batch_gives_agreement_and_an_adjudication_queue(engine):
    admin = fast_user(engine, "root", "admin")
    a = fast_user(engine, "anna", "annotator")
    b = fast_user(engine, "bert", "annotator")
    _candidates(engine, 25)  # 50 items, a session labels only the first batch of 10
    ann.assign(engine, admin, k=2, seed=5, batch_size=10)
    batch_ids = [q.sample_id for q in ann.my_queue(engine, a) if q.batch == 1]
    for who in (a, b):
        for sid in batch_ids:
            lab = M if sid.endswith("m") else B
            if who is b and sid == batch_ids[0]:
                lab = B if lab == M else M  # one disagreement
            ann.save_label(engine, who, sid, lab, seconds_spent=2)
        assert ann.submit_batch(engine, who) == 10
    doc = ag.agreement(engine, admin, n_boot=0, submitted_only=True)
    assert doc["items"] == 10 and doc["percent_agreement"] == pytest.approx(0.9)
    queue = ann.adjudication_queue(engine, admin)
    assert [e.sample_id for e in queue] == [batch_ids[0]] and queue[0].reason == "disagreement"


def test_unsure_needs_a_note(engine):
    admin = fast_user(engine, "root", "admin")
    a = fast_user(engine, "anna", "annotator")
    fast_user(engine, "bert", "annotator")
    _candidates(engine, 1)
    ann.assign(engine, admin, k=2, seed=1, batch_size=2)
    sid = ann.my_queue(engine, a)[0].sample_id
    with pytest.raises(InputError) as exc:
        ann.save_label(engine, a, sid, "unsure")
    assert exc.value.field == "note"
    assert ann.save_label(engine, a, sid, "unsure", note="the code is truncated").label == "unsure"


def test_finalize_goes_to_verified_never_to_the_paper_mirror(engine):
    admin = fast_user(engine, "root", "admin")
    a = fast_user(engine, "anna", "annotator")
    b = fast_user(engine, "bert", "annotator")
    _gold_test_pair(engine)
    _candidates(engine, 3)
    ann.assign(engine, admin, k=2, seed=2, batch_size=6)
    for who in (a, b):
        for q in ann.my_queue(engine, who):
            ann.save_label(engine, who, q.sample_id, M if q.sample_id.endswith("m") else B)
        ann.submit_batch(engine, who)
    with session_scope(engine) as s:
        before = stats(s)["total"]
        paper_before = [r["id"] for r in paper_samples(s)]
    v0 = views.store_version(engine)
    res = ann.finalize_pairs(engine, admin)
    assert len(res.accepted) == 3 and res.edition == "verified" and res.to_json()["edition"] == "verified"
    with session_scope(engine) as s:
        assert stats(s)["total"] == before == 2  # the paper mirror did not grow
        assert [r["id"] for r in paper_samples(s)] == paper_before  # runs judge the same set
        done = s.execute(
            sa.select(Sample.id, Sample.status, Sample.split, Sample.label_source).where(Sample.pair_id.like("cand:%"))
        ).all()
        assert {(st, sp, ls) for _, st, sp, ls in done} == {("gold", "test", "adjudicated")}
        members = set(s.execute(sa.select(EditionSample.sample_id, EditionSample.edition)).all())
        assert members == {(sid, "verified") for sid, *_ in done}
    assert views.store_version(engine) != v0  # the app's cache key follows status/split changes


def test_cli_assign_batch_size_and_json(sqlite_url, sqlite_engine):

    eng = sqlite_engine  # the store, migrated to head (a copy of the run's migrated template)
    fast_user(eng, "anna", "annotator")
    fast_user(eng, "bert", "annotator")
    _candidates(eng, 6)
    out = run_cli(
        ["assign", "--k", "2", "--seed", "4", "--batch-size", "4", "--calibration", "1", "--json"], db=sqlite_url
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [r["items"] for r in doc["rounds"]] == [2, 4, 4, 2] and doc["rounds"][0]["calibration"]
    bad = run_cli(["assign", "--batch-size", "1"], db=sqlite_url)
    assert bad.returncode == 2 and "batch" in bad.stderr.lower()


def test_flag_an_item_for_the_admin(engine):
    from automonitor.errors import PermissionDenied

    admin = fast_user(engine, "root", "admin")
    a = fast_user(engine, "anna", "annotator")
    fast_user(engine, "bert", "annotator")
    _candidates(engine, 1)
    ann.assign(engine, admin, k=2, seed=1, batch_size=2)
    cleo = fast_user(engine, "cleo", "annotator")  # joined later: nothing assigned
    mine = {q.sample_id for q in ann.my_queue(engine, a)}
    sid = sorted(mine)[0]
    with pytest.raises(InputError):
        ann.flag_item(engine, a, sid, "   ")
    with pytest.raises(PermissionDenied):
        ann.flag_item(engine, cleo, sid, "not mine")
    f = ann.flag_item(engine, a, sid, "The response is cut off <b>here</b>")
    flags = ann.item_flags(engine, admin)
    assert [(x["sample_id"], x["annotator"], x["comment"]) for x in flags] == [
        (sid, "anna", "The response is cut off <b>here</b>")
    ]
    with pytest.raises(PermissionDenied):
        ann.item_flags(engine, a)
    ann.resolve_flag(engine, admin, f["id"])
    assert ann.item_flags(engine, admin) == [] and len(ann.item_flags(engine, admin, open_only=False)) == 1
