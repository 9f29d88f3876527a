"""Candidate copies ``cand:<pair_id>`` of paper pairs can become gold.

End to end on REAL built candidates, through the CLI (its entry point, in this process): a copy of the store built from the
raw sources with seed 0 (``built_db_url``, the run's one real build), two annotators, assign, both label
(import), finalize; ``stats --edition verified`` grows by the accepted copies (hh_rlhf included), while a
candidate whose texts duplicate a gold pair it was NOT copied from is still rejected. SQLite and
PostgreSQL.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
import sqlalchemy as sa

from automonitor.data.build import build
from store import get_engine
from store.models import Sample

from helpers import run_cli_in_process

PASSWORD = "correct horse battery staple\n"


def _ok(res):
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def _stats(cli, db):
    return json.loads(_ok(cli(["stats", "--edition", "verified", "--json"], db=db)).stdout)


@pytest.mark.slow
def test_candidate_copies_of_paper_pairs_become_gold_end_to_end(cli, built_db_url, tmp_path, raw_dir):
    db_url = built_db_url
    for name in ("ann1", "ann2"):  # in this process, the password on its stdin (no interpreter start each)
        args = ["users", "add", name, "--role", "annotator", "--password-stdin"]
        _ok(run_cli_in_process(args, db=db_url, input=PASSWORD))
    _ok(cli(["assign", "--k", "2", "--seed", "3", "--json"], db=db_url))

    eng = get_engine(db_url, fresh=True)
    try:
        with eng.connect() as c:
            cands = c.execute(
                sa.select(Sample.id, Sample.pair_id, Sample.source, Sample.label)
                .where(Sample.status == "candidate", Sample.pair_id.like("cand:%"))
                .order_by(Sample.pair_id, Sample.id)
            ).all()
            originals = {
                r.pair_id: r.status
                for r in c.execute(sa.select(Sample.pair_id, Sample.status).where(Sample.status == "gold"))
            }
    finally:
        eng.dispose()
    by_source: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for r in cands:
        by_source[r.source][r.pair_id].append(r)
    assert "hh_rlhf" in by_source and len(by_source) >= 5  # copies of several sources were built
    chosen = {src: sorted(pairs)[:2] for src, pairs in by_source.items()}
    for src, pids in chosen.items():
        for pid in pids:  # each is a copy of a gold paper pair with the very same texts
            assert originals.get(pid.removeprefix("cand:")) == "gold"

    rows = [
        {"annotator": name, "sample_id": r.id, "label": r.label, "note": "agrees with the construction"}
        for src, pids in chosen.items()
        for pid in pids
        for r in by_source[src][pid]
        for name in ("ann1", "ann2")
    ]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = _stats(cli, db_url)
    assert before["by_source"].get("hh_rlhf", 0) == 0  # hh_rlhf is in verified only through adjudication
    _ok(cli(["annotations", "import", str(labels), "--json"], db=db_url))

    res = json.loads(_ok(cli(["adjudications", "finalize", "--json"], db=db_url)).stdout)
    n_pairs = sum(len(p) for p in chosen.values())
    assert res["rejected_pairs"] == {}
    assert sorted(res["accepted_pairs"]) == sorted(p for ps in chosen.values() for p in ps)
    assert res["accepted"] == n_pairs and res["edition"] == "verified"

    after = _stats(cli, db_url)
    assert after["total"] == before["total"] + 2 * n_pairs
    assert after["pairs"] == before["pairs"] + n_pairs
    for src, pids in chosen.items():
        assert after["by_source"].get(src, 0) == before["by_source"].get(src, 0) + 2 * len(pids), src
    assert after["by_source"]["hh_rlhf"] == 4
    assert after["by_label_source"]["adjudicated"] == 2 * n_pairs

    # a rebuild with the same seed keeps the finalized copies (and changes nothing); the real build, its plan
    # read back from the plan cache as a user's rebuild reads it (the run's seed-0 build wrote it): the CLI's
    # own rebuild is test_build_cli_json_is_one_document_and_rebuild_is_a_no_op
    eng = get_engine(db_url, fresh=True)
    try:
        rebuilt = build(eng, raw_dir, 0)
    finally:
        eng.dispose()
    assert rebuilt["unchanged"] and rebuilt["kept_adjudicated"] == 2 * n_pairs
    assert _stats(cli, db_url)["total"] == after["total"]
