"""Invisible bidirectional and zero-width characters in model- or user-written text are shown as visible
markers wherever data is shown (HTML blocks, plotly text, Streamlit markdown, markdown table cells), so a
right-to-left override cannot make ``evil\u202eexe.txt`` read as ``eviltxt.exe`` on a page or in a hover
(found by a fresh-user trial: the override took effect on the drill-down, the label page and the HTML
report). The rule is by Unicode category (every format character Cf and control character Cc but tab,
newline and carriage return), not a list: the zero-width joiner U+200D, missing from the old list, was shown
invisibly (fresh-user trial); joiners inside emoji and words are now marked too."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automonitor.escaping import (
    esc,
    is_invisible,
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
    """Every format (Cf) and control (Cc) character but tab, newline and carriage return: the rule is by
    Unicode category, so the zero-width joiner U+200D (shown invisibly by the old list, fresh-user trial)
    and non-joiner are marked too, also inside an emoji sequence or a Persian word."""
    marked = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cf", "Cc")]
    assert "\u200d" in marked and "\u200c" in marked and "\u202e" in marked and "\U000e0041" in marked
    for ch in marked:
        out = reveal_invisible(f"a{ch}b")
        assert out == (f"a{ch}b" if ch in "\t\n\r" else f"a\u27e8U+{ord(ch):04X}\u27e9b"), hex(ord(ch))
        assert is_invisible(ch) == (ch not in "\t\n\r")
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # emoji sequence joined by ZWJ
    persian = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"  # ZWNJ inside a word
    assert reveal_invisible(family) == "\U0001f468\u27e8U+200D\u27e9\U0001f469\u27e8U+200D\u27e9\U0001f467"
    assert reveal_invisible(persian) == "\u0645\u06cc\u27e8U+200C\u27e9\u062e\u0648\u0627\u0647\u0645"
    assert reveal_invisible("plain text, 100% <b>") == "plain text, 100% <b>"
    assert (
        reveal_invisible("caf\u00e9 \u00a0na\u00efve \u4e2d\u6587\n\tx")
        == "caf\u00e9 \u00a0na\u00efve \u4e2d\u6587\n\tx"
    )


def _unmarked(out: str) -> list[str]:
    """The Cf/Cc characters (but tab, newline, carriage return) left in an escaper's output."""
    return [ch for ch in out if unicodedata.category(ch) in ("Cf", "Cc") and ch not in "\t\n\r"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=["Cs"]), max_size=40))
def test_no_format_or_control_character_reaches_the_page_unmarked(text):
    """Property over generated strings: whatever the text, every display escaper's output holds no format
    (Cf) or control (Cc) character but tab, newline and carriage return (md_escape's own word joiners,
    which keep a URL from being autolinked, aside)."""
    for show in (reveal_invisible, esc, plot_text, md_cell, md_code, text_html):
        assert _unmarked(show(text)) == [], show.__name__
    assert _unmarked(md_escape(text).replace("\u2060", "")) == []
    # and nothing else changes: the marked text is the input with each invisible character replaced
    assert reveal_invisible(text) == "".join(f"\u27e8U+{ord(c):04X}\u27e9" if is_invisible(c) else c for c in text)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["a", " ", "\n", "\u200d", "\u00ad", "\U000e0041", "\u2066", "\x1b", "\U0001f468"])))
def test_mixed_invisible_characters_are_all_marked(parts):
    assert _unmarked(esc("".join(parts))) == []


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


def test_a_table_preview_reveals_invisible_characters():
    """:func:`automonitor.views.preview` (the Drill-down cell table's request and response columns) marks
    them like every other view (fresh-user trial 44: the override took effect in that table); the cut at
    ``limit`` is made on the stored text, before the markers."""
    from automonitor.views.browsing import preview

    assert preview(f"a {SPOOF}\u200b b") == "a invoice\u27e8U+202E\u27e9gpj.exe\u27e8U+200B\u27e9 b"
    assert preview("x" * 10 + "\u202e" + "y" * 10, limit=12) == "x" * 10 + "\u27e8U+202E\u27e9…"
    assert preview("plain  text\n<b>") == "plain text <b>"


def test_every_table_frame_reveals_invisible_characters_in_its_text_cells(engine):
    """The tables a page shows pass through ``views.display_frame`` (or build cells with ``views.cell``); the
    rule of the Drill-down and Samples tables (c970dfc) is now theirs: every text cell, index label and column
    name shows its invisible characters as markers, with or without a missing value in its column, and numbers
    stay numbers. Fresh-user trial 44: the other tables were not audited; among them the Runs page's history
    (a run's monitor name as stored), an annotator's note on the Adjudicate page, a source name on the Health
    page. Real store: a run whose stored monitor name holds a right-to-left override and a zero-width space."""
    import pandas as pd

    from automonitor import views
    from automonitor.runs import runner
    from servers.data import add_pairs
    from store import session_scope
    from store.models import Run

    spoof = "zero\u200bwidth \u202e RTL override"
    shown = "zero⟨U+200B⟩width ⟨U+202E⟩ RTL override"
    frame = views.display_frame(
        pd.DataFrame({"note": [spoof, "plain"], "n": [1, 2], spoof: ["x", None]}, index=[spoof, "b"])
    )
    assert frame["note"].tolist() == [shown, "plain"] and frame["n"].tolist() == [1, 2]
    assert shown in frame.columns and frame.index.tolist() == [shown, "b"]
    assert views.cell(spoof) == shown and views.cell(None) == "—"

    add_pairs(engine, 1)
    rid = runner.create_run(engine, "openai:gpt-4o-mini", "direct", base_url="http://127.0.0.1:9/v1")
    with session_scope(engine) as s:
        run = s.get(Run, rid)
        run.monitor = "imported:" + spoof  # a display name as the store holds it (no rule of the CLI's)
    history = views.history_table(views.runs_frame(engine))
    cells = [str(v) for v in history.to_numpy().ravel()]
    assert not any(reveal_invisible(c) != c for c in cells), cells
    assert any(shown in c for c in cells), cells
