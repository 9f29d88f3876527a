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
import unicodedata

#: The style of a text block (inline so the HTML is self-contained).
TEXT_STYLE = (
    "white-space:pre-wrap;word-break:break-word;overflow-wrap:anywhere;"
    "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:0.85rem;"
    "line-height:1.45;padding:0.6rem 0.75rem;border:1px solid rgba(128,128,128,0.35);"
    "border-radius:0.4rem;background:rgba(128,128,128,0.06);"
)

#: The Unicode categories shown as visible ``⟨U+XXXX⟩`` markers wherever data is shown: every format
#: character (Cf: the bidirectional controls behind "Trojan Source" spoofing, CVE-2021-42574 and UAX #9;
#: zero-width space, joiner and non-joiner, word joiner, BOM, soft hyphen, the tag characters that can carry
#: hidden text, ...) and every control character (Cc: C0, DEL, C1; ESC starts the terminal sequences a copied
#: text would replay) but :data:`KEPT_CONTROLS`. A rule by category, not a list: a format character the list
#: forgot (ZWJ U+200D was shown invisibly) cannot slip through. The joiners are marked too, so an emoji
#: sequence or a Persian word shows its joins (``👨⟨U+200D⟩👩``): on a page of untrusted text a boundary
#: must be seen.
INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc"})
#: Control characters that stay as they are: tab, newline and carriage return (a line break on a page).
KEPT_CONTROLS = frozenset("\t\n\r")
_BLANKS = str.maketrans(dict.fromkeys(KEPT_CONTROLS, " "))
_NOT_ASCII_TEXT = re.compile("[^\x20-\x7e\t\n\r]")


def is_invisible(ch: str) -> bool:
    """Whether the character ``ch`` is shown as a ``⟨U+XXXX⟩`` marker: its Unicode category is one of
    :data:`INVISIBLE_CATEGORIES` (format Cf, control Cc) and it is not one of :data:`KEPT_CONTROLS`."""
    return ch not in KEPT_CONTROLS and unicodedata.category(ch) in INVISIBLE_CATEGORIES


def _marker(ch: str) -> str:
    return f"\u27e8U+{ord(ch):04X}\u27e9"


def reveal_invisible(text: str) -> str:
    """``text`` with every invisible character (:func:`is_invisible`: Unicode category Cf or Cc, but tab,
    newline and carriage return) replaced by a visible marker ``⟨U+202E⟩``, so model- or user-written text
    cannot reorder what a reader sees (``evil\u202eexe.txt`` reads ``evil⟨U+202E⟩exe.txt``, not
    ``eviltxt.exe``) or hide a boundary. Applied by :func:`esc`, :func:`plot_text`, :func:`md_escape`,
    :func:`md_code`, :func:`md_cell` and :func:`reveal_controls`; span offsets are computed on the stored
    text before escaping, so they are not affected."""
    if text.translate(_BLANKS).isprintable():  # no Cc/Cf at all (C speed): the common case
        return text
    return _NOT_ASCII_TEXT.sub(lambda m: _marker(m.group()) if is_invisible(m.group()) else m.group(), text)


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
#: separators U+2028/U+2029. :func:`reveal_controls` marks them like :func:`reveal_invisible`.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def reveal_controls(text: object) -> str:
    """``text`` with every invisible character (:func:`reveal_invisible`) and every control or line
    separator character other than tab and newline (C0, DEL, C1 with U+0085 NEL, U+2028, U+2029) shown
    as a visible ``⟨U+XXXX⟩`` marker; ``None`` becomes the empty string. For short, one-record texts
    (an erratum's reason, a name) whose every character must be seen as it is, never split or hidden."""
    s = reveal_invisible("" if text is None else str(text))
    return _CONTROLS.sub(lambda m: _marker(m.group()), s)


def terminal_text(text: object) -> str:
    """``text`` safe to print on a terminal: :func:`reveal_controls` with the newline marked too, so an
    escape sequence (ESC, CSI U+009B), a carriage return or a line separator in a data value can neither
    drive the terminal nor fake another output line."""
    return reveal_controls(text).replace("\n", "\u27e8U+000A\u27e9").replace("\t", "\u27e8U+0009\u27e9")
