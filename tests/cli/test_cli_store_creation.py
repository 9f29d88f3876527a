"""The CLI never silently creates an empty store: reading commands refuse a missing store
naming it, every error names the store used, and only build / import / users add create one, saying so."""

from __future__ import annotations

import pytest

from helpers import run_cli


@pytest.mark.parametrize(
    "args",
    [["stats", "--json"], ["agreement"], ["runs"], ["users", "list"], ["assign", "--limit", "2"], ["report", "--json"]],
)
def test_reading_commands_refuse_a_missing_store_and_name_it(tmp_path, args):
    store = tmp_path / "nowhere.db"
    r = run_cli(args, db=f"sqlite:///{store}", cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert f"no store at sqlite:///{store}" in r.stderr and "automonitor build" in r.stderr
    assert not store.exists() and list(tmp_path.iterdir()) == []  # nothing created anywhere


def test_users_add_creates_the_store_and_says_so_then_errors_name_it(tmp_path):
    url = f"sqlite:///{tmp_path / 'team.db'}"
    r = run_cli(["users", "add", "alice", "--password-stdin"], db=url, input="pw-alice\n", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"created a new store at {url}" in r.stderr
    r = run_cli(["users", "add", "bob", "--password-stdin"], db=url, input="pw-bob\n", cwd=tmp_path)
    assert r.returncode == 0 and "created a new store" not in r.stderr
    r = run_cli(["unassign", "--annotator", "carol"], db=url, cwd=tmp_path)
    assert r.returncode == 2 and "no account named 'carol'" in r.stderr and f"(store: {url})" in r.stderr


def test_a_postgres_url_without_schema_is_refused_with_the_password_masked(pg_url):
    from sqlalchemy.engine import make_url

    u = make_url(pg_url).set(password="s3cret-pw")
    r = run_cli(["stats", "--json"], db=u.render_as_string(hide_password=False))
    assert r.returncode == 2 and "no store at" in r.stderr
    assert "s3cret-pw" not in r.stderr
