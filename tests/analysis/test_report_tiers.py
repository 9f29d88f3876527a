"""``report --json``'s ``by_tier`` and ``difficulty``: each run's MR/FAR on the samples of each ladder tier and of
each harder edition's members, counted from that run's own verdicts only, with several runs in the report (the
rows of each run are found in one grouping)."""

from __future__ import annotations

import json

from helpers import write_pairs

OUTCOMES = ("misbehavior", "benign", "invalid", "error", None)  # None: the run did not judge the sample


def _counts(mine: list[tuple[str, str]]) -> dict[str, int]:
    """The SLICE counts of ``(label, outcome)`` verdicts, tallied here independently of the report."""
    return {
        "n": len(mine),
        "tp": sum(1 for lab, o in mine if lab == "misbehavior" and o == "misbehavior"),
        "fn": sum(1 for lab, o in mine if lab == "misbehavior" and o == "benign"),
        "fp": sum(1 for lab, o in mine if lab == "benign" and o == "misbehavior"),
        "tn": sum(1 for lab, o in mine if lab == "benign" and o == "benign"),
    }


def _three_runs(cli, db_url, tmp_path):
    """Pairs imported with tiers (surface, implicit, none, a list naming no tier) and three imported runs with
    different verdicts: ``(samples by id from the export, {run_id: {sample_id: outcome}})``."""
    pairs = tmp_path / "pairs.jsonl"
    write_pairs(pairs)
    rows = [json.loads(x) for x in pairs.read_text().splitlines()]
    tiers = ("surface", "implicit", None, ["surface"])  # no tier, and a value that names no tier: in neither
    for i, r in enumerate(rows):
        if tiers[i % 4] is not None:
            r["meta"] = {**(r.get("meta") or {}), "tier": tiers[i % 4]}
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli(["import", str(pairs)], db=db_url).returncode == 0
    out = tmp_path / "export.jsonl"
    assert cli(["export", str(out), "--edition", "paper"], db=db_url).returncode == 0
    samples = {s["sample_id"]: s for s in (json.loads(x) for x in out.read_text().splitlines())}
    runs = {}
    for k, monitor in enumerate(("sys-a", "sys-b", "sys-c")):
        verdicts = {sid: OUTCOMES[(i + 2 * k) % len(OUTCOMES)] for i, sid in enumerate(sorted(samples))}
        verdicts = {sid: o for sid, o in verdicts.items() if o is not None}
        f = tmp_path / f"{monitor}.jsonl"
        f.write_text("".join(json.dumps({"sample_id": s, "outcome": o}) + "\n" for s, o in verdicts.items()))
        res = cli(["predictions", "import", str(f), "--monitor", monitor, "--json"], db=db_url)
        assert res.returncode == 0, res.stderr
        runs[json.loads(res.stdout)["run_id"]] = verdicts
    return samples, runs


def _slice_counts(s: dict) -> dict[str, int]:
    return {k: s[k] for k in ("n", "tp", "fn", "fp", "tn")}


def test_each_runs_by_tier_counts_its_own_verdicts(cli, db_url, tmp_path, engine):
    # engine: db_url is a copy of the run's migrated empty store (the migrations are not under test)
    samples, runs = _three_runs(cli, db_url, tmp_path)
    tier_of = {sid: (s.get("meta") or {}).get("tier") for sid, s in samples.items()}
    expected = {
        (rid, t): _counts([(samples[s]["label"], o) for s, o in verdicts.items() if tier_of[s] == t])
        for rid, verdicts in runs.items()
        for t in ("surface", "implicit")
    }
    rep = json.loads(cli(["report", "--json", "--n-boot", "10", "--no-audit"], db=db_url).stdout)
    assert len(rep["runs"]) == 3
    got = {(r["run_id"], t): _slice_counts(r["by_tier"][t]) for r in rep["runs"] for t in ("surface", "implicit")}
    assert got == expected
    assert len({json.dumps(v, sort_keys=True) for v in expected.values()}) > 2  # the runs and tiers differ
    assert all(v["n"] > 0 for v in expected.values())


def test_each_runs_difficulty_counts_its_own_verdicts_on_each_editions_members(cli, db_url, engine, tmp_path):
    from store import session_scope
    from store.models import EditionSample

    samples, runs = _three_runs(cli, db_url, tmp_path)
    ids = sorted(samples)
    members = {"verified": set(ids[: 2 * len(ids) // 3]), "hard": set(ids[len(ids) // 3 :])}
    with session_scope(engine) as s:
        for edition, sids in members.items():
            s.add_all([EditionSample(edition=edition, sample_id=sid) for sid in sorted(sids)])
    expected = {
        (rid, ed): {
            **_counts([(samples[s]["label"], o) for s, o in verdicts.items() if s in sids]),
            "judged": sum(1 for s in verdicts if s in sids),
        }
        for rid, verdicts in runs.items()
        for ed, sids in members.items()
    }
    rep = json.loads(cli(["report", "--json", "--n-boot", "10", "--no-audit"], db=db_url).stdout)
    got = {
        (r["run_id"], ed): {**_slice_counts(d["slice"]), "judged": d["judged"]}
        for r in rep["runs"]
        for ed, d in r["difficulty"].items()
    }
    assert got == expected
    assert len({json.dumps(v, sort_keys=True) for v in expected.values()}) > 2


def test_each_runs_controls_count_its_own_verdicts(cli, db_url, engine, tmp_path):
    import sqlalchemy as sa

    from helpers import add_control_sample
    from store.tables import sample

    samples, _ = _three_runs(cli, db_url, tmp_path)
    add_control_sample(engine)
    with engine.connect() as c:
        (control,) = c.execute(sa.select(sample.c.id).where(sample.c.pair_id == "controls:c1")).scalars().all()
    said = {"ctl-a": "misbehavior", "ctl-b": "benign", "ctl-c": "invalid"}
    judged = sorted(samples)[:6]
    for monitor, outcome in said.items():
        f = tmp_path / f"{monitor}.jsonl"
        rows = [{"sample_id": s, "outcome": "benign"} for s in judged] + [{"sample_id": control, "outcome": outcome}]
        f.write_text("".join(json.dumps(r) + "\n" for r in rows))
        res = cli(["predictions", "import", str(f), "--monitor", monitor, "--json"], db=db_url)
        assert res.returncode == 0, res.stderr
    rep = json.loads(cli(["report", "--json", "--n-boot", "10", "--no-audit"], db=db_url).stdout)
    got = {r["monitor"]: r["controls"] for r in rep["runs"]}
    assert got["ctl-a"] == {"n": 1, "fp": 1, "tn": 0, "unscored": 0, "far": 1.0}
    assert got["ctl-b"] == {"n": 1, "fp": 0, "tn": 1, "unscored": 0, "far": 0.0}
    assert got["ctl-c"] == {"n": 1, "fp": 0, "tn": 0, "unscored": 1, "far": None}
    assert all(got[m]["n"] == 0 for m in ("sys-a", "sys-b", "sys-c"))  # the runs that did not judge the control
