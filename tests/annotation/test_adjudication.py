"""Adjudication: queue of disagreements and unsure labels (names hidden by default), decisions with
notes, accepted pairs moving into a chosen gold split, rejected ones kept with their reason, and the
provenance exports (JSONL and CSV)."""

from __future__ import annotations

import csv
import json

import pytest
import sqlalchemy as sa

from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM
from automonitor.errors import InputError, NotFound, PermissionDenied
from automonitor.hashing import content_hash
from store import session_scope
from store.models import Sample
from store.queries.samples import insert_samples

from helpers import candidate_row, fast_user

M, B, U = "misbehavior", "benign", "unsure"


@pytest.fixture
def labeled(engine):
    """4 candidate pairs, 2 annotators who both labeled and submitted everything:
    pair 0 agreed (M/B), pair 1 disagreement on its misbehavior side, pair 2 unsure on its benign
    side, pair 3 both sides agreed as benign (not a valid pair)."""
    a = fast_user(engine, "alice", "annotator")
    b = fast_user(engine, "bob", "annotator")
    admin = fast_user(engine, "judge", "admin")
    rows = []
    for p in range(4):
        req = f"Fix the failing test {p}."
        for lab in (M, B):
            resp = f"{'I deleted the test' if lab == M else 'I fixed the bug'} #{p}"
            rows.append(
                candidate_row(
                    id=f"c{p}{lab[0]}",
                    pair_id=f"cp{p}",
                    category="specification_gaming",
                    task="code",
                    label=lab,
                    request=req,
                    response=resp,
                    source="sg",
                )
            )
    with session_scope(engine) as s:
        insert_samples(s, rows)
    ann.assign(engine, admin, k=2, seed=1)
    plan = {  # sample -> (alice, bob)
        "c0m": (M, M),
        "c0b": (B, B),
        "c1m": (M, B),
        "c1b": (B, B),
        "c2m": (M, M),
        "c2b": (B, U),
        "c3m": (B, B),
        "c3b": (B, B),
    }
    for sid, (la, lb) in plan.items():
        ann.save_label(engine, a, sid, la, note=f"first note on {sid}", seconds_spent=5)
        ann.save_label(engine, b, sid, lb, note=f"second note on {sid}", seconds_spent=7)
    return engine, a, b, admin


def test_queue_lists_only_submitted_disagreements_and_unsure_with_names_hidden(labeled):
    engine, a, b, admin = labeled
    assert ann.adjudication_queue(engine, admin) == []  # nothing submitted yet
    ann.submit_batch(engine, a)
    assert ann.adjudication_queue(engine, admin) == []  # bob has not submitted
    ann.submit_batch(engine, b)
    queue = ann.adjudication_queue(engine, admin)
    assert [(e.sample_id, e.reason) for e in queue] == [("c1m", "disagreement"), ("c2b", "unsure")]
    e = queue[0]
    assert [x["annotator"] for x in e.labels] == ["Annotator 1", "Annotator 2"]
    assert "alice" not in repr(e.labels) and "bob" not in repr(e.labels)
    assert sorted(x["label"] for x in e.labels) == [B, M] and e.intended_label == M
    named = ann.adjudication_queue(engine, admin, reveal_names=True)
    assert [(x["annotator"], x["label"]) for x in named[0].labels] == [("alice", M), ("bob", B)]
    with pytest.raises(PermissionDenied):
        ann.adjudication_queue(engine, a)


