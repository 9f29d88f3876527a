"""A disk-full import and an unreachable database each print ONE clear
line on stderr: no SQL, no parameters, no row data, no traceback. A real full disk (a 3 MB tmpfs;
needs root to mount, else skipped) and a real closed PostgreSQL port."""

from __future__ import annotations

import json
import socket
import subprocess
import uuid

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def tiny_disk(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode(errors='replace').strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_disk_full_import_prints_one_clear_line(tiny_disk, tmp_path, cli):
    db = f"sqlite:///{tiny_disk / 'store.db'}"
    from store import get_engine, init_db

    init_db(get_engine(db, fresh=True)).dispose()  # the store fits (reading commands never create one)
    assert cli(["stats", "--json"], db=db).returncode == 0
    marker = "ROWDATA-" + uuid.uuid4().hex
    big = tmp_path / "pairs.jsonl"
    with big.open("w") as fh:
        for p in range(400):
            req = f"{marker} request {p} " + "x" * 4000
            for lab in ("misbehavior", "benign"):
                fh.write(
                    json.dumps(
                        {
                            "pair_id": f"p{p}",
                            "category": "sycophancy_bias",
                            "task": "qa",
                            "request": req,
                            "response": f"{lab} {p} " + "y" * 4000,
                            "label": lab,
                        }
                    )
                    + "\n"
                )
    res = cli(["import", str(big)], db=db)
    assert res.returncode == 1
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert lines == [lines[0]] and "ran out of disk space" in lines[0], res.stderr[-3000:]
    assert marker not in res.stderr and "INSERT" not in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr) < 300


def test_unreachable_database_prints_one_clear_line(cli):
    db = f"postgresql+psycopg://someone:s3cret-pw@127.0.0.1:{_free_port()}/nowhere"
    res = cli(["stats", "--json"], db=db)
    assert res.returncode == 1
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach the store database"), res.stderr
    assert "s3cret-pw" not in res.stderr and "sqlalche.me" not in res.stderr and "Traceback" not in res.stderr
