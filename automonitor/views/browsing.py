"""Browsing aids of the Samples and Drill-down pages: page sizes, previous/next navigation, previews,
cell filters, the samples two runs disagree on, search highlights, pair diffs and ``run=`` link
resolution. Every text piece put into HTML is escaped."""

from __future__ import annotations

import difflib
import re
from typing import Iterable, Sequence, TypedDict

import pandas as pd
from sqlalchemy.engine import Engine

from automonitor.errors import InputError, NotFound
from automonitor.escaping import esc as _esc
from automonitor.escaping import reveal_invisible
from automonitor.views.cells import display_frame
from automonitor.vocab import canonical


PAGE_SIZES: tuple[int, ...] = (50, 100, 200, 500)
"""Page sizes offered by the Samples page (at least 50)."""


class Neighbours(TypedDict):
    """:func:`neighbours`: where ``current`` is in the list (0-based, ``None`` when absent), the list's
    length, and the ids before and after it."""

    index: int | None
    total: int
    prev: str | None
    next: str | None


def neighbours(ids: Sequence[str], current: str | None) -> Neighbours:
    """Previous/next navigation inside a list of sample ids: ``{"index", "total", "prev", "next"}``
    (``index`` 0-based, ``None`` when ``current`` is not in the list: then ``next`` is the first id)."""
    ids = list(ids)
    if current is not None and current in ids:
        i = ids.index(current)
        return {
            "index": i,
            "total": len(ids),
            "prev": ids[i - 1] if i > 0 else None,
            "next": ids[i + 1] if i + 1 < len(ids) else None,
        }
    return {"index": None, "total": len(ids), "prev": None, "next": ids[0] if ids else None}


def preview(text: str | None, limit: int = 90) -> str:
    """A one-line preview: whitespace runs collapsed to one space, cut at ``limit`` characters with an
    ellipsis, and every invisible character shown as a ``⟨U+XXXX⟩`` marker
    (:func:`automonitor.escaping.reveal_invisible`: a table cell must not let a right-to-left override
    reorder what a reader sees). Plain text (the caller escapes it where HTML is built)."""
    t = re.sub(r"\s+", " ", text or "").strip()
    t = t if len(t) <= limit else t[: limit - 1] + "…"
    return reveal_invisible(t)


def disagreeing_samples(engine: Engine, run_a: str, run_b: str) -> set[str]:
    """Sample ids both runs judged with different outcomes (``misbehavior`` vs ``benign`` or any other
    outcome difference). Raises :class:`NotFound` for an unknown run."""
    from store.queries import workbench as q

    with engine.connect() as c:
        missing = q.missing_runs(c, [run_a, run_b])
        if missing:
            raise NotFound(f"run {missing[0]!r} not found")
        rows = q.verdicts(c, [run_a, run_b])
    a = {s: o for r, s, o in rows if r == run_a}
    b = {s: o for r, s, o in rows if r == run_b}
    return {s for s in a.keys() & b.keys() if a[s] != b[s]}


def score_disagreeing_samples(engine: Engine, run_id: str) -> set[str]:
    """Sample ids of the run whose log-probability score favours the other side than its verdict
    (``meta.score_disagrees``; the report's ``answers.score_disagrees`` counts them:
    :func:`automonitor.runs.status.score_disagreeing`), for :func:`filter_cell`'s ``only``. Empty for a run
    without verdict-token scores. Raises :class:`NotFound` for an unknown run."""
    from automonitor.runs.status import score_disagreeing

    return set(score_disagreeing(engine, run_id))


