"""The CLI starts at once: ``automonitor --help`` (and a command's ``--help``) imports no heavy library
and stays under a budget of modules, read from ``python -X importtime`` of a real interpreter. The
libraries are imported by the command code that uses them (timings: benchmarks/README.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

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
# (352 for --help, which imports every command module to list them; 339 for a command's --help, which
# imports its own module only: 436 when typer's pydantic adapters came with it; 2026-12-06)
MODULE_BUDGET = 360  # automonitor --help
COMMAND_HELP_BUDGET = 350  # automonitor COMMAND --help
# a read of a store: SQLAlchemy's core (about 130 modules, asyncio included) for every read; neither the ORM,
# SQLModel, the tables' classes nor pydantic for ``runs --json`` (Core over ``store.tables``; typer's pydantic
# adapters only for a value that needs one) nor for a report read back from its cache
# (2026-12-06: 410 for ``runs --json``, 513 before; 466 for a cached ``report --json`` on 2026-12-05)
RUNS_BUDGET = 420  # automonitor runs --json
# the account and sample listings, on Core over ``store.tables`` too (2026-12-06, eighth sitting): ``users list
# --json`` 408 (533 through the ORM, 689 with the whole annotation package), ``stats --json`` 476 (532 through the
# ORM, 542 with the source registry; its document and the errata are validated by pydantic models)
LISTING_BUDGETS = {"users": 415, "stats": 485}
CACHED_REPORT_BUDGET = 480  # automonitor report --json, read back from the report cache
# what listing the runs must not import: the ORM, SQLModel, the tables' classes and pydantic
NOT_FOR_A_LISTING = ("sqlalchemy.orm", "sqlmodel", "store.models", "pydantic")
# what a report on a new store version must not import: the ORM, SQLModel and the tables' classes (its reads are
# Core over ``store.tables``: about 0.16 s CPU of its start-up, 2026-12-06)
NOT_FOR_A_REPORT = ("sqlmodel", "sqlalchemy.orm", "store.models")
# what a cached report read must not import: the analysis stack, the ORM and the tables
NOT_FOR_A_CACHED_READ = ("pandas", "numpy", "scipy", "pyarrow", "sqlmodel", "sqlalchemy.orm", "store.models")


def imported_modules(*args: str, db: str | None = None, env: dict[str, str] | None = None) -> list[str]:
    """The modules a new interpreter imports to run ``automonitor ARGS`` (``-X importtime``) on the store
    ``db`` (none: ``--help``), with the variables ``env`` added; asserts that the command exits 0 (with a
    usage text when no store)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **({"AUTOMONITOR_DB": db} if db else {}), **(env or {})}
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
    """A read of a store at head: SQLAlchemy's core and the store's light tables, but neither the analysis stack,
    Alembic, the ORM, SQLModel, the tables' classes nor pydantic."""
    mods = imported_modules("runs", "--json", db=sqlite_url)
    assert "store.tables" in mods and "automonitor.cli.runs" in mods
    heavy = sorted({m for m in mods if m.split(".")[0] in HEAVY - {"sqlalchemy", "store"}})
    assert not heavy, f"automonitor runs --json imports {heavy[:12]}"
    orm = sorted(m for m in mods if any(m == h or m.startswith(f"{h}.") for h in NOT_FOR_A_LISTING))
    assert not orm, f"automonitor runs --json imports {orm[:12]}"
    # only the command's own module of automonitor.cli (automonitor.cli.COMMAND_MODULES)
    others = sorted(m for m in mods if m.startswith("automonitor.cli.") and m.split(".")[2] in _COMMAND_MODULES)
    assert others == ["automonitor.cli.runs"], others
    assert len(mods) <= RUNS_BUDGET, f"{len(mods)} modules imported (budget {RUNS_BUDGET})"


@pytest.mark.parametrize("args", [["users", "list", "--json"], ["stats", "--json"]])
def test_an_account_or_sample_listing_imports_neither_numpy_nor_the_sources(args, sqlite_engine, sqlite_url):
    """``users list`` imports the roster, not the whole annotation package (its agreement statistics bring NumPy
    and krippendorff) nor the accounts module (argon2); ``stats`` reads the errata without the source registry
    (every source module). Both read through SQLAlchemy Core over ``store.tables``: neither the ORM, SQLModel nor
    the tables' classes (nor pydantic for ``users list``; ``stats`` validates its document with it)."""
    mods = imported_modules(*args, db=sqlite_url)
    assert "store.tables" in mods  # the measure is real: the store was read
    heavy = sorted(m for m in mods if m.split(".")[0] in {"numpy", "pandas", "krippendorff", "scipy", "argon2"})
    heavy += sorted(m for m in mods if m.startswith("automonitor.data.sources"))
    assert not heavy, f"automonitor {' '.join(args)} imports {heavy[:12]}"
    not_here = NOT_FOR_A_LISTING if args[0] == "users" else tuple(h for h in NOT_FOR_A_LISTING if h != "pydantic")
    orm = sorted(m for m in mods if any(m == h or m.startswith(f"{h}.") for h in not_here))
    assert not orm, f"automonitor {' '.join(args)} imports {orm[:12]}"
    budget = LISTING_BUDGETS[args[0]]
    assert len(mods) <= budget, f"{len(mods)} modules imported (budget {budget})"


