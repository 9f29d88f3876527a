"""A run that never reached its judge shows as such in the text report (fresh-user trial, fifth sitting: a
failed run was listed as ``measured`` with ``n 0`` and ``pending 8``, nothing saying it failed): its pending
count carries the run's status; a finished run's does not."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from helpers import run_cli

PAIRS = Path(__file__).resolve().parents[2] / "docs" / "examples" / "pairs.jsonl"


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # released: nothing listens there


def test_a_failed_run_says_failed_in_the_text_report(sqlite_url):
    assert run_cli(["import", str(PAIRS)], db=sqlite_url).returncode == 0
    ok = run_cli(["run", "--monitor", "rules", "--template", "direct", "--quiet", "--json"], db=sqlite_url)
    assert ok.returncode == 0, ok.stderr
    down = run_cli(
        ["run", "--monitor", "openai:down", "--template", "direct", "--retries", "0", "--quiet", "--json"]
        + ["--base-url", f"http://127.0.0.1:{_dead_port()}/v1"],
        db=sqlite_url,
    )
    assert down.returncode == 1, down.stderr
    failed_id, ok_id = json.loads(down.stdout)["run_id"], json.loads(ok.stdout)["run_id"]
    plain = run_cli(["report", "--n-boot", "20"], db=sqlite_url)
    assert plain.returncode == 0, plain.stderr
    # the first table (MR / FAR per run) holds each run's first row; its run column may be cut ("…", and two
    # runs of one second share the cut prefix), so each run is found by its monitor, which differs here
    table = plain.stdout.split("Pareto front")[0]
    rows = {ln.split("│")[2].strip(): ln for ln in table.splitlines() if ln.count("│") > 5 and ln.split("│")[2].strip()}
    assert failed_id.startswith(rows["openai:down"].split("│")[1].strip().rstrip("…"))
    assert "(failed)" in rows["openai:down"]
    assert "(failed)" not in rows["rules:rules-v1"] and "(finished)" not in rows["rules:rules-v1"]
    assert ok_id != failed_id


def test_stats_of_a_store_never_built_says_paper_is_every_gold_test_sample(sqlite_url):
    """``stats`` of a store of imported pairs only (fresh-user trial, fifth sitting: it printed ``edition
    paper`` as if a paper edition had been built, while the app says "no edition (imported pairs)")."""
    assert run_cli(["import", str(PAIRS)], db=sqlite_url).returncode == 0
    out = run_cli(["stats"], db=sqlite_url, env={"COLUMNS": "400"})
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())  # the table's title wraps at the table's width
    assert "edition paper (no build: every gold test sample): 8 samples in 4 pairs" in text, out.stdout
    doc = run_cli(["stats", "--json"], db=sqlite_url)
    assert json.loads(doc.stdout)["edition"] == "paper"  # the JSON keeps the contract's value


def test_an_imported_run_names_one_edition_in_runs_report_and_the_plane(sqlite_url, tmp_path):
    """Fresh-user trial: one imported run read ``runs --json`` edition null, ``report --json`` "paper" and the
    Trade-off hover "no edition (imported pairs)". The report scores it on the paper edition (in a store never
    built: every gold test sample); ``runs --json`` keeps the recorded edition (null) and names that one as
    ``scored_edition``, and the plane's sample set says the same."""
    from automonitor import views
    from store import get_engine

    assert run_cli(["import", str(PAIRS)], db=sqlite_url).returncode == 0
    ids = [json.loads(ln)["sample_id"] for ln in PAIRS.read_text().splitlines() if ln.strip()]
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"sample_id": s, "outcome": "benign"}) + "\n" for s in ids))
    r = run_cli(["predictions", "import", str(preds), "--monitor", "Vendor", "--json"], db=sqlite_url)
    assert r.returncode == 0, r.stderr
    runs = json.loads(run_cli(["runs", "--json"], db=sqlite_url).stdout)["runs"]
    (row,) = runs
    assert row["edition"] is None and row["scored_edition"] == "paper"
    rep = json.loads(run_cli(["report", "--json", "--n-boot", "20"], db=sqlite_url).stdout)
    assert [x["edition"] for x in rep["runs"]] == [row["scored_edition"]]
    eng = get_engine(sqlite_url)
    sets = views.run_sample_sets(eng)
    assert sets["sample_set"].iloc[0].startswith("paper (no build: every gold test sample) · ")
    eng.dispose()
