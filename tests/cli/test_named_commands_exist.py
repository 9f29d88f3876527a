"""Every ``automonitor <command>`` that a message or help text in the package names is a real command, and
every ``--option`` written right after it is one of that command's options: a build error told users to run
``automonitor cancel RUN``, which does not exist (the command is ``automonitor runs --cancel RUN``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from helpers import run_cli
from servers.data import add_pairs

from automonitor.cli import command
from automonitor.runs import runner

REPO = Path(__file__).resolve().parents[2]
_WORD = re.compile(r"[a-z][a-z0-9-]*")
_OPTION = re.compile(r"--[a-z][a-z0-9-]*")
_MENTION = re.compile(r"(?<![\w./-])automonitor +(?=[a-z])")


def _strings(path: Path):
    """``(line, text)`` of every string literal of a module (f-strings: their literal parts joined)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value
        elif isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else "{}" for v in node.values]
            yield node.lineno, "".join(str(p) for p in parts)


def _mentions(text: str):
    """Each ``automonitor ...`` in ``text``: its tokens up to the end of the quoted or written command (a
    backtick, semicolon, parenthesis or line end)."""
    for m in _MENTION.finditer(text):
        rest = re.split(r"[`;()\n]", text[m.end() :], maxsplit=1)[0]
        yield rest.split()


def problems_of(tokens: list[str], root: Any) -> list[str]:
    """What is wrong with one mention (its tokens after ``automonitor``): an unknown command or subcommand,
    or an option that its command does not take. Words after a leaf command are its arguments or prose."""
    cmd, path, found = root, [], []
    words = iter(tokens)
    for tok in words:
        word = tok.strip(".,:'\"")
        if hasattr(cmd, "commands") and (cmd is root or not word.startswith("-")):
            if not _WORD.fullmatch(word) or word not in cmd.commands:
                if cmd is root or _WORD.fullmatch(word):
                    found.append(f"no command `automonitor {' '.join([*path, word])}`")
                break
            cmd = cmd.commands[word]
            path.append(word)
            continue
        if _OPTION.fullmatch(word.split("=")[0].split("/")[0]):
            opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
            if word.split("=")[0].split("/")[0] not in opts:
                found.append(f"`automonitor {' '.join(path)}` has no option {word}")
    return found


def test_every_command_named_in_the_package_exists():
    root = command()
    bad: list[str] = []
    for path in sorted((REPO / "automonitor").rglob("*.py")):
        for line, text in _strings(path):
            for tokens in _mentions(text):
                bad += [f"{path.relative_to(REPO)}:{line}: {p}" for p in problems_of(tokens, root)]
    assert not bad, "\n".join(dict.fromkeys(bad))


def test_the_rule_catches_a_made_up_command_and_option():
    root = command()
    assert problems_of(["cancel", "RUN"], root) == ["no command `automonitor cancel`"]
    assert problems_of(["predictions", "imprt"], root) == ["no command `automonitor predictions imprt`"]
    assert problems_of(["runs", "--cancl", "RUN"], root) == ["`automonitor runs` has no option --cancl"]
    assert problems_of(["runs", "--cancel", "RUN"], root) == []
    assert problems_of(["predictions", "import", "FILE", "--monitor", "NAME"], root) == []


def test_runs_cancel_cancels_a_run_that_is_not_finished(sqlite_engine, sqlite_url):
    """The command the build's refusal names: a created (pending) run is cancelled, a finished one is left
    as is, an unknown id exits 2 and changes nothing."""
    add_pairs(sqlite_engine, 3)
    pending = runner.create_run(sqlite_engine, "rules", "direct")
    done = runner.create_run(sqlite_engine, "rules", "direct")
    runner.execute_run(sqlite_engine, done)
    bad = run_cli(["runs", "--cancel", pending, "--cancel", "no-such-run"], db=sqlite_url)
    assert bad.returncode == 2 and "no-such-run" in bad.stderr and "--cancel" in bad.stderr
    assert runner.run_info(sqlite_engine, pending)["status"] != "cancelled"
    out = run_cli(["runs", "--cancel", pending, "--cancel", done], db=sqlite_url)
    assert out.returncode == 0, out.stderr
    assert f"{pending}: cancelled" in out.stderr and f"{done}: finished, left as is" in out.stderr
    assert runner.run_info(sqlite_engine, pending)["status"] == "cancelled"
    assert runner.run_info(sqlite_engine, done)["status"] == "finished"