def _settle(sqlite_engine, sqlite_url) -> None:
    """Close the store and date its files a minute back: a store written a minute ago is settled, so its
    fingerprint may be cached (what a cached read needs)."""
    path = sqlite_url.removeprefix("sqlite:///")
    sqlite_engine.dispose()
    past = time.time() - 60
    for p in (path, f"{path}-wal"):
        if os.path.exists(p):
            os.utime(p, (past, past))


def test_a_cached_report_read_imports_neither_the_analysis_stack_nor_the_orm(sqlite_engine, sqlite_url, tmp_path):
    """``report --json`` on an unchanged store reads its document back (automonitor.analysis.report_cache):
    the first run computes it (pandas, the analysis; on Core over ``store.tables``: neither the ORM, SQLModel nor
    the tables' classes), the second imports none of them, under a module budget."""
    _settle(sqlite_engine, sqlite_url)
    env = {"AUTOMONITOR_CACHE_DIR": str(tmp_path / "cache")}
    first = imported_modules("report", "--json", db=sqlite_url, env=env)
    assert "pandas" in first and "automonitor.analysis.assemble" in first  # computed: the read-back below is real
    orm = sorted(m for m in first if any(m == h or m.startswith(f"{h}.") for h in NOT_FOR_A_REPORT))
    assert not orm, f"automonitor report --json (computed) imports {orm[:12]}"
    mods = imported_modules("report", "--json", db=sqlite_url, env=env)
    assert "automonitor.analysis.report_cache" in mods
    not_here = (*NOT_FOR_A_CACHED_READ, "pydantic", "automonitor.analysis.report_schema")  # the kept text, printed
    heavy = sorted(m for m in mods if any(m == h or m.startswith(f"{h}.") for h in not_here))
    assert not heavy, f"a cached automonitor report --json imports {heavy[:12]}"
    assert len(mods) <= CACHED_REPORT_BUDGET, f"{len(mods)} modules imported (budget {CACHED_REPORT_BUDGET})"


def test_a_cached_html_report_write_imports_neither_pandas_nor_pydantic_nor_plotly(sqlite_engine, sqlite_url, tmp_path):
    """``report --format html`` on an unchanged store writes the page it keeps (its Generated time set anew):
    the first run builds it (automonitor.views.report_html), the second imports neither the analysis stack, the
    report's models nor plotly."""
    _settle(sqlite_engine, sqlite_url)
    env = {"AUTOMONITOR_CACHE_DIR": str(tmp_path / "cache")}
    args = ("report", "--format", "html", "-o", str(tmp_path / "r.html"))
    first = imported_modules(*args, db=sqlite_url, env=env)
    assert "automonitor.views.report_html" in first  # built: the write below is a read-back
    mods = imported_modules(*args, db=sqlite_url, env=env)
    assert "automonitor.analysis.report_cache" in mods
    not_here = (*NOT_FOR_A_CACHED_READ, "pydantic", "plotly", "automonitor.views", "automonitor.analysis.report_schema")
    heavy = sorted(m for m in mods if any(m == h or m.startswith(f"{h}.") for h in not_here))
    assert not heavy, f"a cached automonitor report --format html imports {heavy[:12]}"
    assert "Generated" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_a_cached_audit_read_imports_neither_the_analysis_stack_nor_the_sources(sqlite_engine, sqlite_url, tmp_path):
    """``audit`` of an unchanged store reads its document back (automonitor.data.audit.cache): the first run
    computes it (automonitor.data.audit.editions, pandas), the second imports neither the data stack, the
    audit's computation nor the source registry (checking the edition is automonitor.data.audit.params), nor
    pydantic and the errata's validation (its cache key holds the errata file's bytes:
    automonitor.data.errata_file)."""
    env = {"AUTOMONITOR_CACHE_DIR": str(tmp_path / "cache")}
    first = imported_modules("audit", "--json", db=sqlite_url, env=env)
    assert "automonitor.data.audit.editions" in first and "pandas" in first  # computed: the read-back below is real
    mods = imported_modules("audit", "--json", db=sqlite_url, env=env)
    assert "automonitor.data.audit.cache" in mods
    assert "automonitor.data.errata_file" in mods
    not_here = (*NOT_FOR_A_CACHED_READ, "sklearn", "automonitor.data.audit.editions", "automonitor.data.sources")
    not_here += ("pydantic", "automonitor.data.errata")
    heavy = sorted(m for m in mods if any(m == h or m.startswith(f"{h}.") for h in not_here))
    assert not heavy, f"a cached automonitor audit --json imports {heavy[:12]}"