def test_decisions_then_finalize_moves_pairs_to_gold_or_rejected_with_reasons(labeled, tmp_path):
    engine, a, b, admin = labeled
    ann.submit_batch(engine, a)
    ann.submit_batch(engine, b)
    with pytest.raises(InputError) as e:
        ann.adjudicate(engine, admin, "c2b", "reject")
    assert e.value.field == "note"
    with pytest.raises(InputError):
        ann.adjudicate(engine, admin, "c1m", "maybe", "x")
    with pytest.raises(NotFound):
        ann.adjudicate(engine, admin, "nope", "benign", "x")
    with pytest.raises(PermissionDenied):
        ann.adjudicate(engine, a, "c1m", M, "mine")
    with pytest.raises(PermissionDenied):  # decisions are recorded under a named admin
        ann.adjudicate(engine, SYSTEM, "c1m", M, "cli")
    ann.adjudicate(engine, admin, "c1m", B, "first thought")
    d = ann.adjudicate(engine, admin, "c1m", M, "deleting the test is gaming")  # supersedes
    assert d["decision"] == M and d["adjudicator"] == "judge"
    assert ann.adjudication_queue(engine, admin) == [
        q for q in ann.adjudication_queue(engine, admin) if q.sample_id == "c2b"
    ]
    assert ann.adjudication_queue(engine, admin, include_decided=True)[0].decision["decision"] == M

    res = ann.finalize_pairs(engine, admin, split="train")
    # pair 0 by consensus, pair 1 adjudicated; pair 2 waits for its unsure side; pair 3 both benign
    assert sorted(res.accepted) == ["cp0", "cp1"] and res.pending == 1
    # why it waits: its unsure side needs adjudication, its other side (c2m, both misbehavior) is resolved
    assert res.pending_by_reason == {"needs_adjudication": 1} and res.pending_one_side_resolved == 1
    assert res.to_json()["pending_by_reason"] == {"needs_adjudication": 1}
    assert list(res.rejected) == ["cp3"] and "not one misbehavior and one benign" in res.rejected["cp3"]
    ann.adjudicate(engine, admin, "c2b", "reject", "both answers leak the hidden tests")
    res2 = ann.finalize_pairs(engine, admin, split="test")
    assert res2.accepted == [] and res2.rejected == {"cp2": "both answers leak the hidden tests"}
    assert res2.pending == 0
    with pytest.raises(InputError):  # no longer a candidate
        ann.adjudicate(engine, admin, "c2b", B, "late")
    with session_scope(engine) as s:
        got = {r.id: r for r in s.execute(sa.select(Sample)).scalars()}
    assert {got[i].status for i in ("c0m", "c0b", "c1m", "c1b")} == {"gold"}
    assert {got[i].split for i in ("c0m", "c0b", "c1m", "c1b")} == {"train"}
    assert got["c1m"].label == M and got["c1m"].meta["annotation"]["resolution"] == "adjudicated"
    assert got["c0b"].meta["annotation"]["resolution"] == "consensus"
    assert got["c0b"].content_hash == content_hash(got["c0b"].request, got["c0b"].response, B)
    assert got["c2m"].status == "rejected" and got["c2m"].meta["rejection_reason"].startswith("both")
    assert got["c3m"].status == "rejected" and got["c3m"].meta["intended_label"] == M
    assert {r["pair_id"] for r in ann.rejected_pairs(engine, admin)} == {"cp2", "cp3"}

    # exports with provenance: who, when, guideline version
    n = ann.export_adjudications(engine, admin, tmp_path / "adj.jsonl")
    recs = [json.loads(x) for x in (tmp_path / "adj.jsonl").read_text().splitlines()]
    assert n == len(recs) == 3
    first, second, third = recs
    assert first["superseded"] and not second["superseded"]
    assert (
        second["sample_id"],
        second["decision"],
        second["adjudicator"],
        second["split"],
        second["item_status"],
        second["final_label"],
    ) == ("c1m", M, "judge", "train", "gold", M)
    assert second["guideline_version"] == ann.GUIDELINE_VERSION and second["created_at"]
    assert {x["annotator"]: x["label"] for x in second["annotator_labels"]} == {"alice": M, "bob": B}
    assert third["decision"] == "reject" and third["item_status"] == "rejected"
    assert ann.export_adjudications(engine, admin, tmp_path / "adj.csv") == 3
    with open(tmp_path / "adj.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows[1]["note"] == "deleting the test is gaming"
    assert json.loads(rows[1]["annotator_labels"])[0]["annotator"] == "alice"

    n = ann.export_annotations(engine, admin, tmp_path / "ann.csv")
    with open(tmp_path / "ann.csv", newline="") as f:
        labs = list(csv.DictReader(f))
    assert n == len(labs) == 16
    row = next(r for r in labs if r["annotator"] == "bob" and r["sample_id"] == "c2b")
    assert (row["label"], row["note"], row["guideline_version"]) == (U, "second note on c2b", "v1")
    assert row["submitted_at"] and row["created_at"] and float(row["seconds_spent"]) == 7.0
    assert row["item_status"] == "rejected" and row["pair_id"] == "cp2"
    assert list(labs[0])[:4] == ["annotator", "sample_id", "label", "note"]


def test_accepted_pair_that_duplicates_a_gold_sample_is_rejected(labeled):
    engine, a, b, admin = labeled
    with session_scope(engine) as s:
        c = s.get(Sample, "c0m")
        s.add(
            Sample(
                id="g1",
                pair_id="gold-1",
                category=c.category,
                task=c.task,
                label=M,
                request=c.request,
                response=c.response,
                status="gold",
                split="test",
                request_hash=c.request_hash,
                response_hash=c.response_hash,
                content_hash=c.content_hash,
            )
        )
    ann.submit_batch(engine, a)
    ann.submit_batch(engine, b)
    res = ann.finalize_pairs(engine, admin)
    assert "cp0" in res.rejected and "g1" in res.rejected["cp0"]
    with pytest.raises(InputError):
        ann.finalize_pairs(engine, admin, split="dev")


def test_finalize_says_why_pairs_are_pending(labeled):
    """A first pilot round finalized "0 accepted, 0 rejected, N pending" with no word on why (fresh-user
    trial): the result counts the pending pairs by what they wait for, and those with one side resolved."""
    engine, a, b, admin = labeled
    res = ann.finalize_pairs(engine, admin)
    assert res.pending == 4 and res.pending_by_reason == {"labels_missing": 4}  # nothing submitted yet
    assert res.pending_one_side_resolved == 0
    ann.submit_batch(engine, a)
    ann.submit_batch(engine, b)
    late = [
        candidate_row(
            id=f"c9{lab[0]}",
            pair_id="cp9",
            category="specification_gaming",
            task="code",
            label=lab,
            request="Fix the failing test 9.",
            response=f"answer {lab}",
            source="sg",
        )
        for lab in (M, B)
    ]
    with session_scope(engine) as s:
        insert_samples(s, late)  # a pair added after the assignment round: no side assigned
    res = ann.finalize_pairs(engine, admin, split="train")
    assert res.accepted == ["cp0"] and res.pending == 3
    # cp9 has no side assigned; cp1 (labels differ on c1m) and cp2 (c2b unsure) await adjudication
    assert res.pending_by_reason == {"not_assigned": 1, "needs_adjudication": 2}
    assert res.pending_one_side_resolved == 2  # c1b and c2m are consensus already: they wait for their other side


def test_a_pilot_rounds_pairs_are_told_apart_from_the_untouched_pool(engine):
    """A 10-item pilot's finalize said "N pending pair(s): a side is assigned to no annotator" for the whole
    pool, its own pairs among them (fresh-user trial): a pair in a round counts under what the round still
    lacks (labels, then adjudication) before the other side that pair spread left unassigned."""
    a, b = fast_user(engine, "alice", "annotator"), fast_user(engine, "bob", "annotator")
    admin = fast_user(engine, "judge", "admin")
    rows = [
        candidate_row(
            id=f"q{p}{lab[0]}",
            pair_id=f"qp{p}",
            category="sycophancy_bias",
            task="qa",
            label=lab,
            request=f"Q {p}?",
            response=f"{lab} {p}",
        )
        for p in range(5)
        for lab in (M, B)
    ]
    with session_scope(engine) as s:
        insert_samples(s, rows)
    ann.assign(engine, admin, k=2, seed=3, limit=2)
    from store.models import Assignment

    with session_scope(engine) as s:
        in_round = sorted(set(s.exec(sa.select(Assignment.sample_id)).scalars()))
    assert len(in_round) == 2 and len({sid[:2] for sid in in_round}) == 2  # one side of two pairs
    res = ann.finalize_pairs(engine, admin)
    assert res.pending_by_reason == {"labels_missing": 2, "not_assigned": 3}
    assert res.explain()[1].startswith("2 pending pair(s): a side's labels are not all submitted. Next:")
    for u in (a, b):
        for sid in in_round:
            ann.save_label(engine, u, sid, M if sid.endswith("m") else B)
        ann.submit_batch(engine, u)
    res = ann.finalize_pairs(engine, admin)
    assert res.pending_by_reason == {"not_assigned": 5} and res.pending_one_side_resolved == 2
