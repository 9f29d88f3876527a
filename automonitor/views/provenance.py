"""Label provenance and errata as visible badges on the drill-down.

Errata are read from the errata file the build applies (:func:`automonitor.data.errata.errata_path`:
``$AUTOMONITOR_ERRATA``, else ``seeds/errata.jsonl``; one row a line, ``{"pair_id", "source", "verdict":
"wrong"|"doubtful", "reason", "reader", "date"}``) by ``pair_id`` or by the sample's
``meta.upstream_id`` alias, as the build matches them. A line that is not such an object is skipped (the
errata command validates the file; this view only reads it). All text is escaped (:func:`esc`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from automonitor.data.errata import errata_path
from automonitor.escaping import esc

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
    "user": ("imported by a user", "medium"),
}
_COLOURS = {"strong": "#1b7f3b", "medium": "#1f5fae", "weak": "#a15c00", "wrong": "#b3261e", "doubtful": "#a15c00"}


def errata_for(
    pair_id: str, path: str | Path | None = None, *, aliases: Iterable[str | None] = ()
) -> list[dict[str, Any]]:
    """The errata rows of ``pair_id`` (or of any of its ``aliases``, e.g. ``meta.upstream_id``) in the errata
    file (:func:`~automonitor.data.errata.errata_path` of ``path``), in file order; ``[]`` when the file
    does not exist."""
    p = errata_path(path)
    if not p.is_file():
        return []
    ids = {pair_id, *(a for a in aliases if a)}
    out = []
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("pair_id") in ids and row.get("verdict") in ("wrong", "doubtful"):
            out.append(row)
    return out


def sample_errata(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """:func:`errata_for` a sample's row (``Sample`` columns): by its ``pair_id`` and its
    ``meta.upstream_id`` (the id an erratum may have been written with before pair ids were renamed)."""
    meta = sample.get("meta")
    upstream = meta.get("upstream_id") if isinstance(meta, dict) else None
    return errata_for(str(sample["pair_id"]), aliases=[upstream])


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
        parts.append(_badge(f"erratum: label {verdict}", _COLOURS[verdict], str(e.get("reason") or "")))
        who = " · ".join(esc(x) for x in (e.get("reader"), e.get("date")) if x)
        parts.append(
            f'<div style="font-size:0.85rem;margin:0 0 0.3rem 0">{esc(e.get("reason") or "")}'
            + (f' <span style="color:#6b7280">({who})</span>' if who else "")
            + "</div>"
        )
    return '<div data-testid="provenance-badges">' + "".join(parts) + "</div>"
