"""Escaping for every place the app shows data: HTML (``st.html``), plotly's pseudo-HTML and Streamlit
markdown, and the escaped, whitespace-preserving text block the pages show samples in.

Security rule: every piece of model- or user-written text that ends up in HTML goes through :func:`esc`
(``html.escape`` with quotes); text for plotly goes through :func:`plot_text`, text for markdown through
:func:`md_escape`. All of them show invisible bidirectional and zero-width characters as visible markers
(:func:`reveal_invisible`).
"""

from __future__ import annotations

import html
import re

#: The style of a text block (inline so the HTML is self-contained).
TEXT_STYLE = (
    "white-space:pre-wrap;word-break:break-word;overflow-wrap:anywhere;"
    "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:0.85rem;"
    "line-height:1.45;padding:0.6rem 0.75rem;border:1px solid rgba(128,128,128,0.35);"
    "border-radius:0.4rem;background:rgba(128,128,128,0.06);"
)

#: Invisible characters that change how text reads without showing themselves: the bidirectional
#: controls behind "Trojan Source" spoofing (CVE-2021-42574; Unicode UAX #9: embeddings, overrides,
#: isolates, the LRM/RLM/ALM marks) and zero-width characters that hide text boundaries (zero-width space,
#: word joiner, BOM, Mongolian vowel separator), and the control characters (C0 but tab, newline and
#: carriage return; DEL; C1). Shown as visible ``⟨U+XXXX⟩`` markers wherever data is shown; ZWJ/ZWNJ stay (they are part of emoji and of Persian and Indic spelling).
INVISIBLE_CHARS = frozenset(
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u200b\u2060\ufeff\u180e"
    # C0 controls other than tab, newline and carriage return, DEL and the C1 controls: ESC starts the
    # terminal sequences a copied text would replay, and none of them shows itself on a page
    + "".join(map(chr, (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0))))
)
_INVISIBLE = re.compile("[" + re.escape("".join(sorted(INVISIBLE_CHARS))) + "]")


def reveal_invisible(text: str) -> str:
    """``text`` with every :data:`INVISIBLE_CHARS` character replaced by a visible marker ``⟨U+202E⟩``, so
    model- or user-written text cannot reorder what a reader sees (``evil\u202eexe.txt`` reads
    ``evil⟨U+202E⟩exe.txt``, not ``eviltxt.exe``) or hide a boundary. Applied by :func:`esc`,
    :func:`plot_text`, :func:`md_escape` and :func:`md_cell`; span offsets are computed on the stored
    text before escaping, so they are not affected."""
    return _INVISIBLE.sub(lambda m: f"\u27e8U+{ord(m.group()):04X}\u27e9", text)


_AUTOLINK_SCHEME = re.compile(r"(?i)(https?|ftp|mailto|xmpp|www)(?=\\[:.])")
_MD_SPECIAL = set("\\`*_{}[]()#+-.!|<>$~:&=\"'")


def esc(text: object) -> str:
    """``html.escape(str(text), quote=True)`` after :func:`reveal_invisible`; ``None`` becomes the empty
    string."""
    return html.escape(reveal_invisible("" if text is None else str(text)), quote=True)


def plot_text(text: object) -> str:
    """``text`` made inert for plotly's pseudo-HTML text (hover labels, legend entries, axis and marker
    text): ``& < > " ' %`` become numeric/named entities, which plotly shows as the literal characters,
    so ``<b>``, ``<a href>``, ``<br>`` or ``%{x}`` in a data value (monitor name, run id, template,
    label) never format, link or substitute. ``None`` becomes the empty string."""
    return reveal_invisible("" if text is None else str(text)).translate(_PLOT_ESCAPES)


#: :func:`plot_text`'s entities, made in one pass.
_PLOT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;", "%": "&#37;"})


