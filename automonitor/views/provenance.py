"""Label provenance and errata as visible badges on the drill-down.

Errata are those a build applies (:mod:`automonitor.data.errata`): the shipped file
(:func:`automonitor.data.errata.errata_path`: ``$AUTOMONITOR_ERRATA``, else the package's ``errata.jsonl``;
one row a line, ``{"pair_id", "source", "verdict": "wrong"|"doubtful", "reason", "reader", "date"}``) and
those entered into the store, matched by ``pair_id`` or by the sample's ``meta.upstream_id`` alias, as the
build matches them. A file line that is not such an object is skipped (the errata commands validate the
file; this view only reads it); the file is split on ``\\n`` only, so a reason holding U+2028 or U+0085
is shown whole. All text is escaped with its control and line-separator characters marked
(:func:`automonitor.escaping.reveal_controls`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from sqlalchemy.engine import Engine

from automonitor.data.errata import errata_path
from automonitor.escaping import esc, reveal_controls
from store import session_scope
from store.queries import errata as errata_queries

#: Label provenance -> (badge text, strength): "strong" for human-checked labels, "weak" for labels
#: that rest on a construction or a preference and may be noisy.
PROVENANCE_BADGES: dict[str, tuple[str, str]] = {
    "human_per_response": ("labelled per response by humans", "strong"),
    "adjudicated": ("adjudicated by our annotators", "strong"),
    "by_construction": ("label by construction", "medium"),
    "patch_pair": ("patch pair (buggy vs fixed code)", "medium"),
    "preference_pair": ("preference pair: the worse side is not always misbehavior", "weak"),
    "instructed_demo": ("instructed demonstration", "weak"),
    "judge_consensus": ("LLM-judge consensus, not a human", "weak"),
    "constructed_benign": ("benign side written without the cue it is shown with", "weak"),
    "user": ("imported by a user", "medium"),
}
_COLOURS = {"strong": "#1b7f3b", "medium": "#1f5fae", "weak": "#a15c00", "wrong": "#b3261e", "doubtful": "#a15c00"}


def errata_for(
    pair_id: str,
    path: str | Path | None = None,
    *,
    aliases: Iterable[str | None] = (),
    engine: Engine | None = None,
) -> list[dict[str, Any]]:
    """The errata rows of ``pair_id`` (or of any of its ``aliases``, e.g. ``meta.upstream_id``): those of
    the shipped file (:func:`~automonitor.data.errata.errata_path` of ``path``; none when it does not
    exist or cannot be read) in file order, then those entered into the store at ``engine`` (with their
    ``origin`` and ``entered_by``) in the order entered."""
    ids = {pair_id, *(a for a in aliases if a)}
    out: list[dict[str, Any]] = []
    p = errata_path(path)
    try:
        text = p.read_bytes().decode("utf-8", errors="replace") if p.is_file() else ""
    except OSError:
        text = ""
    for line in text.split("\n"):
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("pair_id") in ids and row.get("verdict") in ("wrong", "doubtful"):
            out.append(row)
    if engine is not None:
        with session_scope(engine) as s:
            out += [r for r in errata_queries.rows(s) if r["pair_id"] in ids]
    return out


def sample_errata(sample: dict[str, Any], engine: Engine | None = None) -> list[dict[str, Any]]:
    """:func:`errata_for` a sample's row (``Sample`` columns): by its ``pair_id`` and its
    ``meta.upstream_id`` (the id an erratum may have been written with before pair ids were renamed);
    with ``engine`` the store's errata too."""
    meta = sample.get("meta")
    upstream = meta.get("upstream_id") if isinstance(meta, dict) else None
    return errata_for(str(sample["pair_id"]), aliases=[upstream], engine=engine)


def _badge(text: str, colour: str, title: str = "") -> str:
    return (
        f'<span title="{esc(title)}" style="display:inline-block;margin:0 0.4rem 0.3rem 0;padding:0.15rem 0.55rem;'
        f"border-radius:0.8rem;border:1px solid {colour};color:{colour};font-size:0.85rem;"
        f'font-weight:600">{esc(text)}</span>'
    )


def provenance_html(label_source: str | None, errata: list[dict[str, Any]]) -> str:
    """Badges for one sample: its label provenance (coloured by how much it can be trusted) and each
    erratum (``wrong`` in red, ``doubtful`` in amber) with its reason, reader and date. Escaped HTML
    for ``st.html``."""
    parts = []
    src = label_source or "unknown"
    text, strength = PROVENANCE_BADGES.get(src, (src, "medium"))
    parts.append(_badge(f"label provenance: {src}", _COLOURS[strength], text))
    if strength == "weak":
        parts.append(f'<span style="font-size:0.85rem;color:{_COLOURS["weak"]}">{esc(text)}</span>')
    for e in errata:
        verdict = str(e.get("verdict"))
        reason = reveal_controls(e.get("reason") or "")
        parts.append(_badge(f"erratum: label {verdict}", _COLOURS.get(verdict, "#a15c00"), reason))
        entered = None
        if e.get("origin"):
            entered = f"entered via {e['origin']}" + (f" by {e['entered_by']}" if e.get("entered_by") else "")
        facts = (e.get("reader"), e.get("date"), entered)
        who = " · ".join(esc(reveal_controls(x)) for x in facts if x)
        parts.append(
            f'<div style="font-size:0.85rem;margin:0 0 0.3rem 0">{esc(reason)}'
            + (f' <span style="color:#6b7280">({who})</span>' if who else "")
            + "</div>"
        )
    return '<div data-testid="provenance-badges">' + "".join(parts) + "</div>"
