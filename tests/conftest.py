"""Shared fixtures: real SQLite and real PostgreSQL stores, the raw sources, CLI runner.

PostgreSQL is the server at 127.0.0.1:5432 (trust auth); every test that asks for ``db_url`` gets a
brand-new database created from the ``test`` database and dropped afterwards.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

# BLAS (OpenBLAS, NumPy's and SciPy's) on one thread in the suite's processes and every process they start
# (the CLI, the app server), set before anything here imports NumPy: two xdist workers share two cores, and
# the pool threads of OpenBLAS spinning for work cost several times the work of the suite's small fits (AFLite
# on 80 made-up pairs, scipy's L-BFGS steps: 4-5 s CPU, 1.2 s on one thread; the audit of the seed-0 build
# 15 -> 11.4 s CPU). The same floats: tests/base/test_suite_env.py. Likewise torch's OpenMP threads (MiniLM's
# encoding: 26.8 -> 20 s CPU for 600 texts at load 13-22) and the in-process llama.cpp judge
# (``AUTOMONITOR_LLAMACPP_THREADS``; six judgements: 21-26 -> 4.5 s CPU, as for the test server below); the
# LoRA probe sets torch's threads itself when it loads its base (``AUTOMONITOR_TORCH_THREADS``, default 2), so
# the suite sets that too (else every test after test_lora in a worker ran torch on 2 threads)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("AUTOMONITOR_LLAMACPP_THREADS", "1")
os.environ.setdefault("AUTOMONITOR_TORCH_THREADS", "1")

# Bytecode is written in the suite even where the environment says not to (``PYTHONDONTWRITEBYTECODE``, set on
# this project's machines): without it every xdist worker rewrites and compiles every test module again
# (``pytest --collect-only``: 13.4 s CPU a process without .pyc files, 4.4 s with them) and every CLI
# subprocess and app server the tests start compiles the package's modules from source (importing all 255:
# 2.2 s CPU without, 1.9 s with). The variable is removed here, before any worker or subprocess starts, so
# they all inherit the setting; the .pyc files go to ``__pycache__/`` (ignored by git).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

from helpers import PG_ADMIN_URL, RAW, REPO, run_cli  # noqa: E402, F401  (shared with test modules)
from seed0_build import SEED0_PLAN, build_seed0, dispose_engine, sqlite_copy  # noqa: E402

# Property tests assert behaviour, never speed (speed is shown by benchmarks/): hypothesis's per-example deadline
# (200 ms by default) only failed tests when the two workers shared a loaded machine (a first example that built
# a regular expression in 303 ms, 0.22 ms on replay). One profile for the suite; a test's own @settings may still
# set other options.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("automonitor", deadline=None)
_hypothesis_settings.load_profile("automonitor")


def pytest_configure(config):
    """Cheap password hashes (``AUTOMONITOR_INSECURE_TEST_HASHES=1``, see
    :func:`automonitor.annotation.accounts.make_hasher`) and one cache directory per test run
    (``AUTOMONITOR_CACHE_DIR``), made by the controlling process before any xdist worker starts, so
    the workers and every CLI subprocess share it: the first build of
    a run computes the adversarial filter and runs the static analysers for real, later builds of the
    same data read them back (as a user's second build does), and nothing depends on the developer's own
    ``~/.cache/automonitor``. Removed at the end of the run."""
    # cheap argon2 for the suite's processes and every process they start (the app server, the CLI);
    # production parameters: tests/annotation/test_accounts.py
    os.environ["AUTOMONITOR_INSECURE_TEST_HASHES"] = "1"
    if not hasattr(config, "workerinput"):
        path = tempfile.mkdtemp(prefix="am-test-cache-")
        os.environ["AUTOMONITOR_CACHE_DIR"] = path
        config._am_cache_dir = path
    config._am_run_dir = Path(os.environ["AUTOMONITOR_CACHE_DIR"])  # the shared store copies live here too


def pytest_unconfigure(config):
    """Every process drops its unused spare databases (``_Spares``) and waits until its test databases are
    dropped (``_Dropper``); the controlling process then drops the PostgreSQL templates (if a worker made
    one) and removes the run's directory."""
    _SPARES.close()
    _DROPPER.close()
    path = getattr(config, "_am_cache_dir", None)
    if not path:
        return
    for marker in sorted(Path(path).glob("*.pg.json")):  # the PostgreSQL templates made in this run
        name = json.loads(marker.read_text())["name"]
        admin = _pg_admin()
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------------- the real seed-0 build, once

PG_MARKER = "built-seed0.pg.json"
SMALL_PG_MARKER = "small-seed0.pg.json"


def _run_dir(config) -> Path:
    return config._am_run_dir


@pytest.fixture(scope="session")
def raw_loaded(raw_dir):
    """The raw sources read once per worker (:func:`automonitor.data.build.load_all`); never modified."""
    from automonitor.data.build import load_all

    return load_all(raw_dir)


@pytest.fixture(scope="session")
def seed_plan(request, raw_dir):
    """``seed_plan(seed)`` -> the :class:`Plan` of the raw sources for ``seed`` with the default errata (what a
    build into an empty store plans), once per worker and seed, through the build's plan disk cache
    (:func:`automonitor.data.build.plan_cache.cached_plan`, the run's cache directory): seed 0 is read back
    from the entry that the run's seed-0 build (``built_sqlite``, asked for first) wrote, other seeds are
    computed once per run. Read-only."""
    from automonitor.data.build.plan_cache import cached_plan
    from automonitor.data.errata import load_errata

    plans: dict = {}

    def get(seed: int):
        if seed not in plans:
            if seed == 0:
                request.getfixturevalue("built_sqlite")  # the cold build computes the plan and fills the cache
                _restore_seed0_plan(_run_dir(request.config))
            plans[seed] = cached_plan(raw_dir, seed, external_test=(set(), set()), errata=load_errata(None)).plan
        return plans[seed]

    return get


@pytest.fixture(scope="session")
def built_sqlite(request, raw_dir):
    """``(path, report)``: a SQLite store built from the raw sources with seed 0 by the real
    :func:`automonitor.data.build.build`, ONCE per test run (xdist workers share it through a file lock), and the
    build's report (JSON round trip). Read-only: tests that write take a copy (``built_db_url``). The build goes
    through the plan disk cache as a user's does (the run's cache directory starts empty, so this build plans
    for real and writes the entry): later builds and rebuilds of the same raw data and seed in this run (the
    CLI's no-op rebuilds, ``built_pg_template``, ``seed_plan(0)``) read the plan back instead of computing it
    again (~20-35 s each). Like ``automonitor build --edition E`` (paper's and E's), the build keeps the audits of
    ``paper``, ``verified`` and ``hard`` in the store (``seed0_build.SEED0_AUDITS``), so the CLI builds and reports
    on copies of it, the docs' audit tables (tests/data/test_readme_tables.py) and the hard edition's test read
    them instead of each computing them (~8-12 s CPU each)."""
    run = _run_dir(request.config)
    build_seed0(run, raw_dir)  # at once when the background build (``_start_seed0_build``) has finished
    return run / "built-seed0.db", json.loads((run / "built-seed0.json").read_text())


def _restore_seed0_plan(run: Path) -> None:
    """Put the seed-0 build's plan entry (``seed0_build.keep_seed0_plan``) back into the plan cache if it was evicted."""
    kept, where = run / SEED0_PLAN, run / (SEED0_PLAN + ".path")
    if not where.exists():
        return
    entry = Path(where.read_text())
    if not entry.exists():
        with contextlib.suppress(FileExistsError, FileNotFoundError):
            entry.parent.mkdir(parents=True, exist_ok=True)
            os.link(kept, entry)


#: the fixtures whose tests may plan the seed-0 build again (a rebuild, a build of a copy, ``seed_plan(0)``)
_SEED0 = frozenset({"built_sqlite", "built_db_url", "built_pg_template", "seed_plan"})


@pytest.fixture(autouse=True)
def _seed0_plan_in_cache(request):
    """Before a test that uses the seed-0 build, its plan entry is in the run's plan cache (:func:`_restore_seed0_plan`)."""
    if not _SEED0.isdisjoint(request.fixturenames):
        _restore_seed0_plan(_run_dir(request.config))


#: the two sources of the small raw dir (``small_raw_dir``): together about 700 pairs, enough for every
#: split (test, candidates, train), a draw that changes with the seed, and a build that takes seconds
SMALL_SOURCES = ("hh_rlhf", "school_of_reward_hacks")


@pytest.fixture(scope="session")
def small_raw_dir(request, raw_dir) -> Path:
    """A raw dir holding only :data:`SMALL_SOURCES` (copied from ``raw_dir`` once per test run, file lock):
    for the tests of a build property (serialisation, reseed refusal, the store rule, the demo script's
    phases) that a build of two small sources shows as well as the full one. Read-only: a test that edits
    raw files copies it."""
    from filelock import FileLock

    run = _run_dir(request.config)
    dst = run / "small-raw"
    with FileLock(str(run / "small-raw.lock")):
        if not dst.exists():
            tmp = run / "small-raw.tmp"
            for name in SMALL_SOURCES:
                shutil.copytree(raw_dir / name, tmp / name)
            tmp.rename(dst)
    return dst


@pytest.fixture(scope="session")
def small_built_sqlite(request, small_raw_dir):
    """``(path, report)``: a SQLite store built by the real :func:`automonitor.data.build.build` from
    ``small_raw_dir`` with seed 0, once per test run (file lock), and its report. Read-only: tests that
    write take a copy (``small_built_url``)."""
    from filelock import FileLock

    from automonitor.data.build import build
    from store import get_engine, init_db

    run = _run_dir(request.config)
    db, rep = run / "small-seed0.db", run / "small-seed0.json"
    with FileLock(str(run / "small-seed0.lock")):
        if not rep.exists():
            tmp = run / "small-seed0.tmp.db"
            url = f"sqlite:///{tmp}"
            eng = init_db(get_engine(url, fresh=True))
            report = build(eng, small_raw_dir, 0)
            dispose_engine(url, eng)
            sqlite_copy(tmp, db)
            tmp.unlink()
            rep.write_text(json.dumps(report, default=str))
    return db, json.loads(rep.read_text())


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def small_built_url(request, tmp_path):
    """A writable store holding the seed-0 build of ``small_raw_dir``: on SQLite a backup-API copy of
    ``small_built_sqlite``, on PostgreSQL a database created from ``small_pg_template`` (the run's one build
    of it on PostgreSQL), dropped after the test. The test runs once on each database."""
    if request.param == "sqlite":
        src, _ = request.getfixturevalue("small_built_sqlite")
        dst = tmp_path / "small.db"
        sqlite_copy(src, dst)
        yield f"sqlite:///{dst}"
        return
    with _pg_database(template=request.getfixturevalue("small_pg_template")) as url:
        yield url


@pytest.fixture(scope="session")
def small_pg_template(request, small_raw_dir, small_built_sqlite, empty_pg_template) -> str:
    """The name of a PostgreSQL database holding the real seed-0 build of ``small_raw_dir`` (made on a copy
    of the migrated empty store, after ``small_built_sqlite`` filled the caches: analysers, ladder, filter),
    ONCE per test run (file lock), used only as a ``CREATE DATABASE ... TEMPLATE`` source
    (``small_built_url``); dropped by the controlling process at the end of the run."""
    from filelock import FileLock

    from automonitor.data.build import build
    from store import get_engine, init_db

    run = _run_dir(request.config)
    marker = run / SMALL_PG_MARKER
    with FileLock(str(run / "small-seed0-pg.lock")):
        if not marker.exists():
            name = f"am_tmpl_{uuid.uuid4().hex[:12]}"
            admin = _pg_admin()
            _create_database(admin, name, empty_pg_template)
            admin.dispose()
            url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
            eng = init_db(get_engine(url, fresh=True))
            build(eng, small_raw_dir, 0)
            dispose_engine(url, eng)
            marker.write_text(json.dumps({"name": name}))
    return str(json.loads(marker.read_text())["name"])


@pytest.fixture(scope="session")
def built_pg_template(request, raw_dir):
    """``{"name", "report"}``: a PostgreSQL database built from the raw sources with seed 0, once per test
    run (file lock), used only as a ``CREATE DATABASE ... TEMPLATE`` source (``built_db_url``); dropped
    by the controlling process at the end of the run. Built after ``built_sqlite``, whose build left the seed-0
    plan in the run's plan cache: this build reads the plan back and writes it to PostgreSQL (the store side
    under test here) instead of planning again."""
    from filelock import FileLock

    from automonitor.data.build import build
    from store import get_engine, init_db

    run = _run_dir(request.config)
    marker = run / PG_MARKER
    if not marker.exists():
        request.getfixturevalue("built_sqlite")
    with FileLock(str(run / "built-seed0-pg.lock")):
        if not marker.exists():
            _restore_seed0_plan(run)
            name = f"am_tmpl_{uuid.uuid4().hex[:12]}"
            admin = _pg_admin()
            with admin.connect() as c:
                c.execute(sa.text(f'CREATE DATABASE "{name}"'))
            admin.dispose()
            url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
            eng = init_db(get_engine(url, fresh=True))
            report = build(eng, raw_dir, 0)
            dispose_engine(url, eng)
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
        sqlite_copy(src, dst)
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


def _create_database(admin, name: str, template: str | None) -> None:
    """``CREATE DATABASE name`` (empty, or a copy of ``template``) on the ``admin`` engine; a copy is retried
    while another worker's ``CREATE DATABASE`` briefly holds the template."""
    create = f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")
    for attempt in range(20 if template else 1):
        try:
            with admin.connect() as c:
                c.execute(sa.text(create))
            return
        except sa.exc.OperationalError:
            if attempt == (19 if template else 0):
                raise
            time.sleep(0.5)


@contextlib.contextmanager
def _pg_database(template: str | None = None, *, spare: bool = False):
    """A new PostgreSQL database (empty, or a copy of ``template``) as a URL; dropped on exit (``_Dropper``).
    A copy is retried while another worker's ``CREATE DATABASE`` briefly holds the template. With ``spare``
    the database is the one made ahead for ``template`` on a background thread (``_Spares``), and the next
    one is started: for the small templates most tests ask for, so their set-up does not wait for
    ``CREATE DATABASE``."""
    from store.engine import engines

    name = _SPARES.take(template) if spare else _new_database(template)
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url
    finally:
        eng = engines.pop(url, None)
        if eng is not None:
            eng.dispose()
        _DROPPER.drop(name)


def _new_database(template: str | None) -> str:
    """Create a new test database (empty, or a copy of ``template``); returns its name."""
    name = f"am_t_{uuid.uuid4().hex[:12]}"
    admin = _pg_admin()
    try:
        _create_database(admin, name, template)
    finally:
        admin.dispose()
    return name


class _Spares:
    """For each template a test database was asked of with ``spare=True``, the next such database made ahead
    on a background thread (one thread per process). A spare whose creation failed is made again in the
    foreground, where its error shows in the test. :meth:`close` hands the unused spares to ``_Dropper``."""

    def __init__(self) -> None:
        self.pool: concurrent.futures.ThreadPoolExecutor | None = None
        self.ready: dict[str | None, concurrent.futures.Future[str]] = {}

    def take(self, template: str | None) -> str:
        """The name of a new database (empty, or a copy of ``template``), made ahead when one was."""
        fut = self.ready.pop(template, None)
        name = None
        if fut is not None:
            with contextlib.suppress(Exception):
                name = fut.result()
        if name is None:
            name = _new_database(template)
        if self.pool is None:
            self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="am-test-db-spare")
        self.ready[template] = self.pool.submit(_new_database, template)
        return name

    def close(self) -> None:
        """Wait for the spares being made and hand every unused one over to be dropped."""
        for fut in self.ready.values():
            with contextlib.suppress(Exception):
                _DROPPER.drop(fut.result())
        self.ready.clear()
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None


