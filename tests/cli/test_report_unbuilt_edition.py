"""``automonitor report`` (text) on a store never built says what ``paper`` is there, as ``stats`` does:
``paper (no build: every gold test sample)`` (fresh-user trial: the runs table said ``edition paper`` as if a
build had chosen the paper's cells). The JSON report keeps the bare ``paper`` (the contract's name)."""

from __future__ import annotations

import json

from helpers import run_cli
from servers.data import add_custom
from store import get_engine, init_db

PHRASE = "paper (no build: every gold test sample)"


def test_report_text_on_a_store_never_built_says_paper_is_every_gold_test_sample(sqlite_url):
    engine = get_engine(sqlite_url)
    init_db(engine)
    add_custom(engine, [("plain a", "os.system('a')", "good a"), ("plain b", "rm -rf /", "good b")])
    run = run_cli(["run", "--monitor", "rules", "--template", "direct", "--no-controls", "--json", "-q"], db=sqlite_url)
    assert run.returncode == 0, run.stderr
    stats = run_cli(["stats"], db=sqlite_url)
    assert PHRASE in " ".join(stats.stdout.split())  # what stats says (its title may wrap) ...
    text = run_cli(["report"], db=sqlite_url)
    assert text.returncode == 0, text.stderr
    assert PHRASE in " ".join(text.stdout.split())  # ... report says too
    row = next(line for line in text.stdout.splitlines() if "rules:rules-v1" in line)  # the runs table
    assert "paper (no build)" in row, row  # and the run's row does not claim a built paper edition
    doc = json.loads(run_cli(["report", "--json"], db=sqlite_url).stdout)
    assert [r["edition"] for r in doc["runs"]] == ["paper"]  # the JSON keeps the contract's name


def test_report_text_on_a_store_with_a_build_log_says_plain_paper(sqlite_url):
    """Once the store has a build (its log row, as ``build`` writes it), ``paper`` is the built edition and
    nothing says otherwise."""
    from sqlmodel import Session

    from store.models import BuildLog

    engine = get_engine(sqlite_url)
    init_db(engine)
    add_custom(engine, [("plain a", "os.system('a')", "good a"), ("plain b", "rm -rf /", "good b")])
    with Session(engine) as s:
        s.add(BuildLog(seed=0, report={"shortfalls": []}))
        s.commit()
    run = run_cli(["run", "--monitor", "rules", "--template", "direct", "--no-controls", "--json", "-q"], db=sqlite_url)
    assert run.returncode == 0, run.stderr
    text = run_cli(["report"], db=sqlite_url)
    assert text.returncode == 0, text.stderr
    assert "no build" not in text.stdout and "paper" in text.stdout
    assert "no build" not in run_cli(["stats"], db=sqlite_url).stdout
