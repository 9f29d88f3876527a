"""The CLI never silently creates an empty store: reading commands refuse a missing store
naming it, every error names the store used, and only build / import / users add create one, saying so."""

from __future__ import annotations

import sqlite3


import pytest

from helpers import REPO, run_cli, run_cli_in_process, sycophancy_script


def _cli(args, *, db, cwd, input=None):
    """The command run in this process with ``cwd`` as its working directory (:func:`run_cli_in_process`):
    the store rule, not the process, is under test here; ``test_a_database_error_names_the_default_store_too``
    runs a real process in its folder."""
    return run_cli_in_process(args, db=db, cwd=cwd, input=input)


@pytest.mark.parametrize(
    "args",
    [
        ["stats", "--json"],
        ["agreement"],
        ["runs"],
        ["users", "list"],
        ["assign", "--limit", "2"],
        ["report", "--json"],
        ["generate", "list"],
    ],
)
def test_reading_commands_refuse_a_missing_store_and_name_it(tmp_path, args):
    store = tmp_path / "nowhere.db"
    r = _cli(args, db=f"sqlite:///{store}", cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert f"no store at sqlite:///{store}" in r.stderr and "automonitor build" in r.stderr
    assert not store.exists() and list(tmp_path.iterdir()) == []  # nothing created anywhere


def test_users_add_creates_the_store_and_says_so_then_errors_name_it(tmp_path):
    url = f"sqlite:///{tmp_path / 'team.db'}"
    r = _cli(["users", "add", "alice", "--password-stdin"], db=url, input="password-of-alice\n", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"created a new store at {url}" in r.stderr
    r = _cli(["users", "add", "bob", "--password-stdin"], db=url, input="password-of-bob\n", cwd=tmp_path)
    assert r.returncode == 0 and "created a new store" not in r.stderr
    r = _cli(["unassign", "--annotator", "carol"], db=url, cwd=tmp_path)
    assert r.returncode == 2 and "no account named 'carol'" in r.stderr and f"(store: {url})" in r.stderr


@pytest.mark.parametrize(
    ("args", "password", "field"),
    [
        (["users", "add", "root", "--role", "admin"], "short", "at least 12"),
        (["users", "add", "root", "--role", "owner"], "a long enough password", "unknown role"),
        (["users", "add", "   ", "--role", "admin"], "a long enough password", "name"),
    ],
)
def test_users_add_with_bad_input_creates_no_store(tmp_path, args, password, field):
    # bad input changes nothing: not even the store file the first account would have created (trial54: a short
    # password printed "created a new store" and then failed, leaving the empty store behind)
    db = tmp_path / "new.db"
    r = run_cli_in_process([*args, "--password-stdin"], db=f"sqlite:///{db}", input=password + "\n")
    assert r.returncode == 2 and field in r.stderr and "created a new store" not in r.stderr
    assert not db.exists() and list(tmp_path.iterdir()) == []


def test_a_postgres_url_without_schema_is_refused_with_the_password_masked(pg_url):
    from sqlalchemy.engine import make_url

    u = make_url(pg_url).set(password="s3cret-pw")
    r = run_cli(["stats", "--json"], db=u.render_as_string(hide_password=False))
    assert r.returncode == 2 and "no store at" in r.stderr
    assert "s3cret-pw" not in r.stderr


@pytest.mark.postgres
@pytest.mark.parametrize("args", [["stats", "--json"], ["build", "--json"]])
def test_a_missing_postgres_database_exits_2_as_a_missing_sqlite_file_does(pg_url, args):
    """CONTRACT: a missing store is bad input (exit 2); a missing PostgreSQL database exited 1 while a
    missing SQLite file exited 2 (fresh-user trial). The message names the database and how to create it."""
    from sqlalchemy.engine import make_url

    u = make_url(pg_url).set(database="automonitor_no_such_db", password="s3cret-pw")
    r = run_cli(args, db=u.render_as_string(hide_password=False))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "the PostgreSQL database 'automonitor_no_such_db' does not exist" in r.stderr
    assert "createdb automonitor_no_such_db" in r.stderr and "s3cret-pw" not in r.stderr


def test_generate_refuses_a_missing_store_names_it_and_creates_no_file(tmp_path):
    """A generation writes candidates but is no way to start a store: with a mistyped AUTOMONITOR_DB it
    would spend generator calls filling a new empty file in the current directory. It refuses (exit 2)
    before any call, like every other command that is not build / import / users add."""
    from servers.scripted_generator import ScriptedGenerator

    store = tmp_path / "nowhere.db"
    with ScriptedGenerator(sycophancy_script(2)) as srv:
        args = ["generate", "sycophancy", "--generator", "openai:scripted-gen", "--base-url", srv.base_url]
        r = _cli([*args, "--source", "bct_truthfulqa_cues", "--limit", "2"], db=f"sqlite:///{store}", cwd=tmp_path)
        calls = srv.total
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert f"no store at sqlite:///{store}" in r.stderr and "automonitor build" in r.stderr
    assert "created a new store" not in r.stderr and calls == 0
    assert not store.exists() and list(tmp_path.iterdir()) == []


def test_build_creates_the_store_and_says_so_once(tmp_path, small_raw_dir):
    raw = small_raw_dir  # two small sources: the store rule, not the build, is under test
    url = f"sqlite:///{tmp_path / 'built.db'}"
    r = _cli(["build", "--raw", str(raw), "--json"], db=url, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"created a new store at {url}" in r.stderr
    # the audit of paper is kept in the store for the first report: computed, or (the test run shares one cache
    # directory) the one an earlier build of the same plan into a new store computed (data.build.fresh_audits)
    assert "audit of edition paper: computing" in r.stderr or "plan: read from the cache" in r.stderr
    with sqlite3.connect(tmp_path / "built.db") as c:
        assert c.execute("SELECT key FROM derived_document").fetchall() == [("audit:paper",)]
    r = _cli(["build", "--raw", str(raw), "--json"], db=url, cwd=tmp_path)
    assert r.returncode == 0 and "created a new store" not in r.stderr, r.stderr
    assert "audit of edition" not in r.stderr  # the same samples: the kept audit stands


def test_import_creates_the_store_and_says_so_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'imported.db'}"
    seeds = REPO / "seeds" / "examples.jsonl"
    r = _cli(["import", str(seeds)], db=url, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"created a new store at {url}" in r.stderr
    r = _cli(["import", str(seeds)], db=url, cwd=tmp_path)
    assert r.returncode == 0 and "created a new store" not in r.stderr, r.stderr


def test_a_database_error_names_the_default_store_too(tmp_path):
    """Without AUTOMONITOR_DB the CLI uses ``sqlite:///automonitor.db`` in the current directory; a
    database error then names that file (by its absolute path), not nothing."""
    (tmp_path / "automonitor.db").write_bytes(b"this is not a SQLite database file " * 64)
    r = run_cli(["stats", "--json"], db="", cwd=tmp_path)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"(sqlite:///{tmp_path / 'automonitor.db'})" in r.stderr, r.stderr


@pytest.mark.parametrize("url", ["not a url", "foo://bar/store", "postgresql+nodriver://h/db"])
def test_a_malformed_store_url_exits_2_in_one_line_and_creates_nothing(tmp_path, url):
    """A malformed AUTOMONITOR_DB (unparsable, unknown dialect or driver) is bad input: exit 2 with one
    line naming AUTOMONITOR_DB (it exited 1 as a database error; issue 37)."""
    r = _cli(["stats", "--json"], db=url, cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "AUTOMONITOR_DB" in lines[0] and r.stdout == "", r.stderr
    assert list(tmp_path.iterdir()) == []