class _Dropper:
    """Drops this process's finished test databases on a background thread, so that a test's tear-down does
    not wait for ``DROP DATABASE`` (0.3-0.6 s of PostgreSQL's file and WAL work each, for every test on
    PostgreSQL) while the next test starts. :meth:`close` (``pytest_unconfigure``, in every process) waits
    until every database handed over is dropped and fails the run's process if one could not be."""

    def __init__(self) -> None:
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.thread: threading.Thread | None = None
        self.failed: list[str] = []

    def drop(self, name: str) -> None:
        """Hand over database ``name`` (its engines already disposed of) to be dropped ``WITH (FORCE)``."""
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="am-test-db-dropper", daemon=True)
            self.thread.start()
        self.queue.put(name)

    def _run(self) -> None:
        admin = _pg_admin()
        try:
            while (name := self.queue.get()) is not None:
                for attempt in range(3):
                    try:
                        with admin.connect() as c:
                            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                        break
                    except sa.exc.OperationalError as exc:
                        if attempt == 2:
                            self.failed.append(f"{name}: {exc}")
                        time.sleep(0.5)
        finally:
            admin.dispose()

    def close(self) -> None:
        """Wait until every handed-over database is dropped; ``RuntimeError`` naming any that was not."""
        if self.thread is not None:
            self.queue.put(None)
            self.thread.join()
            self.thread = None
        if self.failed:
            raise RuntimeError("test databases not dropped: " + "; ".join(self.failed))


