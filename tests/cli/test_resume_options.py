"""Options of a new run given with ``--resume`` or ``--retry-errors`` exit 2 naming the option, and nothing
changes (found checking a second ``--resume``, loose45): before, ``--limit``, ``--param``, ``--batch``,
``--reuse``, ``--edition``, ``--no-controls`` and ``--sample-seed`` were dropped unread, exit 0, as if taken. A
resumed run keeps what it was created with; an option that does nothing is refused, as an unknown ``--param``
key is (CONTRACT). ``--concurrency`` and ``--base-url`` still apply to a resume. Real CLI, SQLite and
PostgreSQL."""

from __future__ import annotations

import pytest

from automonitor.runs import runner
from helpers import run_cli
from servers.data import add_pairs

NEW_RUN_OPTIONS = [
    (["--limit", "2"], "limit"),
    (["--param", "timeout=5"], "param"),
    (["--batch"], "batch"),
    (["--reuse"], "reuse"),
    (["--edition", "hard"], "edition"),
    (["--no-controls"], "no-controls"),
    (["--sample-seed", "3"], "sample-seed"),
]


@pytest.mark.parametrize(("extra", "name"), NEW_RUN_OPTIONS)
def test_a_new_run_option_with_resume_or_retry_errors_exits_2_naming_it(db_url, engine, extra, name):
    add_pairs(engine, 2)
    first = run_cli(["run", "--monitor", "rules", "--template", "direct", "--quiet"], db=db_url)
    assert first.returncode == 0, first.stderr
    rid = first.stdout.split()[1].rstrip(":")  # "run RUN_ID: finished, n=..."
    before = runner.run_info(engine, rid)
    for how in ("--resume", "--retry-errors"):
        r = run_cli(["run", how, rid, *extra], db=db_url)
        assert r.returncode == 2, (how, extra, r.stderr)
        assert f"--{name} applies to a new run, not to {how}" in r.stderr, r.stderr
    assert runner.run_info(engine, rid) == before
    ok = run_cli(["run", "--resume", rid, "--concurrency", "2"], db=db_url)
    assert ok.returncode == 0, ok.stderr