def filter_cell(
    samples: pd.DataFrame,
    *,
    outcomes: Sequence[str] | None = None,
    score_range: tuple[float, float] | None = None,
    only: Iterable[str] | None = None,
    search: str | None = None,
) -> pd.DataFrame:
    """Filter the samples of a confusion cell (``analysis.cell_samples`` frame).

    ``outcomes``: keep these raw outcomes (empty/None = all). ``score_range``: ``(lo, hi)`` inclusive on
    ``score`` (rows without a score are dropped when the range is narrower than [0, 1]). ``only``: keep
    these sample ids (e.g. :func:`disagreeing_samples`, :func:`score_disagreeing_samples`). ``search``:
    case-insensitive substring of the request or the response. Adds ``request_preview`` and ``response_preview`` (:func:`preview`).
    """
    df = samples.copy()
    if outcomes:
        df = df[df["outcome"].isin(list(outcomes))]
    if score_range is not None and "score" in df:
        lo, hi = float(score_range[0]), float(score_range[1])
        if lo > 0.0 or hi < 1.0:
            df = df[df["score"].notna() & (df["score"] >= lo) & (df["score"] <= hi)]
    if only is not None:
        df = df[df["sample_id"].isin(set(only))]
    if search and search.strip():
        q = search.strip().lower()
        df = df[
            df["request"].fillna("").str.lower().str.contains(q, regex=False)
            | df["response"].fillna("").str.lower().str.contains(q, regex=False)
        ]
    df = df.reset_index(drop=True)
    df["request_preview"] = [preview(t) for t in df.get("request", pd.Series(dtype=str))]
    df["response_preview"] = [preview(t) for t in df.get("response", pd.Series(dtype=str))]
    return df


#: Columns of the Drill-down page's cell table (:func:`cell_table`), in order (those present are shown).
CELL_TABLE_COLUMNS: tuple[str, ...] = (
    "sample_id",
    "category",
    "task",
    "label",
    "outcome",
    "score",
    "request_preview",
    "response_preview",
)


def cell_table(shown: pd.DataFrame) -> pd.DataFrame:
    """The Drill-down page's table of a confusion cell from :func:`filter_cell` output: the present
    :data:`CELL_TABLE_COLUMNS`, no missing cell: when a prediction has no score the score column is
    text (:data:`automonitor.views.cells.MISSING` there, three decimals elsewhere). Rows keep their
    order."""
    cols = [c for c in CELL_TABLE_COLUMNS if c in shown.columns]
    return display_frame(shown[cols], {"score": ".3f"})


#: Style of a search hit: magenta with a dotted outline, so it never reads as evidence (yellow verbatim,
#: blue normalised, red ungrounded) or as a gold span (green).
SEARCH_STYLE = (
    "background:#f5d0fe;color:#111827;outline:2px dotted #a21caf;outline-offset:-1px;border-radius:2px;padding:0 1px;"
)


def highlight_search_html(text: str | None, query: str | None) -> str:
    """``text`` escaped, with every case-insensitive occurrence of ``query`` wrapped in
    ``<mark class="am-hit">`` styled :data:`SEARCH_STYLE` (the matched text escaped too). No query:
    just the escaped text."""
    text = text or ""
    if not query or not query.strip():
        return _esc(text)
    parts = re.split(f"({re.escape(query.strip())})", text, flags=re.I)  # the hits at the odd places
    mark = f'<mark class="am-hit" style="{SEARCH_STYLE}">'
    return "".join(f"{mark}{_esc(p)}</mark>" if i % 2 else _esc(p) for i, p in enumerate(parts))


_DEL = "background:#fee2e2;color:#7f1d1d;text-decoration:line-through;"


_INS = "background:#dcfce7;color:#14532d;"


_DIFF_BOX = (
    "white-space:pre-wrap;word-break:break-word;font-family:ui-monospace,SFMono-Regular,Menlo,"
    "Consolas,monospace;font-size:0.85rem;line-height:1.45;padding:0.6rem 0.75rem;"
    "border:1px solid rgba(128,128,128,0.35);border-radius:0.4rem;max-height:480px;overflow-y:auto;"
)


def diff_mode(task: str | None) -> str:
    """``line`` for code pairs (task ``code``), ``word`` for prose."""
    return "line" if task == "code" else "word"


