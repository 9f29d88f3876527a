"""Model-written markdown rendered safely (Label and Adjudicate pages).

A response often is markdown (lists, code fences, emphasis, tables). It is rendered with markdown-it-py
in CommonMark mode plus GFM tables and strikethrough, with three safety rules:

- ``html=False``: raw HTML in the text (``<script>``, ``<img onerror>``, ``<a href>``) is not passed
  through but shown as escaped text (markdown-it escapes every text piece);
- links, images and autolinks are disabled: ``[text](url)``, ``![alt](src)`` and ``<http://...>`` stay
  literal text, so nothing is followed or fetched (no tracking pixel, no click-through) and a link's
  text cannot disguise its target; ``linkify`` (bare URLs) is off too;
- the output is wrapped in one ``<div class="am-md">`` for ``st.html`` (no further markdown processing).
"""

from __future__ import annotations

import re

from functools import lru_cache
from typing import TYPE_CHECKING

from automonitor.escaping import esc, reveal_invisible

if TYPE_CHECKING:  # markdown-it is imported where the first text is rendered
    from markdown_it import MarkdownIt

#: Inline style of the rendered block (same frame as the text blocks, proportional font).
MD_STYLE = (
    "word-break:break-word;overflow-wrap:anywhere;font-size:0.9rem;line-height:1.5;"
    "padding:0.4rem 0.75rem;border:1px solid rgba(128,128,128,0.35);border-radius:0.4rem;"
)


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable(["link", "image", "autolink"])
    return md


def markdown_html(text: str | None, *, max_height: int | None = 420, css_class: str = "am-md") -> str:
    """``text`` rendered from markdown to HTML that runs nothing and links nowhere.

    Raw HTML is escaped (markdown-it ``html=False``), links, images and autolinks stay literal text
    (rules disabled), fenced code becomes ``<pre><code>`` with its content escaped. ``max_height``
    (pixels) adds a vertical scroll bar. Invisible bidirectional and zero-width characters are shown as
    ``⟨U+XXXX⟩`` markers (:func:`automonitor.escaping.reveal_invisible`, as every other view shows
    them). Returns an HTML string for ``st.html``; ``None`` gives an empty block."""
    body = _renderer().render(reveal_invisible(text or ""))
    style = MD_STYLE + (f"max-height:{int(max_height)}px;overflow-y:auto;" if max_height else "")
    return f'<div class="{esc(css_class)}" style="{style}">{body}</div>'


__all__ = ["MD_STYLE", "looks_like_code", "markdown_html", "opens_raw"]


_CODE_LINE = re.compile(
    r"^(?:\s{2,}|\t)\S"  # indented
    r"|^\s*(?:def |class |import |from \S+ import |#include|@\w|public |private |static |function |const |let |var |"
    r"return\b|if\s*\(|for\s*\(|while\s*\(|elif |else:|try:|except\b|SELECT |INSERT |CREATE )"
    r"|[;{}:]\s*$|^\s*[})\]]"
    r"|^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])?\s*[-+*/]?=\s*[^=\s]"  # an assignment
    r"|^\s*[A-Za-z_][\w.]*\(.*\)\s*$"  # a bare call
)


def looks_like_code(text: str | None) -> bool:
    """True when ``text`` is bare source code (no markdown fence) that markdown rendering would mangle:
    at least 3 non-blank lines of which at least 40% are indented, open or close a block, end with
    ``; { } :`` or start with a statement keyword (``def``, ``import``, ``return``, ...). A text with a
    fenced block (```` ``` ````) is markdown and renders well, so it is False. Shapes: one string in,
    bool out; a heuristic for the default tab only (both views stay one click away)."""
    if not text or "```" in text:
        return False
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 3:
        return False
    codeish = sum(1 for ln in lines if _CODE_LINE.search(ln))
    return codeish / len(lines) >= 0.4


#: the task whose responses are code (a function, a patch, a script; prose beside it): shown verbatim by default
CODE_TASK = "code"


def opens_raw(text: str | None, task: str | None = None) -> bool:
    """True when a response view opens on its verbatim (Raw) view rather than the rendered markdown: every
    response of the ``code`` task (markdown would turn its code into something else: ``{{7*7}}`` renders as
    ``{{77}}`` with an italic 7, ``__init__`` as a bold ``init``, a ``#`` comment line as a heading, ``\\n``
    as ``n``, and a fenced block leaves the prose around it exposed), and bare source code in any task
    (:func:`looks_like_code`). ``task`` is a task key (``qa``/``code``/``reasoning``) or ``None`` when unknown.
    Shapes: a string (or ``None``) and a task in, bool out; both views stay one click away."""
    return task == CODE_TASK or looks_like_code(text)
