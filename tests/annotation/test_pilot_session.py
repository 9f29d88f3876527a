"""Small labeling sessions: ``assign --limit/--sample``, ``--overlap``, ``--pair-spread``,
``unassign`` and the Label page's "item i of n in this round", on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import sqlalchemy as sa

from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM
from automonitor.errors import InputError
from store import session_scope
from store.models import Assignment, Sample

from helpers import fast_user
from test_assignment import add_candidates


def _rows(engine):
    with session_scope(engine) as s:
        return s.execute(
            sa.select(Assignment.annotator_id, Assignment.sample_id, Assignment.batch, Sample.pair_id)
            .join(Sample, Sample.id == Assignment.sample_id)
            .order_by(Assignment.annotator_id, Assignment.position)
        ).all()


@pytest.fixture
def pilot(engine):
    users = [fast_user(engine, f"ann{i}", "annotator") for i in range(2)]
    add_candidates(engine, 30)
    return engine, users


def test_limit_with_full_overlap_gives_each_annotator_exactly_n_items_one_side_per_pair(pilot):
    engine, users = pilot
    res = ann.assign(engine, SYSTEM, seed=3, limit=10, overlap=1.0)
    doc = res.to_json()
    assert {"items", "assignments", "by_annotator"} <= set(doc)  # the CONTRACT's shape stays
    assert doc["items"] == 10 and doc["assignments"] == 20 and doc["by_annotator"] == {"ann0": 10, "ann1": 10}
    assert doc["session"]["shared"] == 10 and doc["session"]["pairs"] == 10
    rows = _rows(engine)
    per = {u.id: [r for r in rows if r.annotator_id == u.id] for u in users}
    assert all(len(v) == 10 for v in per.values())
    assert {r.sample_id for r in per[users[0].id]} == {r.sample_id for r in per[users[1].id]}
    for v in per.values():  # never two sides of one pair in the round
        assert len({r.pair_id for r in v}) == 10
        assert len({r.batch for r in v}) == 1
    # the next round completes the started pairs first: the 10 other sides
    ann.assign(engine, SYSTEM, seed=4, limit=10, overlap=1.0)
    rows2 = _rows(engine)
    second = [r for r in rows2 if r.batch != rows[0].batch and r.annotator_id == users[0].id]
    assert {r.pair_id for r in second} == {r.pair_id for r in per[users[0].id]}
    assert not {r.sample_id for r in second} & {r.sample_id for r in per[users[0].id]}


def test_item_view_counts_within_the_round(pilot):
    engine, users = pilot
    ann.assign(engine, SYSTEM, seed=1, limit=6)
    ann.assign(engine, SYSTEM, seed=2, limit=4)
    q = ann.my_queue(engine, users[0])
    assert len(q) == 10
    views = [ann.get_item(engine, users[0], it.sample_id) for it in q]
    assert [(v.round_position, v.round_total) for v in views] == [(i, 6) for i in range(1, 7)] + [
        (i, 4) for i in range(1, 5)
    ]


def test_partial_overlap_labels_the_rest_once_on_different_annotators_per_pair(pilot):
    engine, users = pilot
    res = ann.assign(engine, SYSTEM, seed=7, limit=10, overlap=0.2)
    assert res.session["shared"] == 2 and res.session["single"] == 8
    assert res.assignments == 2 * 2 + 8
    counts = Counter(r.sample_id for r in _rows(engine))
    assert sorted(counts.values()) == [1] * 8 + [2] * 2
    assert sorted(res.by_annotator.values()) == [6, 6]
    # single-overlap mode: the second round's sides go to the annotator without the pair's first side
    ann.assign(engine, SYSTEM, seed=8, limit=20, overlap=0.0)
    holders: dict[str, set] = {}
    for r in _rows(engine):
        holders.setdefault(r.pair_id, set()).add(r.annotator_id)
    once = [p for p, c in Counter(r.pair_id for r in _rows(engine)).items() if c == 2]
    assert once and all(len(holders[p]) == 2 for p in once)


def test_without_pair_spread_whole_pairs_are_taken(pilot):
    engine, _ = pilot
    ann.assign(engine, SYSTEM, seed=1, limit=10, pair_spread=False)
    pairs = Counter(r.pair_id for r in _rows(engine) if r.annotator_id == _rows(engine)[0].annotator_id)
    assert set(pairs.values()) == {2} and len(pairs) == 5


def test_sample_is_stratified_by_category_and_task(engine):
    fast_user(engine, "solo", "annotator")
    add_candidates(engine, 60)  # strata: 2 categories x (qa | code)
    res = ann.assign(engine, SYSTEM, seed=5, limit=12, stratify=True)
    cells = res.session["by_category_task"]
    with session_scope(engine) as s:
        avail = Counter(
            f"{c}/{t}"
            for c, t in s.execute(sa.select(Sample.category, Sample.task).where(Sample.status == "candidate"))
        )
    total = sum(avail.values())
    for cell, n in avail.items():
        assert abs(cells.get(cell, 0) - 12 * n / total) < 1, (cell, cells)
    assert sum(cells.values()) == 12


def test_session_arguments_are_checked_and_write_nothing(pilot):
    engine, _ = pilot
    for kw, fld in (
        ({"limit": 0}, "limit"),
        ({"limit": 5, "overlap": 1.5}, "overlap"),
        ({"limit": 5, "batch_size": 4}, "limit"),
    ):
        with pytest.raises(InputError) as e:
            ann.assign(engine, SYSTEM, seed=1, **kw)
        assert e.value.field == fld
    assert _rows(engine) == []


def test_unassign_returns_open_items_and_keeps_labeled_ones(pilot):
    engine, users = pilot
    ann.assign(engine, SYSTEM, seed=3, limit=4)
    first = ann.my_queue(engine, users[0])[0]
    ann.save_label(engine, users[0], first.sample_id, "benign")
    with pytest.raises(InputError):
        ann.unassign(engine, SYSTEM)
    res = ann.unassign(engine, SYSTEM, annotator="ann0")
    assert (res.removed, res.kept) == (3, 1)
    assert [q.sample_id for q in ann.my_queue(engine, users[0])] == [first.sample_id]
    res = ann.unassign(engine, SYSTEM, everything=True)
    assert res.removed == 4 and len(ann.my_queue(engine, users[1])) == 0
    # the items are back in the pool
    again = ann.assign(engine, SYSTEM, seed=3, limit=4)
    assert again.items == 4


def test_cli_assign_limit_and_unassign(cli, sqlite_url, sqlite_engine):

    eng = sqlite_engine  # the store, migrated to head (a copy of the run's migrated template)
    for i in range(2):
        fast_user(eng, f"ann{i}", "annotator")
    add_candidates(eng, 8)
    r = cli(["assign", "--limit", "6", "--overlap", "1.0", "--seed", "2", "--json"], db=sqlite_url)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["items"] == 6 and doc["assignments"] == 12 and doc["session"]["pair_spread"] is True
    r = cli(["assign", "--limit", "4", "--sample", "4"], db=sqlite_url)
    assert r.returncode == 2 and "--sample" in r.stderr
    r = cli(["unassign", "--batch", str(doc["rounds"][0]["batch"]), "--json"], db=sqlite_url)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["removed"] == 12
    eng.dispose()


def test_cli_assign_sample_is_stratified_and_seeded(cli, sqlite_url, tmp_path):
    """``automonitor assign --sample N --seed S``: N items stratified by category x task (each cell its
    largest-remainder share), the same items for the same seed on an identical store."""
    from store import get_engine, init_db

    docs, picked = [], []
    for copy in ("a", "b"):
        url = sqlite_url if copy == "a" else f"sqlite:///{tmp_path / 'copy.db'}"
        eng = init_db(get_engine(url, fresh=True))
        fast_user(eng, "solo", "annotator")
        add_candidates(eng, 60)  # strata: 2 categories x (qa | code)
        r = cli(["assign", "--sample", "12", "--seed", "5", "--json"], db=url)
        assert r.returncode == 0, r.stderr
        docs.append(json.loads(r.stdout))
        with session_scope(eng) as s:
            avail = Counter(f"{c}/{t}" for c, t in s.execute(sa.select(Sample.category, Sample.task)))
        picked.append(sorted(sid for _, sid, _, _ in _rows(eng)))
        eng.dispose()
    doc = docs[0]
    assert doc["items"] == 12 and doc["session"]["sampling"] == "stratified"
    cells = doc["session"]["by_category_task"]
    total = sum(avail.values())
    assert sum(cells.values()) == 12 and set(cells) == set(avail)
    for cell, n in avail.items():
        assert abs(cells[cell] - 12 * n / total) < 1, (cell, cells)
    assert picked[0] == picked[1] and docs[1]["session"]["by_category_task"] == cells  # seeded
