"""Concurrent finalize / adjudicate, with two REAL processes racing (tests/race_worker.py),
on SQLite and PostgreSQL.

* two admins finalizing at once decide every pair exactly once: the accepted sets are disjoint and
  cover all pairs, no pair is rejected as a duplicate of its own samples, no rejected sample is an
  edition member;
* a ``reject`` racing a finalize is either counted by it (the pair ends rejected) or refused; never
  "recorded" on a pair that just became gold;
* the database itself refuses a non-gold edition member (triggers of migration ``r3_concurrency``);
* a pair is never its own duplicate; a copy ``cand:X`` does not duplicate X, but does duplicate another
  gold pair with the same texts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from automonitor import annotation as ann
from automonitor.annotation.accounts import SYSTEM
from store import session_scope
from store.models import Adjudication, EditionSample, GoldSpan, Sample
from store.queries.samples import insert_samples

from helpers import REPO, candidate_row, fast_user

WORKER = Path(__file__).resolve().parents[1] / "race_worker.py"
M, B = "misbehavior", "benign"


def _pairs(engine, prefix: str, n: int, *, pair_ids=None, status="candidate", texts=None) -> list[str]:
    rows = []
    pids = pair_ids or [f"{prefix}{p}" for p in range(n)]
    for p, pid in enumerate(pids):
        req, resp = texts(p) if texts else (f"{prefix} task {p}", f"{prefix} response {p}")
        for lab in (M, B):
            r = candidate_row(
                id=f"{pid}-{lab[0]}".replace(":", "_"),
                pair_id=pid,
                category="specification_gaming",
                task="qa",
                label=lab,
                request=req,
                response=f"{resp} ({lab})",
                source="race",
                status=status,
            )
            if status == "gold":
                r["split"] = "test"
            rows.append(r)
    with session_scope(engine) as s:
        insert_samples(s, rows)
    return pids


def _labeled(engine, tmp_path, prefix: str, n: int, annotators, admin, marked: bool = False, **kw) -> list[str]:
    """``n`` candidate pairs that both annotators labeled as intended and submitted (consensus); with
    ``marked``, both marked the same span ``[0, len(prefix))`` on each misbehavior side."""
    pids = _pairs(engine, prefix, n, **kw)
    ann.assign(engine, admin, k=2, seed=5)
    with engine.connect() as c:
        items = c.execute(sa.select(Sample.id, Sample.label).where(Sample.pair_id.in_(pids))).all()
    f = tmp_path / f"{prefix}.jsonl"
    f.write_text(
        "".join(
            json.dumps(
                {"annotator": a.name, "sample_id": i.id, "label": i.label}
                | ({"evidence_spans": [[0, len(prefix)]]} if marked and i.label == M else {})
            )
            + "\n"
            for i in items
            for a in annotators
        )
    )
    ann.import_annotations(engine, SYSTEM, f)
    return pids


@pytest.fixture(scope="module")
def racers(tmp_path_factory):
    """Two worker processes (``race_worker.py serve``) that run this module's races, one operation each per
    race: their interpreters start once for the module, not twice a race (about 1 s of CPU each, several
    seconds of a loaded machine's wall clock). Their stderr goes to a file each (read when one dies: a pipe
    nobody reads could fill and block it). Ended (stdin closed) after the module."""
    import os

    env = {**os.environ, "PYTHONPATH": f"{REPO}:{REPO / 'tests'}"}
    logs = tmp_path_factory.mktemp("racers")
    procs = []
    for k in range(2):
        with open(logs / f"racer{k}.err", "w") as err:
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(WORKER), "serve"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    env=env,
                )
            )
            procs[-1].err_path = logs / f"racer{k}.err"  # type: ignore[attr-defined]
    yield procs
    for p in procs:
        p.stdin.close()
    for p in procs:
        try:
            p.wait(30)
        finally:
            p.kill()


def _race(racers, db_url: str, *commands: list[str]) -> list[dict]:
    """Hand one command to each worker process (``racers``), all released at the same instant once every one
    has connected to ``db_url`` (each says ``ready``, then reads the start time); their JSON outputs."""
    procs = racers[: len(commands)]
    for p, cmd in zip(procs, commands):
        p.stdin.write(json.dumps([cmd[0], db_url, *cmd[1:]]) + "\n")
        p.stdin.flush()
    for p in procs:
        if p.stdout.readline() != "ready\n":  # it died
            p.kill()
            raise AssertionError(p.err_path.read_text()[-3000:])
    start = time.time() + 0.05
    for p in procs:
        p.stdin.write(f"{start}\n")
        p.stdin.flush()
    outs = []
    for p in procs:
        line = p.stdout.readline()
        if not line:  # it died
            p.kill()
            raise AssertionError(p.err_path.read_text()[-3000:])
        out = json.loads(line)
        assert "error" not in out, out.get("error")
        outs.append(out)
    return outs


def _edition_non_gold(engine) -> list:
    with engine.connect() as c:
        return c.execute(
            sa.select(EditionSample.sample_id, Sample.status)
            .join(Sample, Sample.id == EditionSample.sample_id)
            .where(Sample.status != "gold")
        ).all()


@pytest.fixture
def team(engine):
    return engine, [fast_user(engine, f"ann{i}", "annotator") for i in (1, 2)], fast_user(engine, "boss", "admin")


def test_two_finalizers_racing_decide_every_pair_once(team, tmp_path, db_url, racers):
    engine, annotators, admin = team
    for trial in range(2):
        pids = _labeled(engine, tmp_path, f"t{trial}p", 30, annotators, admin)
        a, b = _race(racers, db_url, ["finalize"], ["finalize"])
        acc_a, acc_b = set(a["accepted_pairs"]), set(b["accepted_pairs"])
        assert a["rejected_pairs"] == {} and b["rejected_pairs"] == {}, (a, b)  # never its own duplicate
        assert not acc_a & acc_b and acc_a | acc_b == set(pids)
        with engine.connect() as c:
            got = dict(c.execute(sa.select(Sample.id, Sample.status).where(Sample.pair_id.in_(pids))).all())
            members = set(
                c.execute(sa.select(EditionSample.sample_id).where(EditionSample.edition == "verified")).scalars()
            )
        assert set(got.values()) == {"gold"} and set(got) <= members
        assert _edition_non_gold(engine) == []


def test_two_finalizers_racing_store_agreed_spans_once(team, tmp_path, db_url, racers):
    engine, annotators, admin = team
    pids = _labeled(engine, tmp_path, "sp", 20, annotators, admin, marked=True)
    a, b = _race(racers, db_url, ["finalize"], ["finalize"])
    assert set(a["accepted_pairs"]) | set(b["accepted_pairs"]) == set(pids)
    with engine.connect() as c:
        rows = c.execute(
            sa.select(GoldSpan.sample_id, GoldSpan.start_char, GoldSpan.end_char, GoldSpan.provenance, GoldSpan.note)
        ).all()
        mis = set(c.execute(sa.select(Sample.id).where(Sample.pair_id.in_(pids), Sample.label == M)).scalars())
    assert sorted(r.sample_id for r in rows) == sorted(mis)  # one span per misbehavior side, none twice
    assert {(r.start_char, r.end_char, r.provenance) for r in rows} == {(0, 2, "annotated")}
    assert {r.note for r in rows} == {"agreed by ann1, ann2 (lowest pairwise span F1 1.00); finalized by system"}


def test_a_reject_racing_a_finalize_is_counted_or_refused_never_lost(team, tmp_path, db_url, racers):
    engine, annotators, admin = team
    pids = _labeled(engine, tmp_path, "r", 30, annotators, admin)
    with engine.connect() as c:
        targets = list(
            c.execute(
                sa.select(Sample.id).where(Sample.pair_id.in_(pids), Sample.label == M).order_by(Sample.id)
            ).scalars()
        )
    fin, adj = _race(racers, db_url, ["finalize"], ["adjudicate", admin.name, *targets])
    assert len(adj["ok"]) + len(adj["refused"]) == len(targets)
    for msg in adj["refused"].values():
        assert "already gold" in msg
    with engine.connect() as c:
        status = dict(c.execute(sa.select(Sample.id, Sample.status).where(Sample.id.in_(targets))).all())
        rejected_by_adjudicator = set(
            c.execute(sa.select(Adjudication.sample_id).where(Adjudication.decision == "reject")).scalars()
        )
    assert rejected_by_adjudicator == set(adj["ok"])  # every recorded reject is one that returned success
    for sid in targets:
        if sid in adj["ok"]:  # a recorded reject: its pair is rejected now, or still waits for a finalize
            assert status[sid] in ("rejected", "candidate"), sid
        else:
            assert status[sid] == "gold", sid
    # whatever is still pending a finalize now ends rejected
    ann.finalize_pairs(engine, SYSTEM)
    with engine.connect() as c:
        for sid, st in c.execute(sa.select(Sample.id, Sample.status).where(Sample.id.in_(adj["ok"]))):
            assert st == "rejected", sid
    assert _edition_non_gold(engine) == []


def test_database_refuses_non_gold_edition_members(engine):
    _pairs(engine, "g", 1, status="gold")
    _pairs(engine, "c", 1)
    with pytest.raises(sa.exc.IntegrityError, match="gold samples only"):
        with session_scope(engine) as s:
            s.execute(sa.insert(EditionSample).values(edition="verified", sample_id="c0-m"))
    with session_scope(engine) as s:
        s.execute(sa.insert(EditionSample).values(edition="verified", sample_id="g0-m"))
    with pytest.raises(sa.exc.IntegrityError, match="gold samples only"):
        with session_scope(engine) as s:
            s.execute(sa.update(Sample).where(Sample.id == "g0-m").values(status="rejected"))
    with engine.connect() as c:
        assert c.execute(sa.select(Sample.status).where(Sample.id == "g0-m")).scalar() == "gold"


def test_copy_never_duplicates_its_original_but_does_another_gold_pair(team, tmp_path):
    engine, annotators, admin = team
    texts = lambda p: (f"shared task {p}", f"shared response {p}")  # noqa: E731
    _pairs(engine, "", 2, pair_ids=["src:1", "src:2"], status="gold", texts=texts)
    # cand:src:1 is the copy of src:1; cand:src:9 claims src:9 but has src:2's texts
    _labeled(
        engine, tmp_path, "x", 2, annotators, admin, pair_ids=["cand:src:1", "cand:src:9"], texts=lambda p: texts(p)
    )
    res = ann.finalize_pairs(engine, SYSTEM)
    assert res.accepted == ["cand:src:1"]
    assert list(res.rejected) == ["cand:src:9"] and "src_2-" in res.rejected["cand:src:9"]
