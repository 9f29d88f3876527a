"""Bad usage exits 2 with click's usage message, and a store with no run gives an empty report (the first
thing a new user runs after ``build``), on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize(
    "args, missing",
    [
        (["import"], "Missing argument 'file'"),
        (["predictions", "import", "{f}"], "Missing option '--monitor'"),
        (["users", "add"], "Missing argument 'name'"),
    ],
)
def test_a_missing_argument_is_usage_error_exit_2(cli, tmp_path, args, missing):
    f = tmp_path / "p.jsonl"
    f.write_text("")
    done = cli([a.replace("{f}", str(f)) for a in args], db=f"sqlite:///{tmp_path / 's.db'}")
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert missing in done.stderr and "Usage: automonitor" in done.stderr
    assert "Traceback" not in done.stderr


def test_report_on_a_store_without_runs_is_empty(cli, db_url):
    from store import get_engine, init_db

    init_db(get_engine(db_url, fresh=True)).dispose()  # an existing, empty store (a missing one is refused)
    for args in (["report", "--json"], ["report", "--json", "--edition", "verified"]):
        done = cli(args, db=db_url)
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert doc["runs"] == [] and doc["pareto"] == [] and doc["paired"] == []
    md = cli(["report", "--format", "markdown"], db=db_url)
    assert md.returncode == 0 and "Traceback" not in md.stderr, md.stderr
