"""Runs page: Cancel asks for confirmation and says what it does, the cancellation is
reported on the page afterwards, and the history table starts with status and progress; an active run
is named in one line above the "Launch a run" form (its box with progress and Cancel is further down)."""

from __future__ import annotations

import sqlalchemy as sa

import app_seed
from apptest_support import StoreEnv, app, ok, open_store


def test_cancel_asks_first_and_reports_the_cancellation(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=2, hostile=False)
    rid = info["run_ids"][0]
    with eng.begin() as c:
        c.execute(sa.text("update run set status = 'running' where id = :i"), {"i": rid})
    try:
        with StoreEnv(url):
            at = ok(app("pages/runs.py").run())
            assert list(at.dataframe[0].value.columns[:2]) == ["status", "progress"]
            at.button(key=f"runs.cancel.{rid}").click()
            ok(at.run())
            assert any("Cancel run" in w.value and "judged so far are kept" in w.value for w in at.warning)
            with eng.connect() as c:  # nothing cancelled before the confirmation
                assert c.execute(sa.text("select status from run where id = :i"), {"i": rid}).scalar_one() == "running"
            at.button(key=f"runs.cancel_yes.{rid}").click()
            ok(at.run())
            with eng.connect() as c:
                assert (
                    c.execute(sa.text("select status from run where id = :i"), {"i": rid}).scalar_one() == "cancelled"
                )
            ok(at.run())
            assert any("cancelled after" in i.value for i in at.info)
    finally:
        eng.dispose()


def _order(at) -> list:
    """The page's elements in the order they are drawn (depth first)."""
    return list(at.main)


def test_an_active_run_is_named_above_the_launch_form(tmp_path):
    url = f"sqlite:///{tmp_path / 'active.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=2, hostile=False)
    rid = info["run_ids"][1]
    try:
        with StoreEnv(url):
            at = ok(app("pages/runs.py").run())
            assert not any("in progress:" in i.value for i in at.info)  # nothing active: no line
            with eng.begin() as c:
                c.execute(sa.text("update run set status = 'running' where id = :i"), {"i": rid})
            at = ok(app("pages/runs.py").run())
            order = _order(at)
            (line,) = [i for i in at.info if "in progress:" in i.value]
            assert line.value.startswith("**1 run in progress:**") and "r001" in line.value
            assert "\\(running\\)" in line.value  # the status, markdown-escaped
            form = next(e for e in at.expander if e.label == "Launch a run")
            boxes = [m for m in at.markdown if "status **running**" in m.value]
            assert boxes, [m.value for m in at.markdown]
            assert order.index(line) < order.index(form) < order.index(boxes[0])
    finally:
        eng.dispose()


def test_a_killed_run_says_no_process_is_judging_it(tmp_path):
    """A run whose process was killed (kill -9) stays ``running`` in the store; ``automonitor runs`` said "no live
    process" but the page showed it in progress with a moving-looking bar for ever (trial60). The banner, its box and
    the history say so, and the box says how to go on; a run whose process is alive reads as before."""
    import os
    import socket
    import subprocess
    import sys
    import time

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    url = f"sqlite:///{tmp_path / 'killed.db'}"
    eng = open_store(url)
    info = app_seed.seed_store(eng, pairs_per_cell=1, runs=2, hostile=False)
    killed, alive = info["run_ids"][:2]
    host = socket.gethostname()
    with eng.begin() as c:
        for rid, pid in ((killed, dead.pid), (alive, os.getppid())):  # a live process other than this one
            lease = f'{{"lease": {{"pid": {pid}, "host": "{host}", "heartbeat": {time.time()}}}}}'
            c.execute(sa.text("update run set status = 'running', params = :p where id = :i"), {"i": rid, "p": lease})
    try:
        with StoreEnv(url):
            at = ok(app("pages/runs.py").run())
            (line,) = [i for i in at.info if "in progress:" in i.value]
            plain = line.value.replace("\\", "")  # the line is markdown-escaped
            assert f"{killed} (running (no live process))" in plain and f"{alive} (running)" in plain
            heads = [m.value for m in at.markdown if "status **" in m.value]
            assert [h for h in heads if killed in h] and all("no live process" in h for h in heads if killed in h)
            assert all("no live process" not in h for h in heads if alive in h)
            warns = [w.value for w in at.warning if "No process is judging this run" in w.value]
            assert len(warns) == 1 and "automonitor run --resume" in warns[0]
            assert f"`automonitor run --resume {killed}`" in warns[0]  # the run's own id, ready to paste
            keys = {b.key for b in at.button}  # Cancel stays for both: a dead run can be resumed or ended here
            assert f"runs.cancel.{killed}" in keys and f"runs.cancel.{alive}" in keys
            assert "Cancel ends it here" in warns[0]
            table = at.dataframe[0].value.set_index("run_id")
            assert table.loc[killed, "status"] == "running (no live process)"
            assert table.loc[alive, "status"] == "running"
    finally:
        eng.dispose()
