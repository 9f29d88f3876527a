"""A store's PostgreSQL that goes away prints ONE line on stderr (issue 37, finding 7), with a real server:
a private cluster (``initdb`` + ``pg_ctl``) on a free port in a temp dir, a store created in it through the
CLI, then the cluster stopped (``pg_ctl stop -m immediate``) between commands and under a command that waits
on a lock; and a port nothing listens on. Each time: exit 1, exactly one stderr line that names the host and
port and the cause (connection refused / connection lost), never the password, never a traceback."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from helpers import run_cli, write_pairs

pytestmark = pytest.mark.slow

PASSWORD = "s3cret-Pw-never-shown"


def _pg_bin() -> Path | None:
    """The directory of the newest PostgreSQL server binaries here (``initdb``, ``pg_ctl``), or ``None``."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    which = shutil.which("pg_ctl")
    return Path(which).resolve().parent if which and shutil.which("initdb") else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A private PostgreSQL cluster in ``root`` on ``port``, run as the ``postgres`` user when this test
    runs as root (``initdb`` refuses root)."""

    def __init__(self, bin_dir: Path, root: Path, port: int) -> None:
        self.bin, self.root, self.port = bin_dir, root, port
        self.data = root / "data"
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            runuser = shutil.which("runuser")
            if runuser is None:
                pytest.skip("running as root without runuser: initdb cannot run as root")
            os.chown(root, _uid("postgres"), -1)
            self.as_user = [runuser, "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        subprocess.run([*self.as_user, *args], check=True, capture_output=True, timeout=120)

    def init_and_start(self) -> None:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "am", "--no-sync")
        self.start()
        subprocess.run(
            [str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "am", "store"],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def start(self) -> None:
        opts = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", opts, "-l", str(self.root / "log"), "-w", "start"
        )

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    @property
    def url(self) -> str:
        # trust auth: the password is never checked, but it is in the URL, so a message could leak it
        return f"postgresql+psycopg://am:{PASSWORD}@127.0.0.1:{self.port}/store"


def _uid(name: str) -> int:
    import pwd

    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        pytest.skip(f"running as root and no {name!r} user to run initdb as")
        raise


@pytest.fixture
def cluster():
    bin_dir = _pg_bin()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin or on PATH")
    # its own folder under the system temp dir (pytest's tmp_path sits below a 0700 folder of root's, which
    # the postgres user could not enter)
    root = Path(tempfile.mkdtemp(prefix="automonitor-pg-"))
    try:
        c = Cluster(bin_dir, root, _free_port())
        c.init_and_start()
        try:
            yield c
        finally:
            if (c.data / "postmaster.pid").exists():
                c.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _assert_one_line(proc: subprocess.CompletedProcess, port: int, cause: tuple[str, ...]) -> str:
    """Exit 1 and exactly one stderr line naming host, port and one of ``cause``; no password, no traceback."""
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1, proc.stderr
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("error: cannot reach the store database"), line
    assert f"127.0.0.1:{port}" in line, line
    assert any(c in line.lower() for c in cause), line
    assert PASSWORD not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr
    assert proc.stdout == ""
    return line


def _cli(args: list[str], url: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return run_cli(args, db=url, input=stdin, subprocess_only=True, timeout=120)


def test_a_stopped_postgresql_gives_one_line_for_reads_and_writes(cluster, tmp_path):
    made = _cli(["users", "add", "alice", "--role", "admin", "--password-stdin"], cluster.url, "a-long-passphrase-1\n")
    assert made.returncode == 0, made.stderr
    assert "created a new store" in made.stderr and PASSWORD not in made.stderr
    assert _cli(["stats", "--json"], cluster.url).returncode == 0

    cluster.stop()
    refused = ("connection refused",)
    _assert_one_line(_cli(["stats", "--json"], cluster.url), cluster.port, refused)  # a read
    _assert_one_line(  # a write that would create the store
        _cli(["errata", "add", "p1", "--verdict", "wrong", "--reason", "r"], cluster.url), cluster.port, refused
    )
    pairs = tmp_path / "pairs.jsonl"
    write_pairs(pairs)
    _assert_one_line(_cli(["import", str(pairs)], cluster.url), cluster.port, refused)  # a write


def test_postgresql_stopped_under_a_waiting_write_gives_one_line(cluster, tmp_path):
    """The server dies while ``import`` holds an open connection (it waits on the import lock the test
    holds): the lost connection is one line, not the driver's warning and the CLI's error."""
    import psycopg

    from store.queries.locks import advisory_key

    assert (
        _cli(
            ["users", "add", "alice", "--role", "admin", "--password-stdin"], cluster.url, "a-long-passphrase-1\n"
        ).returncode
        == 0
    )
    pairs = tmp_path / "pairs.jsonl"
    write_pairs(pairs)
    holder = psycopg.connect(host="127.0.0.1", port=cluster.port, user="am", dbname="store")
    holder.execute("SELECT pg_advisory_lock(%s)", (advisory_key("pair-import"),))
    env = {**os.environ, "AUTOMONITOR_DB": cluster.url}
    exe = Path(sys.executable).parent / "automonitor"
    proc = subprocess.Popen(
        [str(exe), "import", str(pairs)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # until the import waits on the lock: its connection is open, mid-transaction
            waiting = holder.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            ).fetchone()
            if waiting and waiting[0]:
                break
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "import never waited on the lock"
            time.sleep(0.1)
        cluster.stop()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        holder.close()
    _assert_one_line(
        subprocess.CompletedProcess(proc.args, proc.returncode, out, err),
        cluster.port,
        ("server closed the connection", "terminating connection", "connection is lost", "connection is closed"),
    )


def test_a_closed_port_says_connection_refused(tmp_path):
    port = _free_port()  # bound then released: nothing listens there
    url = f"postgresql+psycopg://am:{PASSWORD}@127.0.0.1:{port}/store"
    t0 = time.monotonic()
    proc = _cli(["stats", "--json"], url)
    _assert_one_line(proc, port, ("connection refused",))
    assert "timeout" not in proc.stderr.lower()
    assert time.monotonic() - t0 < 30  # refused at once, not after a connect timeout
    _assert_one_line(
        _cli(["errata", "add", "p1", "--verdict", "wrong", "--reason", "r"], url), port, ("connection refused",)
    )
