"""Two first commands on a brand-new store at once (issue 37): only the process that created the schema says
"created a new store"; the other waited on the migration lock and found the store made. Real processes:
the test holds the store's ``migrate`` lock until both commands wait on it (both found before that the
store had no schema: the race made certain on PostgreSQL, where the schema is the store; on SQLite the file
the first command opens can already tell the second one, so only a close start makes the race), then lets
them go."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from helpers import RAW

pytestmark = pytest.mark.slow

EXE = Path(sys.executable).parent / "automonitor"


def _start(url: str, name: str, tmp: Path) -> subprocess.Popen:
    env = {**os.environ, "AUTOMONITOR_DB": url, "AUTOMONITOR_RAW": str(RAW)}
    secret = tmp / f"{name}.pw"
    secret.write_text(f"{name}-long-passphrase\n")
    with open(secret) as stdin:
        return subprocess.Popen(
            [str(EXE), "users", "add", name, "--role", "annotator", "--password-stdin"],
            env=env,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def _wait_until(pred, procs, what: str, limit: float = 90) -> None:
    deadline = time.monotonic() + limit
    while not pred():
        for p in procs:
            assert p.poll() is None, f"a command ended before {what}: {p.communicate()}"
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def _finish(procs) -> list[tuple[int, str]]:
    out = []
    for p in procs:
        _, err = p.communicate(timeout=120)
        out.append((p.returncode, err))
    return out


def _flock_waiters(path: Path) -> int:
    """How many processes wait on an flock of ``path`` (``/proc/locks``: blocked requests read ``->``)."""
    ino = os.stat(path).st_ino
    return sum(1 for line in Path("/proc/locks").read_text().splitlines() if "->" in line and f":{ino} " in line)


def _check(results: list[tuple[int, str]]) -> None:
    assert [code for code, _ in results] == [0, 0], results
    said = [err for _, err in results if "created a new store" in err]
    assert len(said) == 1, results  # exactly one process created it, and only it says so


def test_two_first_commands_on_a_new_sqlite_store_one_says_created(tmp_path):
    if not Path("/proc/locks").is_file():
        pytest.skip("no /proc/locks to see the commands wait on the lock")
    db = tmp_path / "store.db"
    lock = tmp_path / "store.db.migrate.lock"  # store.queries.locks._lock_file(engine, "migrate")
    with open(lock, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        procs = [_start(f"sqlite:///{db}", n, tmp_path) for n in ("alice", "bob")]
        try:
            _wait_until(lambda: _flock_waiters(lock) == 2, procs, "both commands wait on the migration lock")
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        results = _finish(procs)
    _check(results)


@pytest.mark.postgres
def test_two_first_commands_on_a_new_postgres_store_one_says_created(pg_url, tmp_path):
    import psycopg

    from store.queries.locks import advisory_key

    conninfo = make_url(pg_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as holder:  # advisory locks are per database: this one
        holder.execute("SELECT pg_advisory_lock(%s)", (advisory_key("migrate"),))
        procs = [_start(pg_url, n, tmp_path) for n in ("alice", "bob")]

        def waiting() -> bool:
            row = holder.execute(  # this database's waiters only: other tests share the server
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchone()
            return bool(row and row[0] == 2)

        try:
            _wait_until(waiting, procs, "both commands wait on the migration lock")
        finally:
            holder.execute("SELECT pg_advisory_unlock(%s)", (advisory_key("migrate"),))
        results = _finish(procs)
    _check(results)
