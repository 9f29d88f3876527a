"""Shared fixtures: real SQLite and real PostgreSQL stores, the raw sources, CLI runner.

PostgreSQL is the server at 127.0.0.1:5432 (trust auth); every test that asks for ``db_url`` gets a
brand-new database created from the ``test`` database and dropped afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from helpers import PG_ADMIN_URL, RAW, REPO, run_cli  # noqa: F401  (shared with test modules)


def pytest_configure(config):
    """One cache directory per test run (``AUTOMONITOR_CACHE_DIR``), made by the controlling process
    before any xdist worker starts, so the workers and every CLI subprocess share it: the first build of
    a run computes the adversarial filter and runs the static analysers for real, later builds of the
    same data read them back (as a user's second build does), and nothing depends on the developer's own
    ``~/.cache/automonitor``. Removed at the end of the run."""
    if not hasattr(config, "workerinput"):
        path = tempfile.mkdtemp(prefix="am-test-cache-")
        os.environ["AUTOMONITOR_CACHE_DIR"] = path
        config._am_cache_dir = path
    config._am_run_dir = Path(os.environ["AUTOMONITOR_CACHE_DIR"])  # the shared store copies live here too


def pytest_unconfigure(config):
    """The controlling process drops the PostgreSQL template of the built store (if a worker made one)
    and removes the run's directory."""
    path = getattr(config, "_am_cache_dir", None)
    if not path:
        return
    marker = Path(path) / PG_MARKER
    if marker.exists():
        name = json.loads(marker.read_text())["name"]
        admin = _pg_admin()
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------------- the real seed-0 build, once

PG_MARKER = "built-seed0.pg.json"


def _run_dir(config) -> Path:
    return config._am_run_dir


def _dispose(url: str, eng) -> None:
    from store.engine import engines

    eng.dispose()
    cached = engines.pop(url, None)
    if cached is not None:
        cached.dispose()


@pytest.fixture(scope="session")
def raw_loaded(raw_dir):
    """The raw sources read once per worker (:func:`automonitor.data.build.load_all`); never modified."""
    from automonitor.data.build import load_all

    return load_all(raw_dir)


@pytest.fixture(scope="session")
def seed_plan(raw_dir, raw_loaded):
    """``seed_plan(seed)`` -> the :class:`Plan` of the raw sources for ``seed`` with the default errata,
    computed once per worker and seed; read-only."""
    from automonitor.data.build import plan_build

    plans: dict = {}

    def get(seed: int):
        if seed not in plans:
            plans[seed] = plan_build(raw_dir, seed, loaded=raw_loaded)
        return plans[seed]

    return get


@pytest.fixture(scope="session")
def built_sqlite(request, raw_dir):
    """``(path, report)``: a SQLite store built from the raw sources with seed 0 by the real
    :func:`automonitor.data.build.build`, ONCE per test run (xdist workers share it through a file lock),
    and the build's report (JSON round trip). Read-only: tests that write take a copy (``built_db_url``)."""
    from filelock import FileLock

    from automonitor.data.build import build
    from store import get_engine, init_db

    run = _run_dir(request.config)
    db, rep = run / "built-seed0.db", run / "built-seed0.json"
    with FileLock(str(run / "built-seed0.lock")):
        if not rep.exists():
            tmp = run / "built-seed0.tmp.db"
            url = f"sqlite:///{tmp}"
            eng = init_db(get_engine(url, fresh=True))
            report = build(eng, raw_dir, 0)
            _dispose(url, eng)
            _sqlite_copy(tmp, db)
            tmp.unlink()
            rep.write_text(json.dumps(report, default=str))
    return db, json.loads(rep.read_text())


def _sqlite_copy(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite store (the backup API: WAL contents included)."""
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    a.close()
    b.close()


@pytest.fixture(scope="session")
def built_pg_template(request, raw_dir):
    """``{"name", "report"}``: a PostgreSQL database built from the raw sources with seed 0, once per test
    run (file lock), used only as a ``CREATE DATABASE ... TEMPLATE`` source (``built_db_url``); dropped
    by the controlling process at the end of the run."""
    from filelock import FileLock

    from automonitor.data.build import build
    from store import get_engine, init_db

    run = _run_dir(request.config)
    marker = run / PG_MARKER
    with FileLock(str(run / "built-seed0-pg.lock")):
        if not marker.exists():
            name = f"am_tmpl_{uuid.uuid4().hex[:12]}"
            admin = _pg_admin()
            with admin.connect() as c:
                c.execute(sa.text(f'CREATE DATABASE "{name}"'))
            admin.dispose()
            url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
            eng = init_db(get_engine(url, fresh=True))
            report = build(eng, raw_dir, 0)
            _dispose(url, eng)
            marker.write_text(json.dumps({"name": name, "report": report}, default=str))
    return json.loads(marker.read_text())


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def built_db_url(request, tmp_path):
    """A writable copy of the store built once per run from the raw sources with seed 0 (``built_sqlite``
    or ``built_pg_template``): on SQLite a backup-API copy, on PostgreSQL a database created from the
    template (dropped after the test). The test runs once on each database."""
    if request.param == "sqlite":
        src, _ = request.getfixturevalue("built_sqlite")
        dst = tmp_path / "built.db"
        _sqlite_copy(src, dst)
        yield f"sqlite:///{dst}"
        return
    tmpl = request.getfixturevalue("built_pg_template")["name"]
    with _pg_database(template=tmpl) as url:
        yield url


def _pg_admin():
    return sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")


@pytest.fixture(scope="session")
def raw_dir() -> Path:
    """The public raw sources (``$AUTOMONITOR_RAW``, else ``shared/raw`` beside the repository)."""
    if not (RAW / "README.md").exists():
        pytest.fail(f"raw sources not found at {RAW}; set AUTOMONITOR_RAW")
    return RAW


@contextlib.contextmanager
def _pg_database(template: str | None = None):
    """A new PostgreSQL database (empty, or a copy of ``template``) as a URL; dropped on exit. A copy is
    retried while another worker's ``CREATE DATABASE`` briefly holds the template."""
    from store.engine import engines

    name = f"am_t_{uuid.uuid4().hex[:12]}"
    create = f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")
    admin = _pg_admin()
    for attempt in range(20 if template else 1):
        try:
            with admin.connect() as c:
                c.execute(sa.text(create))
            break
        except sa.exc.OperationalError:
            if attempt == (19 if template else 0):
                raise
            time.sleep(0.5)
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url
    finally:
        eng = engines.pop(url, None)
        if eng is not None:
            eng.dispose()
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def pg_url():
    """A fresh, empty PostgreSQL database URL; dropped after the test."""
    with _pg_database() as url:
        yield url


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
