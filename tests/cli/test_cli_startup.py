"""The CLI starts at once: ``automonitor --help`` (and a command's ``--help``) imports no heavy library
and stays under a budget of modules, read from ``python -X importtime`` of a real interpreter. The
libraries are imported by the command code that uses them (timings: benchmarks/README.md)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers import REPO

# what --help must never import: the data, model and plotting stacks, the provider SDKs, the store's ORM
HEAVY = {
    "pandas",
    "numpy",
    "scipy",
    "sklearn",
    "openai",
    "anthropic",
    "plotly",
    "torch",
    "transformers",
    "streamlit",
    "pyarrow",
    "aiohttp",
    "httpx",
    "sqlalchemy",
    "sqlmodel",
    "alembic",
    "store",
}
# modules of any kind (stdlib included) imported for --help: typer, click and rich make most of them
# (348 for --help, 445 for a command's --help, which adds typer's pydantic adapters; 2026-12-05)
MODULE_BUDGET = 370  # automonitor --help
COMMAND_HELP_BUDGET = 470  # automonitor COMMAND --help


def imported_modules(*args: str, db: str | None = None) -> list[str]:
    """The modules a new interpreter imports to run ``automonitor ARGS`` (``-X importtime``) on the store
    ``db`` (none: ``--help``); asserts that the command exits 0 (with a usage text when no store)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **({"AUTOMONITOR_DB": db} if db else {})}
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "automonitor", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert db or "Usage" in out.stdout
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("import time:")]
    return [ln.rsplit("|", 1)[1].strip() for ln in lines[1:]]  # the first line is the header


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["report", "--help"]])
def test_help_imports_no_heavy_library_and_stays_under_the_module_budget(args):
    mods = imported_modules(*args)
    assert "automonitor.cli" in mods  # the measure is real: the CLI package itself was imported
    heavy = sorted({m for m in mods if m.split(".")[0] in HEAVY})
    assert not heavy, f"automonitor {' '.join(args)} imports {heavy[:12]}"
    budget = MODULE_BUDGET if args == ["--help"] else COMMAND_HELP_BUDGET
    assert len(mods) <= budget, f"{len(mods)} modules imported (budget {budget})"


def test_listing_runs_imports_no_data_plotting_or_migration_library(sqlite_engine, sqlite_url):
    """A read of a store at head: SQLAlchemy and the store, but neither the analysis stack nor Alembic."""
    mods = imported_modules("runs", "--json", db=sqlite_url)
    assert "store.models" in mods
    heavy = sorted({m for m in mods if m.split(".")[0] in HEAVY - {"sqlalchemy", "sqlmodel", "store"}})
    assert not heavy, f"automonitor runs --json imports {heavy[:12]}"
