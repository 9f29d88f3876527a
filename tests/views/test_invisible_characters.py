"""Invisible bidirectional and zero-width characters in model- or user-written text are shown as visible
markers wherever data is shown (HTML blocks, plotly text, Streamlit markdown, markdown table cells), so a
right-to-left override cannot make ``evil\u202eexe.txt`` read as ``eviltxt.exe`` on a page or in a hover
(found by a fresh-user trial: the override took effect on the drill-down, the label page and the HTML
report). Joiners that spelling and emoji need stay."""

from __future__ import annotations

import pytest

from automonitor.escaping import (
    INVISIBLE_CHARS,
    esc,
    md_cell,
    md_code,
    md_escape,
    plot_text,
    reveal_invisible,
    text_html,
)

SPOOF = "invoice\u202egpj.exe"


@pytest.mark.parametrize("show", [esc, plot_text, md_escape, md_cell, md_code, text_html])
def test_every_display_escaper_reveals_a_bidi_override(show):
    out = show(SPOOF)
    assert "\u202e" not in out
    assert "U+202E" in out.replace("\\", "")


def test_every_invisible_character_gets_a_marker_and_nothing_else_changes():
    for ch in sorted(INVISIBLE_CHARS):
        out = reveal_invisible(f"a{ch}b")
        assert out == f"a\u27e8U+{ord(ch):04X}\u27e9b"
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # emoji sequence joined by ZWJ
    persian = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"  # ZWNJ is part of the spelling
    assert reveal_invisible(family) == family and reveal_invisible(persian) == persian
    assert reveal_invisible("plain text, 100% <b>") == "plain text, 100% <b>"


def test_span_highlighting_keeps_offsets_on_the_stored_text():
    from automonitor.views.spans import gold_evidence_html

    text = "ok line\nbad\u202e line\n"
    start = text.index("bad")
    html = gold_evidence_html(text, [{"start": start, "end": start + len("bad\u202e line"), "provenance": "annotated"}])
    assert "\u202e" not in html and "U+202E" in html and "ok line" in html
    assert "am-gold" in html and "bad" in html.split("am-gold", 1)[1]


def test_control_characters_are_marked_by_every_display_escaper():
    """An ESC sequence in a response (``\\x1b[31m``), a NUL, a bell or a C1 control shows as a marker on
    the pages, the hovers and the markdown, never as an invisible character (fresh-user trial: the Samples
    page showed ESC invisibly while it marked bidi controls); tab, newline and carriage return stay."""
    text = "a\x1b[31mred\x00\x07\x9bz\tx\ny\rw"
    for fn in (esc, plot_text, md_escape, md_cell):
        out = fn(text)
        for ch in "\x1b\x00\x07\x9b":
            assert ch not in out, (fn.__name__, ch)
            assert f"{ord(ch):04X}\u27e9" in out, (fn.__name__, ch)  # markdown escapes the marker's '+'
    assert esc("a\tb\nc\rd") == "a\tb\nc\rd"
