"""Logging: a logger per module, ``--verbose`` / ``--quiet`` on every command (before or after its name), a
run's log in its file, and no secret in any log line (a real judge run against the loopback
OpenAI-compatible server with a key in the environment; the server quotes the key back in its 401 answer,
as some proxies do, so the key reaches the error the runner logs)."""

from __future__ import annotations

import ast
import logging
import secrets
from pathlib import Path

import pytest
from sqlmodel import Session, select

from automonitor.cli import logs
from helpers import run_cli
from servers.data import add_pairs
from servers.openai_fault import OpenAIFaultServer
from store import get_engine, init_db
from store.models import Prediction, Run

REPO = Path(__file__).resolve().parents[2]


def test_a_judge_run_logs_to_its_file_without_the_api_key(tmp_path, sqlite_url, sqlite_engine):
    # sqlite_engine: sqlite_url is a copy of the run's migrated empty store (the migrations are not under test)
    add_pairs(init_db(get_engine(sqlite_url)), 3)
    key = "sk-test-" + secrets.token_hex(16)
    with OpenAIFaultServer() as srv:
        srv.force, srv.echo_key = "401", True
        r = run_cli(
            ["run", "--monitor", "openai:gpt-4o-mini", "--template", "direct", "--base-url", srv.base_url]
            + ["--param", "max_attempts=1", "--verbose", "--json"],
            db=sqlite_url,
            env={"OPENAI_API_KEY": key, "AUTOMONITOR_LOG_DIR": str(tmp_path / "logs")},
            subprocess_only=True,  # the key in the environment of a process from its start
        )
        assert srv.fault_counts["401"] > 0
    assert r.returncode == 1, r.stderr  # every call failed permanently: the run failed (CONTRACT)
    (log_file,) = (tmp_path / "logs").glob("*.log")
    text = log_file.read_text(encoding="utf-8")
    assert "automonitor.runs.lease" in text and "running in pid" in text, text
    assert "automonitor.runs.runner.retries" in text and "Incorrect API key provided: ***" in text, text
    assert "automonitor.runs.status" in text and ": failed" in text, text
    assert key not in text and key not in r.stderr and key not in r.stdout
    assert key[8:24] not in text  # no part of it either
    with Session(get_engine(sqlite_url)) as s:  # nor is it stored (API keys are never stored)
        stored = [r.error or "" for r in s.exec(select(Run))]
        stored += [f"{p.raw} {p.reason}" for p in s.exec(select(Prediction))]
    assert stored and not [x for x in stored if key in x], stored


@pytest.mark.parametrize(
    "line",
    [
        "Incorrect API key provided: {key}",
        "headers {{'Authorization': 'Bearer {key}'}}",
        "connecting to https://user:{key}@example.org/v1",
    ],
)
def test_every_handler_masks_secrets_from_the_environment_and_urls(line, monkeypatch):
    key = "k3y-" + secrets.token_hex(12)
    monkeypatch.setenv("ACME_API_KEY", key)
    formatted = logs.RedactingFormatter("%(message)s").format(
        logging.LogRecord("automonitor.x", logging.WARNING, __file__, 1, line.format(key=key), None, None)
    )
    assert key not in formatted and "***" in formatted


def test_verbose_and_quiet_are_taken_anywhere_and_run_keeps_its_own_quiet():
    assert logs.take_flags(["stats", "--verbose", "--json"], set()) == (["stats", "--json"], "verbose")
    assert logs.take_flags(["-q", "stats"], set()) == (["stats"], "quiet")
    assert logs.take_flags(["run", "--quiet"], {"--quiet"}) == (["run", "--quiet"], "quiet")
    assert logs.take_flags(["errata", "add", "p", "--", "-v"], set()) == (["errata", "add", "p", "--", "-v"], "default")


def test_verbose_shows_debug_lines_and_quiet_hides_warnings(tmp_path, sqlite_url, sqlite_engine):
    # sqlite_engine: sqlite_url is a copy of the run's migrated empty store (the migrations are not under test)
    add_pairs(init_db(get_engine(sqlite_url)), 1)
    loud = run_cli(["stats", "--json", "--verbose"], db=sqlite_url)
    assert loud.returncode == 0 and "DEBUG store.engine: store" in loud.stderr, loud.stderr
    plain = run_cli(["--quiet", "stats", "--json"], db=sqlite_url)
    assert plain.returncode == 0 and "DEBUG" not in plain.stderr and plain.stdout == loud.stdout
    bad = run_cli(["-q", "stats", "--split", "nope"], db=sqlite_url)
    assert bad.returncode == 2 and "nope" in bad.stderr  # errors still say what is wrong


def test_modules_that_log_use_their_own_logger():
    """``logging.getLogger(__name__)`` only: no module of the product logs through the root logger
    (``logging.info(...)``) or a logger named by hand."""
    bad = []
    for pkg in ("automonitor", "store"):
        for path in (REPO / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                if ast.unparse(node.func.value) != "logging":
                    continue
                where = f"{path.relative_to(REPO)}:{node.lineno}"
                if node.func.attr in ("debug", "info", "warning", "error", "exception", "critical", "log"):
                    bad.append(f"{where} logs through the root logger")
                elif node.func.attr == "getLogger" and path.name != "logs.py":
                    if [ast.unparse(a) for a in node.args] != ["__name__"]:
                        bad.append(f"{where} names its logger by hand")
    assert not bad, "\n".join(bad)