_DROPPER = _Dropper()
_SPARES = _Spares()


# ------------------------------------------------------------ empty stores: migrated once, then copied

EMPTY_PG_MARKER = "empty-head.pg.json"


@pytest.fixture(scope="session")
def empty_sqlite_template(request) -> Path:
    """An empty SQLite store migrated to head by the real :func:`store.init_db`, ONCE per test run
    (xdist workers share it through a file lock). Never opened for writing: ``sqlite_engine`` and
    ``engine`` take backup-API copies, so a test's store costs a file copy, not ten migrations."""
    from filelock import FileLock

    from store import get_engine, init_db

    run = _run_dir(request.config)
    db = run / "empty-head.db"
    with FileLock(str(run / "empty-head.lock")):
        if not db.exists():
            tmp = run / "empty-head.tmp.db"
            url = f"sqlite:///{tmp}"
            dispose_engine(url, init_db(get_engine(url, fresh=True)))
            sqlite_copy(tmp, db)
            tmp.unlink()
    return db


@pytest.fixture(scope="session")
def empty_pg_template(request) -> str:
    """The name of an empty PostgreSQL database migrated to head, ONCE per test run (file lock), used
    only as a ``CREATE DATABASE ... TEMPLATE`` source; dropped by the controlling process at the end."""
    from filelock import FileLock

    from store import get_engine, init_db

    run = _run_dir(request.config)
    marker = run / EMPTY_PG_MARKER
    with FileLock(str(run / "empty-head-pg.lock")):
        if not marker.exists():
            name = f"am_tmpl_{uuid.uuid4().hex[:12]}"
            admin = _pg_admin()
            with admin.connect() as c:
                c.execute(sa.text(f'CREATE DATABASE "{name}"'))
            admin.dispose()
            url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
            dispose_engine(url, init_db(get_engine(url, fresh=True)))
            marker.write_text(json.dumps({"name": name}))
    return json.loads(marker.read_text())["name"]


