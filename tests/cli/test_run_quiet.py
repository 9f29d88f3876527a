"""``automonitor run --quiet`` (and ``-q``) prints nothing on stderr when all goes well: a reused run printed
``run <id>`` despite ``--quiet`` (fresh-user trial of ``make demo``: ``scripts/demo_runs.sh`` runs
``run --reuse ... --quiet`` and the line still showed). Without the flag the line stays."""

from __future__ import annotations

import json

import pytest

from helpers import run_cli
from servers.data import add_custom
from store import get_engine, init_db

ARGS = ["run", "--monitor", "rules", "--template", "direct", "--no-controls", "--json"]


@pytest.mark.parametrize("flag", ["--quiet", "-q"])
def test_a_new_and_a_reused_run_print_nothing_on_stderr_when_quiet(sqlite_url, flag):
    engine = get_engine(sqlite_url)
    init_db(engine)
    add_custom(engine, [("plain a", "os.system('a')", "good a"), ("plain b", "rm -rf /", "good b")])
    loud = run_cli(ARGS, db=sqlite_url)
    assert loud.returncode == 0, loud.stderr
    run_id = json.loads(loud.stdout)["run_id"]
    assert f"run {run_id}" in loud.stderr  # without the flag the run names itself
    ids = []
    for args in ([*ARGS, flag], [*ARGS, "--reuse", flag]):
        res = run_cli(args, db=sqlite_url)
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["n"] == 4
        assert res.stderr.strip() == "", (args, res.stderr)
        ids.append(json.loads(res.stdout)["run_id"])
    assert ids[0] != run_id and ids[1] == ids[0]  # a new run, then that run reused
