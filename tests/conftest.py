"""Shared fixtures: real SQLite and real PostgreSQL stores, the raw sources, CLI runner.

PostgreSQL is the server at 127.0.0.1:5432 (trust auth); every test that asks for ``db_url`` gets a
brand-new database created from the ``test`` database and dropped afterwards.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from helpers import PG_ADMIN_URL, RAW, REPO, run_cli  # noqa: F401  (shared with test modules)


def _pg_admin():
    return sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")


@pytest.fixture(scope="session")
def raw_dir() -> Path:
    """The public raw sources (``$AUTOMONITOR_RAW``, else ``shared/raw`` beside the repository)."""
    if not (RAW / "README.md").exists():
        pytest.fail(f"raw sources not found at {RAW}; set AUTOMONITOR_RAW")
    return RAW


@pytest.fixture
def pg_url():
    """A fresh, empty PostgreSQL database URL; dropped after the test."""
    name = f"am_t_{uuid.uuid4().hex[:12]}"
    admin = _pg_admin()
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    yield url
    from store.engine import _engines

    eng = _engines.pop(url, None)
    if eng is not None:
        eng.dispose()
    with admin.connect() as c:
        c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    """A fresh SQLite file URL."""
    return f"sqlite:///{tmp_path / 'store.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path) -> str:
    """A fresh, empty store URL: the test runs once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def engine(db_url):
    """An engine on a fresh store migrated to head (SQLite and PostgreSQL)."""
    from store import get_engine, init_db

    eng = get_engine(db_url, fresh=True)
    init_db(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def sqlite_engine(sqlite_url):
    from store import get_engine, init_db

    eng = get_engine(sqlite_url, fresh=True)
    init_db(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def cli():
    """``cli(args, db=url)`` runs the installed ``automonitor`` command; returns CompletedProcess."""
    return run_cli


def pytest_collection_modifyitems(session, config, items):
    """Run the browser (e2e) tests last: Playwright's sync API keeps an event loop running in the main
    thread for as long as its session-scoped fixture lives, which breaks later tests that call
    ``asyncio.run``."""
    items.sort(key=lambda item: "/e2e/" in item.nodeid.replace("\\", "/"))


@pytest.fixture(scope="module")
def llama_server():
    """Base URL of a real llama.cpp OpenAI-compatible server on the packaged model (one per test module)."""
    from automonitor.runs.monitors.llamacpp import default_model_path
    from servers.llamacpp_server import start_llamacpp_server

    proc, base = start_llamacpp_server(str(default_model_path()), n_threads=2)
    yield base
    proc.kill()
    proc.wait(10)