# the fixtures whose store must already be migrated: a test (or a fixture it uses) that asks for one
# of these gets its ``db_url``/``sqlite_url`` as a copy of the migrated template, not an empty store
_MIGRATED = frozenset({"engine", "sqlite_engine"})


def _wants_migrated(request) -> bool:
    return not _MIGRATED.isdisjoint(request.fixturenames)


@pytest.fixture
def pg_url(request):
    """A fresh PostgreSQL database URL; dropped after the test. Empty, unless the test also uses
    ``engine``: then a copy of the migrated template (the same database the engine opens)."""
    template = request.getfixturevalue("empty_pg_template") if _wants_migrated(request) else None
    with _pg_database(template=template, spare=True) as url:
        yield url


@pytest.fixture
def sqlite_url(request, tmp_path) -> str:
    """A fresh SQLite file URL. No file yet, unless the test also uses ``sqlite_engine`` or
    ``engine``: then a backup-API copy of the migrated template (the store the engine opens)."""
    path = tmp_path / "store.db"
    if _wants_migrated(request):
        sqlite_copy(request.getfixturevalue("empty_sqlite_template"), path)
    return f"sqlite:///{path}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request) -> str:
    """A fresh store URL: the test runs once on SQLite (``sqlite_url``) and once on PostgreSQL
    (``pg_url``). Empty, unless the test also uses ``engine``: then already migrated to head."""
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")


