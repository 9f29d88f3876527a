"""Names are data in the text CLI too: rich markup in a monitor name, a source or an account name is
printed literally and never breaks a later command (found by a fresh-user run: `[/bold]` in a monitor
name made `runs` and `report` exit 1 for every user)."""

from __future__ import annotations

import json

from helpers import run_cli

HOSTILE = "[/bold]x [l](http://e.com) [red]r :fire:"


def _pair_file(tmp_path):
    rows = [
        {
            "pair_id": "m1",
            "category": "safety_permission",
            "task": "qa",
            "request": "How [bold]do I?",
            "response": "Sure [/red] here.",
            "label": "misbehavior",
            "source": "[/red]src:train:",
        },
        {
            "pair_id": "m1",
            "category": "safety_permission",
            "task": "qa",
            "request": "How [bold]do I?",
            "response": "No.",
            "label": "benign",
            "source": "[/red]src:train:",
        },
    ]
    p = tmp_path / "pairs.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_rich_markup_in_names_prints_literally_and_breaks_nothing(sqlite_url, tmp_path):
    assert run_cli(["import", str(_pair_file(tmp_path))], db=sqlite_url).returncode == 0
    st = run_cli(["stats"], db=sqlite_url)
    # emoji codes are data too (a fresh-user run: the erratum pair id safecoder:train:112 printed as safecoder🚋112)
    assert st.returncode == 0 and "[/red]src:train:" in st.stdout, st.stderr
    exp = tmp_path / "x.jsonl"
    assert run_cli(["export", str(exp)], db=sqlite_url).returncode == 0
    preds = tmp_path / "p.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"sample_id": json.loads(line)["sample_id"], "outcome": "misbehavior"}) + "\n"
            for line in exp.read_text().splitlines()
        )
    )
    imp = run_cli(["predictions", "import", str(preds), "--monitor", HOSTILE], db=sqlite_url)
    assert imp.returncode == 0, imp.stderr
    assert "[/bold]x" in imp.stderr.replace("\n", "")
    runs = run_cli(["runs"], db=sqlite_url)
    assert runs.returncode == 0 and ":fire:" in runs.stdout.replace("\n", ""), runs.stderr
    rep = run_cli(["report", "--no-audit"], db=sqlite_url)
    assert rep.returncode == 0 and "[l](http://e.com)" in rep.stdout.replace("\n", ""), rep.stderr
    acc = run_cli(
        ["users", "add", "[/x]bob", "--role", "annotator", "--password-stdin"], db=sqlite_url, input="a-long-password\n"
    )
    assert acc.returncode == 0 and "[/x]bob" in acc.stderr, acc.stderr


def test_error_message_never_sends_a_files_control_characters_to_the_terminal(sqlite_url, tmp_path):
    """An import error quotes the bad value; an escape sequence in it (colour, OSC window title, BEL, a
    carriage return faking a line) is printed as visible ``⟨U+XXXX⟩`` markers, never raw (found by a
    fresh-user run: ``automonitor import`` echoed ESC ] 0 ; ... BEL from a category)."""
    bad = "safety_permission\x1b[31mRED\x1b]0;PWNED\x07\rfake\x9b2J"
    row = {"pair_id": "p1", "category": bad, "task": "qa", "request": "r", "response": "x", "label": "benign"}
    p = tmp_path / "esc.jsonl"
    p.write_text(json.dumps(row) + "\n")
    r = run_cli(["import", str(p)], db=sqlite_url)
    assert r.returncode == 2, r.stderr
    assert "field 'category'" in r.stderr
    assert not any(c in r.stderr for c in "\x1b\x07\r\x9b"), repr(r.stderr)
    assert "⟨U+001B⟩[31mRED⟨U+001B⟩]0;PWNED⟨U+0007⟩⟨U+000D⟩fake⟨U+009B⟩2J" in r.stderr
