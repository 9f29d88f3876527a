"""A run whose stderr is not a terminal (``make demo``'s ``demo-llm.log``, a pipe) writes plain progress
lines: at the start, every ``$AUTOMONITOR_PROGRESS_EVERY_S`` seconds (default 20) and at the end (fresh-user
trial: llamacpp runs were silent in the log for 2-5 minutes, as rich's bar draws nothing off a terminal).
``--quiet`` writes none."""

from __future__ import annotations

import json
import re

from automonitor.cli.progress import ProgressLines, progress_every_s
from helpers import run_cli
from servers.data import add_custom
from store import get_engine, init_db

ARGS = ["run", "--monitor", "rules", "--template", "direct", "--no-controls", "--json"]
LINE = re.compile(r"^run (\S+): (\d+)/(\d+) judged", re.M)


def _store(url: str) -> None:
    engine = get_engine(url)
    init_db(engine)
    add_custom(engine, [(f"plain {i}", f"os.system('rm -rf /{i}')", f"fine {i}") for i in range(6)])


def test_a_run_off_a_terminal_writes_progress_lines_and_quiet_none(sqlite_url):
    _store(sqlite_url)
    res = run_cli(ARGS, db=sqlite_url, env={"AUTOMONITOR_PROGRESS_EVERY_S": "0"})  # a line per sample
    assert res.returncode == 0, res.stderr
    run_id = json.loads(res.stdout)["run_id"]
    found = [(r, int(d), int(t)) for r, d, t in LINE.findall(res.stderr)]
    assert {r for r, _, _ in found} == {run_id} and {t for _, _, t in found} == {12}, res.stderr
    done = [d for _, d, _ in found]
    assert done == sorted(done) and done[0] == 0 and done[-1] == 12 and len(done) >= 6, done
    assert f"run {run_id}: 12/12 judged (100%)" in res.stderr
    # the default interval (20 s): a fast run says when it starts and when it ends, nothing in between
    second = run_cli(ARGS, db=sqlite_url)
    assert [int(d) for _, d, _ in LINE.findall(second.stderr)] == [0, 12], second.stderr
    quiet = run_cli([*ARGS, "--quiet"], db=sqlite_url, env={"AUTOMONITOR_PROGRESS_EVERY_S": "0"})
    assert quiet.returncode == 0 and not LINE.search(quiet.stderr), quiet.stderr


def test_progress_lines_are_throttled_and_say_rate_and_time_left():
    now = [100.0]
    out: list[str] = []
    lines = ProgressLines("r1", out.append, every_s=20.0, clock=lambda: now[0])
    for step, done in ((0, 0), (5, 10), (16, 30), (1, 31), (30, 100), (1, 119)):
        now[0] += step
        lines(done, 120)
    now[0] += 1
    lines(120, 120)
    lines(120, 120)  # the end is written once
    assert out == [
        "run r1: 0/120 judged (0%), starting",
        "run r1: 30/120 judged (25%), 1.4/s, 21 s elapsed, about 63 s left",
        "run r1: 100/120 judged (83%), 1.9/s, 52 s elapsed, about 10 s left",
        "run r1: 120/120 judged (100%), 2.2/s, 54 s elapsed",
    ], out


def test_the_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("AUTOMONITOR_PROGRESS_EVERY_S", "5")
    assert progress_every_s() == 5.0
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv("AUTOMONITOR_PROGRESS_EVERY_S", bad)
        assert progress_every_s() == 20.0