@pytest.fixture
def engine(db_url):
    """An engine on a fresh store migrated to head (SQLite and PostgreSQL): a copy of the run's
    migrated template; ``init_db`` then finds the schema current (as a second command would)."""
    from store import get_engine, init_db

    eng = get_engine(db_url, fresh=True)
    init_db(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def sqlite_engine(sqlite_url):
    """An engine on a fresh SQLite store migrated to head (a copy of the migrated template)."""
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
    ``asyncio.run``. Under ``--dist worksteal`` a worker can still take other tests after browser tests
    (stolen from the other worker's queue): ``_no_browser_loop`` covers that case.

    Among the browser tests the slowest files (``tests/durations.txt``) come first, each file's tests
    still together and in their order: ``--dist worksteal`` steals from the end of a queue, so the run
    ends on short browser tests instead of one worker finishing a minute-long one while the other waits."""
    seconds = _file_seconds(Path(str(config.rootpath)) / "tests" / "durations.txt")

    def order(item) -> tuple[bool, float]:
        if not _is_e2e(item.nodeid):
            return (False, 0.0)
        return (True, -seconds.get(item.nodeid.split("::", 1)[0], 0.0))

    items.sort(key=order)


def pytest_collection_finish(session):
    """Start the cold seed-0 build (``built_sqlite``) in the background as soon as a collected test needs it."""
    items = session.items
    if session.config.option.collectonly or not any(
        not _SEED0.isdisjoint(getattr(item, "fixturenames", ())) for item in items
    ):
        return
    _start_seed0_build(_run_dir(session.config))


#: the background seed-0 build this process started (``_start_seed0_build``), if it did
_SEED0_BUILDER: list[subprocess.Popen] = []


def _start_seed0_build(run: Path) -> None:
    """Run :func:`seed0_build.build_seed0` (``python tests/seed0_build.py RUN RAW``) in a process of its own,
    started by the first process of the run to get here (a marker file made exclusively; the xdist workers
    each collect): the cold build's ~60-85 s of CPU then overlap the workers' tests, which idle the cores
    part of the time (servers, browsers, waits), instead of holding up the worker whose test asks first.
    ``built_sqlite`` takes the same file lock, so a test that asks before the build is done waits for it,
    and builds itself if the background build failed (its error then shows in that test). Its output goes to
    ``built-seed0.log`` in the run's directory."""
    if not (RAW / "README.md").exists():
        return
    try:
        os.close(os.open(run / "built-seed0.started", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    with open(run / "built-seed0.log", "wb") as log:
        _SEED0_BUILDER.append(
            subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("seed0_build.py")), str(run), str(RAW)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=REPO,
            )
        )


def _stop_seed0_build(interrupted: bool) -> None:
    """Wait for the background seed-0 build (stop it first when the run was interrupted)."""
    for proc in _SEED0_BUILDER:
        if interrupted:
            proc.terminate()
        proc.wait()
    _SEED0_BUILDER.clear()


def _is_e2e(nodeid: str) -> bool:
    return "/e2e/" in nodeid.replace("\\", "/")


def _file_seconds(path: Path) -> dict[str, float]:
    """``{test file: test-seconds}`` read from a ``--durations-file`` (``{}`` when there is none)."""
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and not line.startswith("#"):
            out[parts[2]] = float(parts[0])
    return out


@pytest.fixture(autouse=True)
def _no_browser_loop(request):
    """Outside the browser tests, hide the event loop that a live Playwright session (see
    ``pytest_collection_modifyitems``) leaves marked as running in this thread, and restore it after
    the test, so that ``asyncio.run`` and async tests work in a worker that already ran browser tests."""
    loop = asyncio.events._get_running_loop()
    if loop is None or _is_e2e(request.node.nodeid):
        yield
        return
    asyncio.events._set_running_loop(None)
    try:
        yield
    finally:
        asyncio.events._set_running_loop(loop)


# --------------------------------------------------------------------- per-file durations, kept in git

_FILE_SECONDS: dict[str, list[float]] = {}


def pytest_addoption(parser):
    parser.addoption(
        "--durations-file",
        default=None,
        help="write each test file's seconds (set-up + call + tear-down of its tests, summed; on xdist the "
        "controlling process sums every worker's reports) and test count to this file, one line per file",
    )


def pytest_runtest_logreport(report):
    """Sum each test file's phases (every process sees its own reports; the xdist controller all)."""
    entry = _FILE_SECONDS.setdefault(report.nodeid.split("::", 1)[0], [0.0, 0])
    entry[0] += report.duration
    if report.when == "call" or (report.when == "setup" and not report.passed):
        entry[1] += 1


def pytest_sessionfinish(session, exitstatus):
    """Wait for the background seed-0 build if this process started it (``_start_seed0_build``); write
    ``--durations-file`` (the controlling process only): sorted by path, so a review diff
    shows the file whose time changed; the slowest files are also named in the header."""
    _stop_seed0_build(exitstatus == pytest.ExitCode.INTERRUPTED)
    path = session.config.getoption("--durations-file")
    if not path or hasattr(session.config, "workerinput") or not _FILE_SECONDS:
        return
    total = sum(v[0] for v in _FILE_SECONDS.values())
    slowest = sorted(_FILE_SECONDS.items(), key=lambda kv: -kv[1][0])[:5]
    lines = [
        "# test-seconds per test file (set-up + call + tear-down summed over its tests, all workers),",
        "# written by `make test` (pytest --durations-file tests/durations.txt); commit it with the change",
        f"# total {total:.0f} test-seconds, {sum(int(v[1]) for v in _FILE_SECONDS.values())} tests; slowest: "
        + ", ".join(f"{k.rsplit('/', 1)[-1]} {v[0]:.0f}" for k, v in slowest),
        "# seconds  tests  file",
    ]
    lines += [f"{v[0]:9.1f}  {int(v[1]):5d}  {k}" for k, v in sorted(_FILE_SECONDS.items())]
    Path(path).write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="session")
def llama_server():
    """Base URL of a real llama.cpp OpenAI-compatible server on the packaged model (one per worker, shared
    by every test module that asks for it: its start loads the model). One thread, for the prompt too: the
    suite runs two workers on two cores, and llama.cpp's threads wait for each other by spinning, so a
    second thread that shares a core with the other worker (or the other worker's server) made each
    request 3-10x slower, not faster."""
    from automonitor.runs.monitors.llamacpp import default_model_path
    from servers.llamacpp_server import start_llamacpp_server

    proc, base = start_llamacpp_server(str(default_model_path()), n_threads=1, n_threads_batch=1)
    yield base
    proc.kill()
    proc.wait(10)
