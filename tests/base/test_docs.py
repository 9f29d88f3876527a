"""The docs site cannot lie: the reference pages are what the code generates (scripts/gen_reference.py),
the configuration table lists every ``AUTOMONITOR_*`` variable the code reads, every page is in the nav,
and every command a tutorial shows (a ``$ `` line of a ``console`` block) runs, in order, on a small store
(an OpenAI-compatible URL and Anthropic are served by the project's loopback servers)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
sys.path.insert(0, str(REPO / "scripts"))

import gen_reference  # noqa: E402


def test_the_reference_pages_are_what_the_code_generates(capsys):
    assert gen_reference.main(["--check"]) == 0, capsys.readouterr().err


def test_the_reference_check_fails_when_a_page_drifts(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gen_reference, "OUT", tmp_path)
    gen_reference.main([])
    page = tmp_path / "cli.md"
    page.write_text(page.read_text().replace("`--monitor`", "`--model`"))
    assert gen_reference.main(["--check"]) == 1
    assert "cli.md" in capsys.readouterr().err


def test_the_configuration_table_is_every_variable_the_code_reads():
    from automonitor.vocab import CONFIG_VARS

    found: set[str] = set()
    files = [*REPO.glob("automonitor/**/*.py"), *REPO.glob("store/**/*.py"), *REPO.glob("pages/*.py"), REPO / "app.py"]
    # the scripts and the test harness read variables a user sets too (trial53: AUTOMONITOR_CHROMIUM was in
    # neither table); test files themselves set variables for the code, which the scan above finds
    files += [
        *REPO.glob("scripts/*.py"),
        *REPO.glob("scripts/*.sh"),
        REPO / "Makefile",
        *REPO.glob("tests/**/conftest.py"),
    ]
    for f in files:
        found |= set(re.findall(r"\bAUTOMONITOR_[A-Z][A-Z0-9_]*[A-Z0-9]\b", f.read_text(encoding="utf-8")))
    assert found == set(CONFIG_VARS)
    page = (DOCS / "reference" / "configuration.md").read_text()
    assert all(f"`{v}`" in page for v in found)


def _nav_pages(node) -> set[str]:
    if isinstance(node, str):
        return {node}
    if isinstance(node, list):
        return set().union(*(_nav_pages(x) for x in node))
    if isinstance(node, dict):
        return set().union(*(_nav_pages(x) for x in node.values()))
    return set()


def test_every_docs_page_is_in_the_nav():
    cfg = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages == _nav_pages(cfg["nav"])


def tutorial_commands(name: str) -> list[str]:
    """The ``$ `` lines of the ``console`` blocks of ``docs/tutorials/<name>.md``, in order."""
    text = (DOCS / "tutorials" / f"{name}.md").read_text()
    out = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        out += [ln[2:] for ln in block.splitlines() if ln.startswith("$ ")]
    return out


#: the tutorials, in the order :data:`SHELL_LINES` reads them
TUTORIALS = ("first-result", "evaluate-your-monitor", "pilot")

#: ``echo 'TEXT' | automonitor ARGS`` or ``automonitor ARGS``: a line :func:`_run_line` may run in this process
_CLI_LINE = re.compile(r"^(?:echo '(?P<stdin>[^']*)' \| )?automonitor (?P<args>[^|;&<>$`]*)$")


def _subcommand(cmd: str) -> str | None:
    """The ``automonitor`` subcommand a tutorial line runs (``report``, ``users add``), or ``None`` for a line
    that is not a plain ``automonitor`` call."""
    m = _CLI_LINE.match(cmd)
    if m is None:
        return None
    words = m["args"].split()
    return " ".join(words[:2]) if len(words) > 1 and re.fullmatch(r"[a-z][a-z-]*", words[1]) else words[0]


def shell_lines(name: str) -> list[bool]:
    """For each line of tutorial ``name``: whether it runs through ``bash`` as typed. Every line that is not a
    plain ``automonitor`` call does, and the first line of each subcommand over the tutorials in
    :data:`TUTORIALS` order (fixed by the docs, not by which test runs first), so that each subcommand the
    tutorials show starts once as a real process of the console script; the other lines run in this process."""
    seen: set[str] = set()
    for tut in TUTORIALS:
        flags = []
        for cmd in tutorial_commands(tut):
            sub = _subcommand(cmd)
            flags.append(sub is None or sub not in seen)
            if sub is not None:
                seen.add(sub)
        if tut == name:
            return flags
    raise ValueError(f"{name!r} is not one of {TUTORIALS}")


def test_each_subcommand_a_tutorial_shows_runs_once_through_the_shell():
    """The in-process lines are repeats: every subcommand of the tutorials has a line run through ``bash`` (a
    real process of the console script), and so has every line that is not a plain ``automonitor`` call."""
    lines = [(cmd, sh) for tut in TUTORIALS for cmd, sh in zip(tutorial_commands(tut), shell_lines(tut))]
    subs = {_subcommand(cmd) for cmd, _ in lines}
    assert {_subcommand(cmd) for cmd, sh in lines if sh} == subs and len(subs) >= 9
    assert all(sh for cmd, sh in lines if _subcommand(cmd) is None)
    assert _subcommand("echo 'pw' | automonitor users add anna --password-stdin") == "users add"
    assert _subcommand("automonitor import docs/examples/pairs.jsonl") == "import"
    assert _subcommand("automonitor report | head") is None


def _run_line(cmd: str, tmp_path: Path, env: dict[str, str], shell: bool) -> subprocess.CompletedProcess:
    """Run one tutorial line in ``tmp_path`` with environment ``env``: through ``bash -c`` when ``shell``,
    else the console script's entry point in this process (:func:`helpers.run_cli_in_process`: the same
    ``automonitor.cli.main``, arguments split as the shell splits them, the piped ``echo`` text as stdin,
    the environment's differences from this process's for the call only)."""
    if shell:
        return subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    from helpers import run_cli_in_process

    m = _CLI_LINE.match(cmd)
    assert m is not None, cmd
    diff: dict[str, str | None] = {k: v for k, v in env.items() if os.environ.get(k) != v}
    diff |= {k: None for k in os.environ if k not in env}
    stdin = None if m["stdin"] is None else m["stdin"] + "\n"
    return run_cli_in_process(shlex.split(m["args"]), db=env["AUTOMONITOR_DB"], env=diff, input=stdin, cwd=tmp_path)


def _run_all(
    commands: list[str], tmp_path: Path, env: dict[str, str], shell: list[bool]
) -> list[subprocess.CompletedProcess]:
    """Run ``commands`` in order in ``tmp_path`` (``shell[i]``: line ``i`` through ``bash``, else in this
    process); each must exit 0 (AssertionError naming the line and its output otherwise)."""
    assert len(shell) == len(commands)
    shutil.copytree(DOCS / "examples", tmp_path / "docs" / "examples")
    out = []
    for cmd, sh in zip(commands, shell):
        r = _run_line(cmd, tmp_path, env, sh)
        assert r.returncode == 0, (cmd, r.stdout[-2000:], r.stderr[-2000:])
        out.append(r)
    return out


@pytest.fixture
def tutorial_env(tmp_path):
    env = {
        **os.environ,
        "AUTOMONITOR_DB": f"sqlite:///{tmp_path / 'tutorial.db'}",
        "AUTOMONITOR_CACHE_DIR": str(tmp_path / "cache"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "200",
    }
    env.pop("OPENAI_API_KEY", None)
    return env


def test_the_first_result_tutorial_runs(tmp_path, tutorial_env):
    cmds = tutorial_commands("first-result")
    assert "automonitor report" in cmds
    # `make demo` made the store; here: the example pairs and the rules baseline
    setup = ["automonitor import docs/examples/pairs.jsonl", "automonitor run --monitor rules --template direct"]
    # (the set-up lines are the evaluate tutorial's first two, which run through bash there)
    res = _run_all(setup + cmds, tmp_path, tutorial_env, [False, False, *shell_lines("first-result")])
    assert "rules:rules-v1" in res[2].stdout and (tmp_path / "report.html").stat().st_size > 100_000


def test_the_evaluate_your_monitor_tutorial_runs(tmp_path, tutorial_env):
    from servers.anthropic_replay import AnthropicReplayServer
    from servers.openai_fault import OpenAIFaultServer

    cmds = tutorial_commands("evaluate-your-monitor")
    url = "http://127.0.0.1:8000/v1"
    assert any(url in c for c in cmds) and any("--monitor anthropic:" in c for c in cmds)
    with OpenAIFaultServer() as oai, AnthropicReplayServer() as ant:
        run = []
        for c in cmds:  # the README's URL is served by a loopback server; Anthropic by its replay
            c = c.replace(url, oai.base_url)
            if "--monitor anthropic:" in c:
                c += f" --base-url {ant.root_url}"
            run.append(c)
        env = {**tutorial_env, "ANTHROPIC_API_KEY": "sk-ant-test-not-real"}
        res = _run_all(run, tmp_path, env, shell_lines("evaluate-your-monitor"))
    report = next(r.stdout for c, r in zip(cmds, res) if c == "automonitor report")
    for monitor in ("openai:my-model", "anthropic:claude", "my-guardrail"):  # the table may cut long names
        assert monitor in report
    runs = subprocess.run(
        ["automonitor", "runs", "--json"], env=tutorial_env, capture_output=True, text=True, cwd=tmp_path, check=True
    ).stdout
    assert all(f'"status": "{s}"' not in runs for s in ("failed", "running", "pending"))
    assert oai.calls and (tmp_path / "report.html").exists()


def test_the_pilot_tutorial_reaches_gold(tmp_path, tutorial_env):
    cmds = tutorial_commands("pilot")
    res = _run_all(cmds, tmp_path, tutorial_env, shell_lines("pilot"))
    outs = [r.stdout for r in res]
    first_finalize = outs[cmds.index("automonitor adjudications finalize")]
    # round 1 is labelled in the app in the tutorial, not here: its two pairs wait for those labels first
    assert "2 pair(s) still pending" in first_finalize
    assert "2 pending pair(s): a side's labels are not all submitted. Next:" in first_finalize
    assert "Accepted 2 pair(s) into edition verified" in outs[-2]
    assert "4 samples in 2 pairs" in outs[-1]


def test_the_format_tables_say_whether_each_field_is_required_and_what_it_means():
    """docs/reference/formats.md's field tables (fresh-user trial: the predictions table had empty
    "required" and "meaning" columns): every row says yes/no and what the field holds, and "required" is
    what the model does: a predictions row without a required field is refused, one with only them is not."""
    from pydantic import ValidationError

    from automonitor.data.row_models import PredictionRow

    page = (DOCS / "reference" / "formats.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| .+ \| (.*?) \| (.*?) \|$", page, flags=re.M)
    assert len(rows) >= 40, rows
    assert all(req in ("yes", "no") and meaning.strip() for _, req, meaning in rows), rows
    required = [n for n in PredictionRow.model_fields if gen_reference.field_required(PredictionRow, n)]
    assert required == ["sample_id", "outcome"]
    assert PredictionRow.model_validate({"sample_id": "s1", "outcome": "benign"}).score is None
    for name in required:
        with pytest.raises(ValidationError):
            PredictionRow.model_validate(
                {k: v for k, v in {"sample_id": "s1", "outcome": "benign"}.items() if k != name}
            )