def md_escape(text: object) -> str:
    """``text`` made inert for Streamlit markdown (``st.markdown``, ``st.caption``, ``st.error``,
    widget ``help``): every markdown/HTML/LaTeX/directive character (``\\`*_{}[]()#+-.!|<>$~:&=\"'``)
    is backslash-escaped and newlines become spaces, so data values (monitor names, sources, error
    messages) interpolated into markdown show literally. Bare URLs and e-mail addresses are kept from
    being autolinked by an invisible word joiner (U+2060) after the scheme or ``www`` and before ``@``."""
    s = reveal_invisible("" if text is None else str(text))
    out = "".join("\\" + ch if ch in _MD_SPECIAL else (" " if ch in "\r\n" else ch) for ch in s)
    out = _AUTOLINK_SCHEME.sub("\\1\u2060", out)
    return out.replace("@", "\u2060@")


def md_code(text: object) -> str:
    """``text`` as a markdown code span for Streamlit markdown (an id to read and copy as it is): a code span
    interprets no markup, so nothing is backslash-escaped (:func:`md_escape` inside one shows its
    backslashes); the fence is one backtick longer than the longest run of backticks in ``text``, padded with a
    space on each side (which CommonMark strips) when ``text`` starts or ends with a backtick or a space.
    Invisible characters are revealed (:func:`reveal_invisible`) and newlines become spaces; ``None`` and the
    empty string give the empty string."""
    s = "".join(" " if ch in "\r\n" else ch for ch in reveal_invisible("" if text is None else str(text)))
    if not s:
        return ""
    fence = "`" * (max((len(m) for m in re.findall("`+", s)), default=0) + 1)
    pad = " " if s[0] in "` " or s[-1] in "` " else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def text_box_style(max_height: int | None) -> str:
    """The inline style of a text block: :data:`TEXT_STYLE` plus, with ``max_height`` (pixels), a
    vertical scroll bar above that height."""
    return TEXT_STYLE + (f"max-height:{int(max_height)}px;overflow-y:auto;" if max_height else "")


def text_html(text: str | None, *, max_height: int | None = 320, css_class: str = "am-text") -> str:
    """An escaped, whitespace-preserving block of ``text`` (HTML string for ``st.html``).

    ``max_height`` (pixels) adds a vertical scroll bar to long texts; ``None`` shows all of it.
    """
    return f'<div class="{esc(css_class)}" style="{text_box_style(max_height)}">{esc(text)}</div>'


def md_cell(text: object) -> str:
    """``text`` escaped for a cell of a markdown table in a file (GitHub-flavoured markdown): backslashes,
    pipes, backticks, angle brackets, emphasis and link brackets escaped, whitespace runs and newlines
    folded to one space. For Streamlit markdown use :func:`md_escape`."""
    return " ".join(reveal_invisible(str(text)).translate(_MD_CELL).split())


#: :func:`md_cell`'s escapes, made in one pass: a backslash before ``\ | ` * _ [ ]``, entities for ``< >``.
_MD_CELL = str.maketrans({**{ch: "\\" + ch for ch in "\\|`*_[]"}, "<": "&lt;", ">": "&gt;"})


#: Characters that break or move lines, rewrite a terminal or vanish: C0 controls other than tab and
#: newline, DEL, the C1 controls (U+0080..U+009F, with NEL U+0085) and the Unicode line and paragraph
#: separators U+2028/U+2029. :func:`reveal_controls` marks them like :data:`INVISIBLE_CHARS`.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def reveal_controls(text: object) -> str:
    """``text`` with every invisible character (:func:`reveal_invisible`) and every control or line
    separator character other than tab and newline (C0, DEL, C1 with U+0085 NEL, U+2028, U+2029) shown
    as a visible ``⟨U+XXXX⟩`` marker; ``None`` becomes the empty string. For short, one-record texts
    (an erratum's reason, a name) whose every character must be seen as it is, never split or hidden."""
    s = reveal_invisible("" if text is None else str(text))
    return _CONTROLS.sub(lambda m: f"\u27e8U+{ord(m.group()):04X}\u27e9", s)


def terminal_text(text: object) -> str:
    """``text`` safe to print on a terminal: :func:`reveal_controls` with the newline marked too, so an
    escape sequence (ESC, CSI U+009B), a carriage return or a line separator in a data value can neither
    drive the terminal nor fake another output line."""
    return reveal_controls(text).replace("\n", "\u27e8U+000A\u27e9").replace("\t", "\u27e8U+0009\u27e9")
