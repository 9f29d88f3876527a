"""The one-line summary of ``automonitor run`` says how many of the ``n`` judged samples are benign-only
controls (a fresh user ran ``--limit 20`` and read ``n=34``: 14 controls were judged too, ``--controls`` by
default); ``runs --json`` carries the same count (``controls``)."""

from __future__ import annotations

import json

from helpers import add_control_sample, run_cli, write_pairs


def test_the_summary_line_counts_the_controls(tmp_path, sqlite_url, sqlite_engine):
    f = tmp_path / "pairs.jsonl"
    write_pairs(f)
    assert run_cli(["import", str(f)], db=sqlite_url).returncode == 0
    add_control_sample(sqlite_engine)
    r = run_cli(["run", "--monitor", "rules", "--template", "direct"], db=sqlite_url)
    assert r.returncode == 0, r.stderr
    n = int(r.stdout.split("n=", 1)[1].split()[0])
    assert f"n={n} ({n - 1} + 1 controls)" in r.stdout, r.stdout
    doc = json.loads(run_cli(["runs", "--json"], db=sqlite_url).stdout)
    (row,) = doc["runs"] if isinstance(doc, dict) else doc
    assert row["controls"] == 1 and row["n"] == n
    r2 = run_cli(["run", "--monitor", "rules", "--template", "direct", "--no-controls"], db=sqlite_url)
    assert r2.returncode == 0 and "controls)" not in r2.stdout, r2.stdout
