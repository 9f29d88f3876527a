"""8 annotators writing at once (16 threads, each call with its own session, through the core API)
lose no label, lose no update and create no duplicate, on SQLite (WAL) and PostgreSQL."""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor

import sqlalchemy as sa

from automonitor import annotation as ann
from store import session_scope
from store.models import Annotation
from store.queries.samples import insert_samples

from helpers import candidate_row, fast_user, my_labels

LABELS = ("misbehavior", "benign", "unsure")


def _label_for(name: str, sid: str) -> str:
    return LABELS[int(hashlib.sha256(f"{name}/{sid}".encode()).hexdigest(), 16) % 3]


def test_eight_concurrent_annotators_lose_nothing_and_duplicate_nothing(engine):
    annotators = [fast_user(engine, f"worker{i}", "annotator") for i in range(8)]
    admin = fast_user(engine, "lead", "admin")
    rows = []
    for p in range(12):
        req = f"Task {p}"
        for lab in ("misbehavior", "benign"):
            resp = f"{lab} response to task {p}"
            rows.append(
                candidate_row(
                    id=f"k{p:02d}{lab[0]}",
                    pair_id=f"k{p}",
                    category="sycophancy_bias",
                    task="qa",
                    label=lab,
                    request=req,
                    response=resp,
                )
            )
    with session_scope(engine) as s:
        insert_samples(s, rows)
    res = ann.assign(engine, admin, k=4, seed=8)
    assert res.assignments == 24 * 4
    queues = {a.name: [q.sample_id for q in ann.my_queue(engine, a)] for a in annotators}
    barrier = threading.Barrier(16)

    def worker(acc, order):
        barrier.wait(timeout=60)
        for sid in order:
            ann.save_label(engine, acc, sid, _label_for(acc.name, sid), note=f"{acc.name} {sid}", seconds_spent=1.0)
        return len(order)

    with ThreadPoolExecutor(max_workers=16) as pool:
        futures = []
        for acc in annotators:  # two writers per annotator, in opposite directions: real races
            futures.append(pool.submit(worker, acc, queues[acc.name]))
            futures.append(pool.submit(worker, acc, list(reversed(queues[acc.name]))))
        written = sum(f.result(timeout=300) for f in futures)
    assert written == 2 * 24 * 4

    with session_scope(engine) as s:
        got = s.execute(
            sa.select(
                Annotation.annotator_id,
                Annotation.sample_id,
                Annotation.label,
                Annotation.seconds_spent,
                Annotation.note,
            )
        ).all()
    by_id = {a.id: a.name for a in annotators}
    keys = [(by_id[r.annotator_id], r.sample_id) for r in got]
    assert len(keys) == len(set(keys)) == 24 * 4  # one row per assignment: none lost, none doubled
    assert set(keys) == {(n, sid) for n, q in queues.items() for sid in q}
    for r in got:
        name = by_id[r.annotator_id]
        assert r.label == _label_for(name, r.sample_id) and r.note == f"{name} {r.sample_id}"
        assert r.seconds_spent == 2.0  # both writers' time added up: no lost update

    # and each annotator still reads exactly their own labels
    for acc in annotators:
        mine = my_labels(engine, acc)
        assert sorted(x.sample_id for x in mine) == sorted(queues[acc.name])
        assert {x.annotator for x in mine} == {acc.name}
