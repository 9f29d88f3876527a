"""AppTest of the Trade-off page with a partial imported run (``predictions import`` of part of the test set): with
more judged samples than the page's minimum it is still drawn hollow, off the Pareto front and out of Pearson r,
and its hover says why (an imported part is not stratified, so its overall MR/FAR are not comparable), as the JSON
report and the HTML report say (tests/analysis/test_report_coverage.py)."""

from __future__ import annotations

import json

import app_seed
from apptest_support import StoreEnv, app, ok, open_store
from helpers import run_cli_in_process

from automonitor.runs.coverage import PARTIAL_NOT_ELIGIBLE


def test_a_partial_import_is_hollow_on_the_page_with_its_reason(tmp_path):
    url = f"sqlite:///{tmp_path / 'partial.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=3, runs=1, hostile=False)
    gold = [r for r in info["samples"] if r["status"] == "gold" and r["split"] == "test"]
    app_seed.add_run(eng, gold, monitor="rules", template="direct", run_id="r-whole", skill=0.8, unscored=0.0)
    head = gold[:30]  # every verdict right (MR = FAR = 0): without the rule, the whole front
    assert len(gold) > len(head) >= 20 and {r["label"] for r in head} == {"misbehavior", "benign"}
    path = tmp_path / "head.jsonl"
    path.write_text("".join(json.dumps({"sample_id": r["id"], "outcome": r["label"]}) + "\n" for r in head))
    r = run_cli_in_process(["predictions", "import", str(path), "--monitor", "Vendor", "--json"], db=url)
    assert r.returncode == 0, r.stderr
    part = json.loads(r.stdout)["run_id"]
    try:
        with StoreEnv(url):
            at = ok(app("pages/tradeoff.py", min_n="20").run())
            table = at.dataframe[0].value.set_index("run_id")
            assert table.loc[part, "judged"] == 30 and not table.loc[part, "eligible"]
            assert not table.loc[part, "on_front"] and table.loc["r-whole", "eligible"]
            spec = json.loads(at.get("plotly_chart")[0].proto.spec)
            hollow = [t for t in spec["data"] if str(t.get("name", "")).endswith("(partial import)")]
            said = {c[0]: c[13] for t in hollow for c in t["customdata"]}
            assert said.get(part) == PARTIAL_NOT_ELIGIBLE
            assert all("%{customdata[13]}" in t["hovertemplate"] for t in hollow)
            # the caption names its reason: 30 judged is not "fewer than 20" (trial48 item F)
            (note,) = [c.value for c in at.caption if "Hollow:" in c.value]
            assert "Hollow: 1 run is a partial import (part of the test set: not comparable)" in note, note
            assert "fewer than" not in note, note
    finally:
        eng.dispose()
