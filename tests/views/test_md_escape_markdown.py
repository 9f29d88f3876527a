"""``automonitor.escaping.md_escape`` as a property: whatever the text (markdown emphasis, links, HTML,
LaTeX ``$...$``, ``:color[...]`` directives, headings, lists, tables, entities, bare URLs), the escaped text
renders under CommonMark (markdown-it, with tables and strikethrough) as one paragraph with no tag whose
text is the input (newlines as spaces, invisible characters as markers). ``$`` and ``:`` carry no meaning
in CommonMark; the property proves they come out backslash-escaped, which Streamlit's LaTeX and directive
parsing honours (tests/app/test_label_pills_markup.py)."""

from __future__ import annotations

import html

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from automonitor.escaping import md_escape, reveal_invisible

MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
MARKUP = st.sampled_from(
    ["$x$", ":red[x]", "**x**", "<b>x</b>", "[a](javascript:x)", "`c`", "&amp;", "&#x41;", "# h", "- l", "1. n",
     "> q", "~~s~~", "|a|b|", "\\", "_e_", "www.x.org", "http://x.y", "a@b.c", "<http://x>", " ", "\n", "x"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(MARKUP, st.text(max_size=5)), max_size=8))
def test_escaped_text_renders_as_its_own_characters(parts):
    text = "".join(parts).strip()
    out = md_escape(text)
    for special in ("$", ":", "*", "[", "<", "`"):  # none survives unescaped
        assert out.replace("\\\\", "").replace("\\" + special, "").count(special) == 0, (text, out)
    rendered = MD.render(out).replace("\u2060", "")  # the word joiner that stops autolinks
    plain = reveal_invisible(text).replace("\r", " ").replace("\n", " ").strip()
    if not plain:
        assert rendered == ""
        return
    assert rendered.startswith("<p>") and rendered.endswith("</p>\n") and rendered.count("<") == 2, (text, rendered)
    assert html.unescape(rendered[3:-5]) == plain, (text, rendered)
