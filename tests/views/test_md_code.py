"""``automonitor.escaping.md_code``: an id shown in a markdown code span reads and copies as it is (fresh-user
trial: ``md_escape`` inside a code span showed ``imp\\-1d8c...`` on the Trade-off page), whatever backticks,
markup or HTML it holds. Rendered with CommonMark (markdown-it), as Streamlit's markdown parses code spans."""

from __future__ import annotations

import html

import pytest
from markdown_it import MarkdownIt

from automonitor.escaping import md_code

CM = MarkdownIt("commonmark")


@pytest.mark.parametrize(
    "text",
    [
        "imp-1d8c31b6d37d4d7a",
        "run_id_with_underscores",
        "a`b",
        "a``b`c",
        "`leading",
        "trailing`",
        "``",
        "<script>alert(1)</script>",
        "$x$ *em* [l](javascript:1) :red[x]",
        " spaced ",
    ],
)
def test_a_code_span_shows_the_text_as_it_is(text):
    out = CM.renderInline(md_code(text))
    assert out == f"<code>{html.escape(text, quote=False)}</code>", (md_code(text), out)


def test_newlines_fold_and_empty_gives_nothing():
    assert CM.renderInline(md_code("a\nb")) == "<code>a b</code>"
    assert md_code("") == "" and md_code(None) == ""
    assert md_code("imp-1d8c") == "`imp-1d8c`"  # no escape, no padding for a plain id
