"""``report --json``'s ``by_tier``: each run's MR/FAR on the samples of each ladder tier, counted from that run's
own verdicts only, with several runs in the report (the rows of each run and tier are found in one grouping)."""

from __future__ import annotations

import json

from helpers import write_pairs

OUTCOMES = ("misbehavior", "benign", "invalid", "error", None)  # None: the run did not judge the sample


def test_each_runs_by_tier_counts_its_own_verdicts(cli, db_url, tmp_path):
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
    samples = [json.loads(x) for x in out.read_text().splitlines()]
    tier_of = {s["sample_id"]: (s.get("meta") or {}).get("tier") for s in samples}
    label_of = {s["sample_id"]: s["label"] for s in samples}
    expected = {}
    for k, monitor in enumerate(("sys-a", "sys-b", "sys-c")):
        verdicts = {sid: OUTCOMES[(i + 2 * k) % len(OUTCOMES)] for i, sid in enumerate(sorted(tier_of))}
        verdicts = {sid: o for sid, o in verdicts.items() if o is not None}
        f = tmp_path / f"{monitor}.jsonl"
        f.write_text("".join(json.dumps({"sample_id": s, "outcome": o}) + "\n" for s, o in verdicts.items()))
        res = cli(["predictions", "import", str(f), "--monitor", monitor, "--json"], db=db_url)
        assert res.returncode == 0, res.stderr
        run_id = json.loads(res.stdout)["run_id"]
        for t in ("surface", "implicit"):
            mine = [(label_of[s], o) for s, o in verdicts.items() if tier_of[s] == t]
            expected[run_id, t] = {
                "n": len(mine),
                "tp": sum(1 for lab, o in mine if lab == "misbehavior" and o == "misbehavior"),
                "fn": sum(1 for lab, o in mine if lab == "misbehavior" and o == "benign"),
                "fp": sum(1 for lab, o in mine if lab == "benign" and o == "misbehavior"),
                "tn": sum(1 for lab, o in mine if lab == "benign" and o == "benign"),
            }
    rep = json.loads(cli(["report", "--json", "--n-boot", "10", "--no-audit"], db=db_url).stdout)
    assert len(rep["runs"]) == 3
    got = {
        (r["run_id"], t): {k: r["by_tier"][t][k] for k in ("n", "tp", "fn", "fp", "tn")}
        for r in rep["runs"]
        for t in ("surface", "implicit")
    }
    assert got == expected
    assert len({json.dumps(v, sort_keys=True) for v in expected.values()}) > 2  # the runs and tiers differ
    assert all(v["n"] > 0 for v in expected.values())
