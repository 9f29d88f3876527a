"""A fresh app process's first Trade-off page on a store without accounts (issue 38: the cold page), run once in a
new interpreter for the module's tests.

Imports: the page reads the store through SQLAlchemy Core (``store.tables``): the guards every page runs (is there
an account? a session cookie?), the run list, the store fingerprint and the runs' costs. Building SQLModel,
SQLAlchemy's ORM and the 18 classes of ``store.models`` was ~0.3 s of the page's first run, and the login module
(argon2, itsdangerous) is needed only when a browser sends a session cookie or someone is logged in.

Garbage collection: ``app.py`` runs the page with the cyclic collector paused (its automatic passes went over the
heap of ~900 fresh modules and the loaded predictions again and again) and leaves it enabled afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from apptest_support import REPO

#: modules the first Trade-off page of a local workbench (no accounts, no cookie) does not import
NOT_IMPORTED = ("sqlmodel", "sqlalchemy.orm", "store.models", "automonitor.annotation.accounts", "argon2")

# the page reads its runs first (pages._ui.data.load_runs, looked up on that module at the call): the spy records
# whether the collector is enabled there, in the page's run (app.py's own reads before it run with it enabled)
_PAGE_RUN = """
import gc, json, sys
sys.path[:0] = [{repo!r}, {tests!r}, {app_tests!r}]
from apptest_support import app_test, page_path
import pages._ui.data as loaders
seen = []
_load_runs = loaders.load_runs
def spy(*args, **kwargs):
    seen.append(gc.isenabled())
    return _load_runs(*args, **kwargs)
loaders.load_runs = spy
at = app_test(timeout=120)
at.switch_page(page_path("pages/tradeoff.py"))
at.run()
assert not at.exception, [e.message for e in at.exception]
assert at.get("plotly_chart"), "the plane was not drawn"
assert any("Pearson r" in m.label for m in at.metric), [m.label for m in at.metric]
print("RESULT", json.dumps({{"imported": [m for m in {names!r} if m in sys.modules], "gc_in_page": seen,
                            "gc_after": gc.isenabled()}}))
"""


@pytest.fixture(scope="module")
def first_page(seeded) -> dict:
    """What the page run in a new interpreter reports: ``imported`` (those of :data:`NOT_IMPORTED` it imported),
    ``gc_in_page`` (whether the collector was enabled at each of the page's run-list reads), ``gc_after``. The audit is
    kept in the store first, as ``automonitor audit`` or the build keeps it (computing one is an audit's work,
    which writes through the ORM)."""
    from automonitor.data.audit import cached_audit
    from automonitor.errors import InputError

    for edition in ("paper", "verified"):
        try:
            cached_audit(seeded["engine"], edition)
        except InputError:  # an edition the seeded store cannot audit: the page shows no audit for it either
            pass
    code = _PAGE_RUN.format(
        repo=str(REPO), tests=str(REPO / "tests"), app_tests=str(REPO / "tests" / "app"), names=NOT_IMPORTED
    )
    env = {**os.environ, "AUTOMONITOR_DB": seeded["url"]}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    (line,) = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    return json.loads(line.removeprefix("RESULT "))


def test_the_first_tradeoff_page_of_a_workbench_imports_no_orm_and_no_login_code(first_page):
    assert first_page["imported"] == []


def test_the_page_runs_with_the_collector_paused_and_leaves_it_enabled(first_page):
    assert first_page["gc_in_page"] and not any(first_page["gc_in_page"]), first_page["gc_in_page"]
    assert first_page["gc_after"] is True