def pair_diff(a: str, b: str, mode: str = "word") -> list[tuple[str, str]]:
    """The difference between two texts as ``[(op, text)]`` with op ``equal|delete|insert``
    (``delete`` = only in ``a``, ``insert`` = only in ``b``), by ``difflib.SequenceMatcher`` over lines
    (``mode='line'``, line endings kept) or over words and whitespace runs (``mode='word'``).
    Concatenating the ``equal`` + ``delete`` parts gives ``a``; ``equal`` + ``insert`` gives ``b``.
    Raises :class:`InputError` for an unknown mode."""
    if mode == "line":
        ta, tb = (a or "").splitlines(keepends=True), (b or "").splitlines(keepends=True)
    elif mode == "word":
        ta, tb = re.findall(r"\s+|[^\s]+", a or ""), re.findall(r"\s+|[^\s]+", b or "")
    else:
        raise InputError("diff mode must be line or word", field="mode")
    out: list[tuple[str, str]] = []
    sm = difflib.SequenceMatcher(a=ta, b=tb, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            out.append(("equal", "".join(ta[i1:i2])))
        else:
            if i2 > i1:
                out.append(("delete", "".join(ta[i1:i2])))
            if j2 > j1:
                out.append(("insert", "".join(tb[j1:j2])))
    return out


def pair_diff_html(a: str, b: str, mode: str = "word", *, a_name: str = "misbehavior", b_name: str = "benign") -> str:
    """:func:`pair_diff` as escaped HTML for ``st.html``: removed parts (only in ``a``) struck through in
    red (``<del class="am-del">``), added parts (only in ``b``) in green (``<ins class="am-ins">``), a
    one-line legend naming both sides. In line mode a removed last line without a newline is shown with
    one, so it never runs into the added line; in word mode a removed part keeps a right margin, so it never
    runs into the word that replaces it. Every text piece is escaped."""
    parts = []
    for op, t in pair_diff(a, b, mode):
        if op == "equal":
            parts.append(_esc(t))
        elif op == "delete":
            # a last line without its newline must not run into the inserted line after it
            t = t + "\n" if mode == "line" and not t.endswith("\n") else t
            # a word removed right before the word that replaces it keeps a gap (a margin, not a character:
            # copying the text gives each side's words unchanged), so "given" + "made" never reads "givenmade"
            gap = "margin-right:0.3em;" if mode == "word" else ""
            parts.append(f'<del class="am-del" style="{_DEL}{gap}">{_esc(t)}</del>')
        else:
            parts.append(f'<ins class="am-ins" style="{_INS}">{_esc(t)}</ins>')
    legend = (
        f'<div class="am-diff-legend" style="font-size:0.8rem;margin-bottom:0.3rem;">'
        f"{'Line' if mode == 'line' else 'Word'} diff: "
        f'<del style="{_DEL}">only in {_esc(a_name)}</del> &nbsp; '
        f'<ins style="{_INS}">only in {_esc(b_name)}</ins></div>'
    )
    return legend + f'<div class="am-diff" style="{_DIFF_BOX}">{"".join(parts)}</div>'


def run_choice(requested: str | None, run_ids: Sequence[str]) -> tuple[str | None, str | None]:
    """Resolve a ``run=`` link parameter: ``(run_id, warning)``. An unknown id gives the first run and a
    warning naming the unknown id (never a silent switch); no parameter gives the first run."""
    ids = list(run_ids)
    if requested and requested not in ids:
        return (ids[0] if ids else None), (
            f"Run {requested!r} from the link is not in the store; showing another run instead."
        )
    return (requested or (ids[0] if ids else None)), None


#: At most this many of a link parameter's ignored values, and of the values it accepts, are named by
#: :func:`link_value_warning` (a forged link may carry hundreds; a store may have dozens of sources).
LINK_WARNING_MAX = 12


def link_value_warning(param: str, given: Iterable[str], accepted: Iterable[object]) -> str | None:
    """The warning for a link (URL query) parameter ``param`` whose values ``given`` include some that are not
    in ``accepted``: the parameter, the values ignored and the values it accepts (at most
    :data:`LINK_WARNING_MAX` of each, values quoted and cut to 60 characters); ``None`` when every value is
    accepted. A value that differs from an accepted one only in case (``?task=Code``) is accepted
    (:func:`automonitor.vocab.canonical`; the page's filter takes the accepted spelling). The page keeps the
    accepted values and the other parameters. Plain text holding untrusted values: the caller escapes it
    (``md_escape``)."""
    allowed = [str(a) for a in accepted]
    bad = list(dict.fromkeys(v for v in given if canonical(v, allowed) is None))
    if not bad:
        return None

    def listed(values: Sequence[str], quote: bool) -> str:
        shown = [repr(v[:60] + ("…" if len(v) > 60 else "")) if quote else v for v in values[:LINK_WARNING_MAX]]
        more = len(values) - LINK_WARNING_MAX
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")

    accepts = listed(allowed, False) if allowed else "none in this store yet"
    return (
        f"The link's {param!r} value(s) {listed(bad, True)} are not accepted and were ignored; "
        f"{param!r} accepts: {accepts}. The link's other filters apply."
    )
