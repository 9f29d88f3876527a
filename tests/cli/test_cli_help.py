"""The help texts a newcomer reads first: ``run --help`` lists every prompt template and every monitor
backend from the registries (it listed 4 of 6 templates and no probe/lora), and no on/off flag is shown
with a type to pass (``automonitor --help`` showed ``--help <bool>``)."""

from __future__ import annotations

import re

from helpers import run_cli

from automonitor.runs.monitors import REGISTRY
from automonitor.vocab import MONITOR_BACKENDS, TEMPLATES


def _help(args, tmp_path):
    r = run_cli([*args, "--help"], db=f"sqlite:///{tmp_path / 'none.db'}", env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    return re.sub(r"\s+", " ", r.stdout)


def test_the_backend_list_is_the_registry():
    """vocab lists the package's own backends, in menu order (a test's toy backend may be registered too)."""
    assert tuple(n for n, c in REGISTRY.items() if c.__module__.startswith("automonitor.")) == MONITOR_BACKENDS


def test_run_help_lists_every_template_and_backend(tmp_path):
    text = _help(["run"], tmp_path)
    for name in (*TEMPLATES, *MONITOR_BACKENDS):
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), name


def test_no_flag_is_shown_with_a_bool_type(tmp_path):
    for args in ([], ["run"], ["report"], ["assign"]):
        text = _help(args, tmp_path)
        assert "--help" in text and "<bool>" not in text, args


def test_the_template_list_is_the_prompt_folder():
    """vocab lists every template file of the package (the registry of templates `load_template` reads), so
    `run --help`, which lists vocab's, names each template that exists."""
    from importlib import resources

    folder = resources.files("automonitor.runs") / "prompts"
    assert {p.name.removesuffix(".txt") for p in folder.iterdir() if p.name.endswith(".txt")} == set(TEMPLATES)


def _command_rows(help_text: str) -> list[str]:
    """The rows of the Commands panel of a group's rich ``--help``, their borders stripped."""
    lines = help_text.splitlines()
    start = next(i for i, ln in enumerate(lines) if "Commands" in ln and ln.startswith("╭"))
    rows = []
    for ln in lines[start + 1 :]:
        if ln.startswith("╰"):
            break
        rows.append(ln.strip("│").rstrip())
    return rows


def test_group_help_lists_each_command_in_one_sentence_not_cut_at_the_docstrings_line_breaks(tmp_path):
    """Fresh-user trial 53: ``automonitor --help`` broke a command's description mid-sentence (typer's rich
    help keeps a docstring's own line breaks: `stats` ended a row at "candidates cover" even at 200 columns).
    Each command is listed by the first sentence of its help on one line, which a wide terminal shows on one
    row; the command's own ``--help`` keeps the whole text."""
    for group in ([], ["users"], ["errata"], ["probe"]):
        r = run_cli([*group, "--help"], db=f"sqlite:///{tmp_path / 'none.db'}", env={"COLUMNS": "400"})
        assert r.returncode == 0, r.stderr
        rows = _command_rows(r.stdout)
        assert rows and all(not row.startswith("  ") for row in rows), (group, rows)  # no continuation row
        assert all(row.endswith((".", ")")) for row in rows), (group, rows)  # whole sentences
    stats = _help(["stats"], tmp_path)  # its own help: the whole docstring, as before
    assert (
        "Counts of gold samples in a split by category, task and label (by_split and candidates cover the whole store)."
        in stats
    )


def test_a_commands_own_help_is_wrapped_by_the_terminal_not_at_the_docstrings_line_breaks(tmp_path):
    """Fresh-user trial 54: ``build --help`` printed "A different seed replaces" and "the build-derived samples" on
    two lines at any width (the docstring's own break). Each paragraph is one line of help text, which rich wraps
    to the terminal: at 400 columns every paragraph of every command's help is one printed line."""
    from automonitor.cli import command

    r = run_cli(["build", "--help"], db=f"sqlite:///{tmp_path / 'none.db'}", env={"COLUMNS": "400"})
    assert r.returncode == 0, r.stderr
    assert "A different seed replaces the build-derived samples (refused, exit 2" in r.stdout
    stack = [command()]
    while stack:
        c = stack.pop()
        stack += list(getattr(c, "commands", {}).values())
        if c.help:
            assert all("\n" not in p for p in c.help.split("\n\n")), c.name
