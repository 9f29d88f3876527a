"""``automonitor assignments export FILE [--annotator NAME]`` gives exactly what each
annotator may see (sample id, request, response, batch), never source, intended label, pair or labels."""

from __future__ import annotations

import json

from automonitor import annotation as ann
from automonitor.annotation.assignment_files import ExportRow
from store import session_scope
from store.queries.samples import insert_samples

from helpers import candidate_row, fast_user

M, B = "misbehavior", "benign"


def test_assignments_export_gives_only_what_the_annotator_may_see(sqlite_engine, sqlite_url, tmp_path, cli):
    eng = sqlite_engine
    alice = fast_user(eng, "alice", "annotator")
    bob = fast_user(eng, "bob", "annotator")
    admin = fast_user(eng, "judge", "admin")
    rows = []
    for p in range(3):
        req = f"Please review request number {p}."
        for lab in (M, B):
            rows.append(
                candidate_row(
                    id=f"c{p}{lab[0]}",
                    pair_id=f"SECRETPAIR{p}",
                    category="sycophancy_bias",
                    task="qa",
                    label=lab,
                    request=req,
                    response=f"Reply {lab[0].upper()}{p}.",
                    source="SECRETSOURCE",
                )
            )
    with session_scope(eng) as s:
        insert_samples(s, rows)
    ann.assign(eng, admin, k=1, seed=3)
    ann.save_label(eng, bob, ann.my_queue(eng, bob)[0].sample_id, B, note="SECRETNOTE")
    queue = [q.sample_id for q in ann.my_queue(eng, alice)]
    assert queue

    out = tmp_path / "alice.jsonl"
    r = cli(["assignments", "export", str(out), "--annotator", "alice", "--json"], db=sqlite_url)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["rows"] == len(queue)
    text = out.read_text(encoding="utf-8")
    got = [json.loads(line) for line in text.splitlines()]
    assert [g["sample_id"] for g in got] == queue  # queue order
    for g in got:
        assert (
            tuple(g) == tuple(ExportRow.__annotations__) == ("annotator", "sample_id", "request", "response", "batch")
        )
        assert g["annotator"] == "alice" and isinstance(g["batch"], int)
        want = next(x for x in rows if x["id"] == g["sample_id"])
        assert (g["request"], g["response"]) == (want["request"], want["response"])
    for secret in ("SECRETPAIR", "SECRETSOURCE", "SECRETNOTE", M, B, "bob"):
        assert secret not in text

    everyone = tmp_path / "all.jsonl"
    r = cli(["assignments", "export", str(everyone)], db=sqlite_url)
    assert r.returncode == 0, r.stderr
    names = [json.loads(line)["annotator"] for line in everyone.read_text().splitlines()]
    assert sorted(set(names)) == ["alice", "bob"] and len(names) == 6

    r = cli(["assignments", "export", str(tmp_path / "x.jsonl"), "--annotator", "nobody"], db=sqlite_url)
    assert r.returncode == 2 and "--annotator" in r.stderr and "nobody" in r.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_an_annotator_can_export_only_their_own_queue(sqlite_engine, tmp_path):
    import pytest

    from automonitor.annotation.assignment_files import assignment_rows
    from automonitor.errors import PermissionDenied

    eng = sqlite_engine
    alice = fast_user(eng, "alice", "annotator")
    fast_user(eng, "bob", "annotator")
    admin = fast_user(eng, "judge", "admin")
    with session_scope(eng) as s:
        insert_samples(
            s,
            [
                candidate_row(
                    id=f"c{lab[0]}",
                    pair_id="p",
                    category="sycophancy_bias",
                    task="qa",
                    label=lab,
                    request="q",
                    response=f"r{lab}",
                )
                for lab in (M, B)
            ],
        )
    ann.assign(eng, admin, k=2, seed=1)
    assert {r["annotator"] for r in assignment_rows(eng, alice)} == {"alice"}
    with pytest.raises(PermissionDenied):
        assignment_rows(eng, alice, "bob")