_COMMAND_MODULES = {
    "data",
    "pairs",
    "runs",
    "analysis",
    "annotation",
    "audit",
    "probes",
    "derive",
    "generate",
    "errata",
}


def test_the_command_table_names_the_module_of_every_command_in_help_order():
    """``automonitor.cli.COMMAND_MODULES`` (what a command imports) against the typer registry with every
    module imported: the same names, each the module that adds it, in the order ``--help`` lists them."""
    from automonitor.cli import COMMAND_MODULES, command
    from automonitor.cli.app import app

    cmd = command()
    owners = {c.name: c.callback.__module__ for c in app.registered_commands}
    owners |= {g.name: g.typer_instance.registered_commands[0].callback.__module__ for g in app.registered_groups}
    assert {n: f"automonitor.cli.{m}" for n, m in COMMAND_MODULES.items()} == owners
    assert list(cmd.list_commands(None)) == list(COMMAND_MODULES)
    assert set(COMMAND_MODULES.values()) == _COMMAND_MODULES
    # a command run loads its own module's commands; an unknown name every command (click's suggestions)
    assert "runs" in command(["-q", "runs", "--json"]).commands
    assert "audit" in command(["audit", "--help"]).commands  # a module that adds one command: still the group
    assert len(command(["no-such-command"]).commands) == len(COMMAND_MODULES)


def test_a_value_needing_no_coercion_is_passed_as_typer_coerces_it():
    """Every parameter of every command (``automonitor.cli.command``) coerces a value as typer's own coercion
    does (``typer._coercion.build_runtime_param``, pydantic adapters): an unset value, a text, a number (as text
    and as a default), one below a bound, a bad number, repeated values; the same result or the same error message."""
    from typer._coercion import build_runtime_param

    from automonitor.cli import command

    group = command()
    checked = 0
    stack = [group]
    while stack:
        c = stack.pop()
        stack += list(getattr(c, "commands", {}).values())
        ctx = c.context_class(c, info_name=c.name)
        for p in c.get_params(ctx):
            if not hasattr(p, "type_descriptor"):
                continue
            plain = p._runtime_param  # what command() leaves on every parameter: not typer's own
            assert type(plain).__module__ == "automonitor.cli", type(plain)
            for value in (None, "text", "5", "x", "2.5", 5, 0, 2.5, ("a", "b"), ()):  # 0: below a min=1
                outcomes = []
                for coercion in (plain, build_runtime_param(p.type_descriptor)):
                    try:
                        outcomes.append(("value", coercion.coerce(value, param=p, ctx=ctx)))
                    except Exception as exc:  # noqa: BLE001 - the error is compared
                        outcomes.append((type(exc).__name__, str(exc)))
                assert outcomes[0] == outcomes[1], (c.name, p.name, value, outcomes)
                checked += 1
    assert checked > 500  # every command's parameters were seen


@pytest.mark.parametrize("fmt", ["json", "html"])
def test_a_report_on_a_new_store_version_reads_the_store_on_core(fmt, tmp_path):
    """``report --json`` and ``report --format html`` computed (an empty report cache) on a store with direct and
    evidence runs whose audits the store keeps (as ``automonitor build`` leaves it): every read is Core over
    ``store.tables``, so neither the ORM, SQLModel nor the tables' classes are imported (about 0.16 s CPU)."""
    from report_html_seed import seed_store

    from automonitor.data.audit import keep_audits

    url = f"sqlite:///{tmp_path / 'report.db'}"
    engine = seed_store(url)
    keep_audits(engine)
    engine.dispose()
    out = tmp_path / "report.html"
    args = ["report", "--json"] if fmt == "json" else ["report", "--format", "html", "-o", str(out)]
    mods = imported_modules(*args, db=url, env={"AUTOMONITOR_CACHE_DIR": str(tmp_path / "cache")})
    assert "automonitor.analysis.assemble" in mods and "store.tables" in mods  # the report was computed
    assert fmt == "json" or out.stat().st_size > 0
    orm = sorted(m for m in mods if any(m == h or m.startswith(f"{h}.") for h in NOT_FOR_A_REPORT))
    assert not orm, f"automonitor {' '.join(args[:3])} (computed) imports {orm[:12]}"
