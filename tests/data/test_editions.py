"""Label provenance through import/export, and edition selection in ``run`` and ``report``,
on a small made-up store (SQLite and PostgreSQL)."""

from __future__ import annotations

import json

import sqlalchemy as sa

from helpers import add_control_sample, EDITION_PAIRS, write_pairs


def test_label_source_round_trip_and_validation(cli, db_url, tmp_path):
    f = tmp_path / "pairs.jsonl"
    write_pairs(f)
    assert cli(["import", str(f)], db=db_url).returncode == 0
    for fmt in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"out.{fmt}"
        res = cli(["export", str(out), "--json"], db=db_url)
        assert res.returncode == 0, res.stderr
        if fmt == "jsonl":
            rows = [json.loads(x) for x in out.read_text().splitlines()]
            got = {(r["pair_id"], r["label_source"]) for r in rows}
            assert got == {(p[0], p[6] or "user") for p in EDITION_PAIRS}  # import default: user
        # the export re-imports into a fresh store with the same provenance
        db2 = f"sqlite:///{tmp_path / f'again-{fmt}.db'}"
        assert cli(["import", str(out)], db=db2).returncode == 0
        doc = json.loads(cli(["stats", "--json"], db=db2).stdout)
        assert doc["by_label_source"] == {
            "by_construction": 2,
            "human_per_response": 2,
            "instructed_demo": 2,
            "user": 2,
        }
    # filter by provenance
    only = tmp_path / "only.jsonl"
    assert cli(["export", str(only), "--label-source", "instructed_demo"], db=db_url).returncode == 0
    assert {json.loads(x)["pair_id"] for x in only.read_text().splitlines()} == {"p3"}
    assert cli(["export", str(only), "--label-source", "nope"], db=db_url).returncode == 2
    # an unknown provenance in a pair file: exit 2 naming line and field, nothing written
    bad = tmp_path / "bad.jsonl"
    lines = f.read_text().splitlines()
    rec = json.loads(lines[2])
    rec["label_source"], rec["pair_id"] = "rumour", "p9"
    rec2 = json.loads(lines[3])
    rec2["pair_id"] = "p9"
    bad.write_text(json.dumps(rec) + "\n" + json.dumps(rec2) + "\n")
    res = cli(["import", str(bad)], db=db_url)
    assert res.returncode == 2 and "label_source" in res.stderr and "line 1" in res.stderr
    assert json.loads(cli(["stats", "--json"], db=db_url).stdout)["pairs"] == 4


#: a rules run over the verified edition's test samples only (no controls), as JSON
RUN_VERIFIED_NO_CONTROLS = [
    "run",
    "--monitor",
    "rules",
    "--template",
    "direct",
    "--edition",
    "verified",
    "--no-controls",
    "--quiet",
    "--json",
]


def _mark(engine, edition, pair_ids):
    from store import session_scope
    from store.models import EditionSample, Sample

    with session_scope(engine) as s:
        ids = s.execute(sa.select(Sample.id).where(Sample.pair_id.in_(pair_ids))).scalars().all()
        for i in ids:
            s.add(EditionSample(edition=edition, sample_id=i))


def test_edition_selection_in_run_and_report(cli, db_url, engine, tmp_path):
    f = tmp_path / "pairs.jsonl"
    write_pairs(f)
    assert cli(["import", str(f)], db=db_url).returncode == 0
    _mark(engine, "paper", ["p1", "p2", "p3", "p4"])
    _mark(engine, "verified", ["p1", "p3"])
    add_control_sample(engine)
    assert json.loads(cli(["stats", "--edition", "verified", "--json"], db=db_url).stdout)["pairs"] == 2
    assert cli(["stats", "--edition", "nope"], db=db_url).returncode == 2
    runs = {}
    for ed in ("paper", "verified"):
        res = cli(
            ["run", "--monitor", "rules", "--template", "direct", "--edition", ed, "--quiet", "--json"], db=db_url
        )
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        runs[ed] = doc["run_id"]
        assert doc["n"] == (8 if ed == "paper" else 4) + 1  # + the control sample
    from store import session_scope
    from store.models import Run

    with session_scope(engine) as s:
        assert {r.id: r.edition for r in s.execute(sa.select(Run)).scalars()} == {v: k for k, v in runs.items()}
    for ed in ("paper", "verified"):
        rep = json.loads(cli(["report", "--edition", ed, "--json", "--n-boot", "10"], db=db_url).stdout)
        assert [e["run_id"] for e in rep["runs"]] == [runs[ed]]
        e = rep["runs"][0]
        assert e["edition"] == ed
        scored = e["overall"]
        assert scored["n"] == (8 if ed == "paper" else 4)  # the control never enters the edition's MR/FAR
        assert e["controls"]["n"] == 1 and e["controls"]["fp"] + e["controls"]["tn"] + e["controls"]["unscored"] == 1
    # explicit runs of another edition are refused; without --edition every run says its edition
    assert cli(["report", "--run", runs["paper"], "--edition", "verified", "--json"], db=db_url).returncode == 2
    both = json.loads(
        cli(["report", "--run", runs["paper"], "--run", runs["verified"], "--json", "--n-boot", "10"], db=db_url).stdout
    )
    assert [e["edition"] for e in both["runs"]] == ["paper", "verified"]
    no_ctrl = cli(
        RUN_VERIFIED_NO_CONTROLS,
        db=db_url,
    )
    assert json.loads(no_ctrl.stdout)["n"] == 4


def test_export_of_an_edition_writes_its_members_adjudicated_ones_included(cli, db_url, engine, tmp_path):
    """``export --edition verified`` writes the adjudicated pairs that ``verified`` holds (they were left out of
    every gold test export, whatever the edition); ``--edition paper`` leaves them out as before."""
    from store import session_scope
    from store.models import Sample

    f = tmp_path / "pairs.jsonl"
    write_pairs(f)
    assert cli(["import", str(f)], db=db_url).returncode == 0
    with session_scope(engine) as s:  # p4 was adjudicated: a member of verified only
        s.execute(sa.update(Sample).where(Sample.pair_id == "p4").values(label_source="adjudicated"))
    _mark(engine, "paper", ["p1", "p2", "p3"])
    _mark(engine, "verified", ["p1", "p4"])
    got = {}
    for ed in ("paper", "verified"):
        out = tmp_path / f"{ed}.jsonl"
        res = cli(["export", str(out), "--edition", ed], db=db_url)
        assert res.returncode == 0, res.stderr
        got[ed] = {(json.loads(x)["pair_id"], json.loads(x)["label_source"]) for x in out.read_text().splitlines()}
    assert {p for p, _ in got["paper"]} == {"p1", "p2", "p3"}
    assert got["verified"] == {("p1", "human_per_response"), ("p4", "adjudicated")}
    # what the export wrote is what run --edition verified judges
    res = cli(
        RUN_VERIFIED_NO_CONTROLS,
        db=db_url,
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["n"] == 2 * len(got["verified"])
