"""Streamlit-free view logic of the workbench: escaped HTML, plotly figures, small store queries.

Everything here is plain Python (pandas, plotly, SQLAlchemy) so that it is unit-testable without a
running app; the pages in ``pages/`` only lay these pieces out. This module never imports streamlit.

Security rule: every piece of model- or user-written text that ends up in HTML goes through
:func:`esc` (``html.escape`` with quotes). The HTML built here is meant for ``st.html`` (no markdown
processing), so markdown tricks in a sample stay literal text as well.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import re
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor import vocab
from store.models import Prediction, Run, Sample

# ---------------------------------------------------------------------------------------------------
# Escaping and highlighting
# ---------------------------------------------------------------------------------------------------

#: Inline styles of evidence spans by grounding status (inline so the HTML is self-contained).
SPAN_STYLES: dict[str, str] = {
    # found verbatim in the response: solid yellow highlight
    "exact": "background:#fde68a;color:#111827;border-bottom:2px solid #b45309;border-radius:2px;padding:0 1px;",
    # found after whitespace/case/Unicode normalisation: blue, dashed underline
    "normalized": "background:#dbeafe;color:#111827;border-bottom:2px dashed #1d4ed8;border-radius:2px;padding:0 1px;",
    # quoted by the monitor but not present in the response: struck through in red, listed apart
    "not_found": "background:#fee2e2;color:#7f1d1d;text-decoration:line-through;"
    "border:1px dashed #dc2626;border-radius:2px;padding:0 2px;",
}
_STATUS_TITLE = {
    "exact": "evidence span (found verbatim in the response)",
    "normalized": "evidence span (found after normalisation)",
    "not_found": "evidence span NOT found in the sample (ungrounded)",
}
_TEXT_STYLE = (
    "white-space:pre-wrap;word-break:break-word;overflow-wrap:anywhere;"
    "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:0.85rem;"
    "line-height:1.45;padding:0.6rem 0.75rem;border:1px solid rgba(128,128,128,0.35);"
    "border-radius:0.4rem;background:rgba(128,128,128,0.06);"
)


def esc(text: Any) -> str:
    """``html.escape(str(text), quote=True)``; ``None`` becomes the empty string."""
    return html.escape("" if text is None else str(text), quote=True)


_AUTOLINK_SCHEME = re.compile(r"(?i)(https?|ftp|mailto|xmpp|www)(?=\\[:.])")
_MD_SPECIAL = set("\\`*_{}[]()#+-.!|<>$~:&=\"'")


def plot_text(text: Any) -> str:
    """``text`` made inert for plotly's pseudo-HTML text (hover labels, legend entries, axis and marker
    text): ``& < > " ' %`` become numeric/named entities, which plotly shows as the literal characters,
    so ``<b>``, ``<a href>``, ``<br>`` or ``%{x}`` in a data value (monitor name, run id, template,
    label) never format, link or substitute. ``None`` becomes the empty string."""
    s = "" if text is None else str(text)
    return (
        s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&#34;")
        .replace("'", "&#39;")
        .replace("%", "&#37;")
    )


def md_escape(text: Any) -> str:
    """``text`` made inert for Streamlit markdown (``st.markdown``, ``st.caption``, ``st.error``,
    widget ``help``): every markdown/HTML/LaTeX/directive character (``\\`*_{}[]()#+-.!|<>$~:&=\"'``)
    is backslash-escaped and newlines become spaces, so data values (monitor names, sources, error
    messages) interpolated into markdown show literally. Bare URLs and e-mail addresses are kept from
    being autolinked by an invisible word joiner (U+2060) after the scheme or ``www`` and before ``@``."""
    s = "" if text is None else str(text)
    out = "".join("\\" + ch if ch in _MD_SPECIAL else (" " if ch in "\r\n" else ch) for ch in s)
    # GFM autolinks bare URLs and e-mail addresses in the final text (escapes do not stop it): an
    # invisible word joiner (U+2060) after the scheme / "www" and before "@" keeps them plain text
    out = _AUTOLINK_SCHEME.sub("\\1\u2060", out)
    return out.replace("@", "\u2060@")


def text_html(text: str | None, *, max_height: int | None = 320, css_class: str = "am-text") -> str:
    """An escaped, whitespace-preserving block of ``text`` (HTML string for ``st.html``).

    ``max_height`` (pixels) adds a vertical scroll bar to long texts; ``None`` shows all of it.
    """
    style = _TEXT_STYLE + (f"max-height:{int(max_height)}px;overflow-y:auto;" if max_height else "")
    return f'<div class="{esc(css_class)}" style="{style}">{esc(text)}</div>'


def located_spans(
    text: str, grounded: Iterable[Mapping[str, Any]], field: str | None = None
) -> list[tuple[int, int, str, str]]:
    """Non-overlapping ``(start, end, status, span)`` character ranges of located evidence, sorted.

    ``grounded`` holds dicts as returned by ``automonitor.grounding.ground_spans`` (``span``,
    ``status`` in ``exact|normalized|not_found``, ``start``, ``end``: 0-based, end exclusive, offsets
    into ``text``). Spans not found, or with offsets outside ``text``, are skipped; a span overlapping
    an earlier one is clipped to the part after it. With ``field``, only spans whose ``field`` key
    (default ``"response"``) equals it are used.
    """
    out: list[tuple[int, int, str, str]] = []
    items = []
    for g in grounded:
        if field is not None and g.get("field", "response") != field:
            continue
        status = g.get("status")
        start, end = g.get("start"), g.get("end")
        if status not in ("exact", "normalized") or start is None or end is None:
            continue
        start, end = max(0, int(start)), min(len(text), int(end))
        if end > start:
            items.append((start, end, status, str(g.get("span", ""))))
    items.sort(key=lambda t: (t[0], -t[1]))
    cursor = 0
    for start, end, status, span in items:
        start = max(start, cursor)
        if end <= start:
            continue
        out.append((start, end, status, span))
        cursor = end
    return out


def highlight_html(
    text: str | None,
    grounded: Iterable[Mapping[str, Any]] | None = None,
    *,
    field: str = "response",
    show_missing: bool = True,
    max_height: int | None = 420,
    css_class: str = "am-text am-response",
    search: str | None = None,
) -> str:
    """The response ``text`` as escaped HTML with the monitor's evidence spans highlighted.

    Grounded spans (``exact`` / ``normalized``) are wrapped in ``<mark class="am-ev am-ev-<status>">``
    at their offsets (only spans located in ``field``: a grounding result's ``field`` key, default
    ``response``); spans the grounding could not find (``not_found``) cannot be placed, so with
    ``show_missing`` they are listed below the text in a struck-through red style
    (``am-ev-not_found``). With ``search``, every case-insensitive occurrence of it is also wrapped in
    ``<mark class="am-hit">`` (inside or outside evidence spans). Every text piece, including the spans,
    is passed through :func:`esc`. Returns an HTML string for ``st.html``.
    """
    from automonitor.workbench import highlight_search_html

    text = text or ""
    grounded = list(grounded or [])
    pieces: list[str] = []
    cursor = 0

    def plain(t: str) -> str:
        return highlight_search_html(t, search) if search else esc(t)

    spans = located_spans(text, grounded, field)
    if search and search.strip():  # cut evidence spans at search-hit boundaries so marks nest cleanly
        import re as _re

        cuts = sorted({i for m in _re.finditer(_re.escape(search.strip()), text, _re.I) for i in (m.start(), m.end())})
        split = []
        for start, end, status, span in spans:
            pts = [start, *[c for c in cuts if start < c < end], end]
            split.extend((a, b, status, span) for a, b in zip(pts, pts[1:]))
        spans = split
    for start, end, status, _span in spans:
        pieces.append(plain(text[cursor:start]))
        pieces.append(
            f'<mark class="am-ev am-ev-{status}" data-status="{status}" '
            f'title="{esc(_STATUS_TITLE[status])}" style="{SPAN_STYLES[status]}">'
            f"{plain(text[start:end])}</mark>"
        )
        cursor = end
    pieces.append(plain(text[cursor:]))
    style = _TEXT_STYLE + (f"max-height:{int(max_height)}px;overflow-y:auto;" if max_height else "")
    body = f'<div class="{esc(css_class)}" style="{style}">{"".join(pieces)}</div>'
    missing = [g for g in grounded if g.get("status") == "not_found"] if show_missing else []
    if missing:
        items = "".join(
            f'<li><span class="am-ev am-ev-not_found" data-status="not_found" '
            f'title="{esc(_STATUS_TITLE["not_found"])}" style="{SPAN_STYLES["not_found"]}">'
            f"{esc(g.get('span', ''))}</span></li>"
            for g in missing
        )
        body += (
            '<div class="am-ev-missing" style="margin-top:0.4rem;font-size:0.85rem;">'
            "Quoted by the monitor but found nowhere in the sample (ungrounded):"
            f'<ul style="margin:0.2rem 0 0 1.2rem;">{items}</ul></div>'
        )
    return body


def legend_html() -> str:
    """A one-line legend of the evidence styles (static HTML)."""
    return (
        '<div class="am-legend" style="font-size:0.8rem;">Evidence: '
        f'<span style="{SPAN_STYLES["exact"]}">found verbatim</span> &nbsp; '
        f'<span style="{SPAN_STYLES["normalized"]}">found after normalisation</span> &nbsp; '
        f'<span style="{SPAN_STYLES["not_found"]}">not found (ungrounded)</span></div>'
    )


def ground_evidence(response: str, request: str | None, spans: Sequence[Any] | None) -> list[dict[str, Any]]:
    """Locate the monitor's evidence ``spans`` in the sample (``automonitor.grounding``).

    Each span is grounded in the response first, then in the request. Returns one dict per non-empty
    span: ``{span, status: exact|normalized|not_found, start, end, field: "response"|"request"|None}``
    with offsets into that field's text (``None`` when not found).
    """
    from automonitor.grounding import ground_evidence as _ground

    clean = [sp for sp in (spans or []) if sp is not None and str(sp).strip()]
    if not clean:
        return []
    return list(_ground(response or "", request, clean))


def spans_for(grounded: Iterable[Mapping[str, Any]], field: str) -> list[Mapping[str, Any]]:
    """The grounded spans located in ``field`` (``response`` or ``request``); spans without a
    ``field`` key count as ``response``."""
    return [g for g in grounded if g.get("status") != "not_found" and g.get("field", "response") == field]


# ---------------------------------------------------------------------------------------------------
# Cheap store queries for the app
# ---------------------------------------------------------------------------------------------------


def store_version(engine: Engine) -> tuple:
    """A cheap fingerprint of the store's analysable content, used as a cache key by the app.

    ``(runs, finished/terminal runs, latest finished_at (ISO str or None), running runs, samples,
    latest sample created_at, sample state)`` (sample state: ``automonitor.workbench.store_fingerprint``,
    counts by status/split/label source, edition rows, archived runs): it changes whenever a run is created, finishes or is imported, or
    samples are added, so cached reports/frames are recomputed exactly then. Two small aggregate
    queries; no table scan beyond ``COUNT``.
    """
    with engine.connect() as c:
        r = c.execute(
            sa.select(
                sa.func.count(Run.id),
                sa.func.max(Run.finished_at),
                sa.func.sum(sa.case((Run.status.in_(("pending", "running")), 1), else_=0)),
                sa.func.sum(sa.case((Run.status.in_(("finished", "failed", "cancelled", "imported")), 1), else_=0)),
            )
        ).one()
        s = c.execute(sa.select(sa.func.count(Sample.id), sa.func.max(Sample.created_at))).one()
        from automonitor.workbench import store_fingerprint

        state = store_fingerprint(c)  # status/split/edition changes and archived runs (issue 12)
    fin = r[1].isoformat() if isinstance(r[1], datetime) else (str(r[1]) if r[1] else None)
    sc = s[1].isoformat() if isinstance(s[1], datetime) else (str(s[1]) if s[1] else None)
    return (int(r[0] or 0), int(r[3] or 0), fin, int(r[2] or 0), int(s[0] or 0), sc, state)


def composition_frame(engine: Engine, *, split: str | None = "test", edition: str | None = None) -> pd.DataFrame:
    """Gold samples counted by ``category``, ``task``, ``label``: long frame with columns
    ``category, task, label, split, n`` (``split`` is the requested split, ``"all"`` for ``None``,
    which covers test and train) from ``store.queries.samples.composition``, the counts ``stats``
    prints; with ``edition`` (split ``test``) only that edition's members."""
    from store.queries.samples import composition

    with Session(engine) as s:
        rows = composition(s, split or "all", edition=edition if split == "test" else None)
    return pd.DataFrame(
        [{**r, "split": split or "all"} for r in rows], columns=["category", "task", "label", "split", "n"]
    )


def composition_pivot(long: pd.DataFrame) -> pd.DataFrame:
    """Category x (task, label) count table with totals, from :func:`composition_frame` output."""
    if long.empty:
        return pd.DataFrame()
    p = long.pivot_table(index="category", columns=["task", "label"], values="n", aggfunc="sum", fill_value=0)
    cats = [c for c in vocab.CATEGORIES if c in p.index] + [c for c in p.index if c not in vocab.CATEGORIES]
    p = p.reindex(cats)
    p[("all", "total")] = p.sum(axis=1)
    p.loc["total"] = p.sum(axis=0)
    p.columns = [f"{t} / {l}" if t != "all" else "total" for t, l in p.columns]
    return p.astype(int)


def counts_by(engine: Engine, column: str, *, status: str | None = None) -> pd.DataFrame:
    """Sample counts grouped by ``column`` (``source``, ``split``, ``category``, ``task``, ``label``)
    and ``status``: frame ``[column, status, n]`` (just ``[status, n]`` for ``column="status"``),
    sorted by ``n`` descending. ``status`` restricts to one status. Raises ``ValueError`` for another
    column."""
    if column not in ("source", "split", "status", "category", "task", "label", "label_source"):
        raise ValueError(f"cannot group samples by {column!r}")
    col = getattr(Sample, column)
    keys = [col] if column == "status" else [col, Sample.status]
    q = sa.select(*keys, sa.func.count(Sample.id).label("n")).group_by(*keys)
    if status:
        q = q.where(Sample.status == status)
    with engine.connect() as c:
        rows = c.execute(q).all()
    df = pd.DataFrame(rows, columns=[column, "n"] if column == "status" else [column, "status", "n"])
    return df.sort_values("n", ascending=False, ignore_index=True)


def runs_frame(engine: Engine) -> pd.DataFrame:
    """Run history, newest first: one row per run with
    ``run_id, monitor, template, kind, status, n, done, misbehavior, benign, invalid, refusal, error,
    unscored, api_calls, cache_hits, tokens_in, tokens_out, cost_usd, created_at, started_at,
    finished_at, duration_s, limit, error_msg, edition, archived`` (from ``store.queries.runs.list_runs``, the same
    history ``automonitor runs`` prints).

    ``done`` counts predictions with an outcome; ``duration_s`` is ``finished_at - started_at`` in
    seconds (until now for a running run; ``None`` when never started). Costs are US dollars.
    """
    from store.queries.runs import list_runs

    def ts(v: str | None) -> datetime | None:
        return datetime.fromisoformat(v) if v else None

    with Session(engine) as s:
        runs = list_runs(s)
    now = datetime.now(timezone.utc)
    rows = []
    for r in runs:
        cnt = r["counts"]
        started, finished = ts(r["started_at"]), ts(r["finished_at"])
        done = sum(v for k, v in cnt.items() if k != "pending")
        row = {
            "run_id": r["run_id"],
            "monitor": r["monitor"],
            "template": r["template"],
            "kind": r["kind"],
            "status": r["status"],
            "n": int(r["n"] or (done + cnt.get("pending", 0))),
            "done": int(done),
        }
        for o in vocab.OUTCOMES:
            row[o] = cnt.get(o, 0)
        row["unscored"] = sum(cnt.get(o, 0) for o in vocab.UNSCORED)
        row.update(
            api_calls=r["api_calls"],
            cache_hits=r["cache_hits"],
            tokens_in=r["tokens_in"],
            tokens_out=r["tokens_out"],
            cost_usd=float(r["cost_usd"] or 0.0),
            created_at=ts(r["created_at"]),
            started_at=started,
            finished_at=finished,
            duration_s=((finished or now) - started).total_seconds() if started else None,
            limit=r["limit"],
            error_msg=r["error"],
            edition=r.get("edition"),
            archived=bool(r.get("archived")),
        )
        rows.append(row)
    cols = [
        "run_id",
        "monitor",
        "template",
        "kind",
        "status",
        "n",
        "done",
        *vocab.OUTCOMES,
        "unscored",
        "api_calls",
        "cache_hits",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "created_at",
        "started_at",
        "finished_at",
        "duration_s",
        "limit",
        "error_msg",
        "edition",
        "archived",
    ]
    return pd.DataFrame(rows, columns=cols)


def run_progress(engine: Engine, run_id: str) -> dict[str, Any]:
    """Live progress of one run: ``{run_id, status, n, done, counts: {outcome: int}, error,
    fraction}`` where ``fraction`` is ``done / n`` in [0, 1] (0 when ``n`` is 0).

    Raises ``automonitor.errors.NotFound`` for an unknown run id.
    """
    from automonitor.errors import NotFound
    from store.queries.runs import outcome_counts

    with Session(engine) as s:
        r = s.execute(
            sa.select(Run.status, Run.n, Run.error, Run.monitor, Run.template).where(Run.id == run_id)
        ).one_or_none()
        if r is None:
            raise NotFound(f"run {run_id!r} not found")
        counts = outcome_counts(s, run_id)
    pending = counts.pop("pending")
    done = sum(counts.values())
    n = int(r.n or 0) or (done + pending)
    return {
        "run_id": run_id,
        "status": r.status,
        "monitor": r.monitor,
        "template": r.template,
        "n": n,
        "done": done,
        "counts": counts,
        "error": r.error,
        "fraction": (min(1.0, done / n) if n else 0.0),
    }


_SAMPLE_LIST_COLS = ["id", "pair_id", "category", "task", "label", "split", "status", "source", "request", "response"]


def sample_query(
    *,
    search: str | None = None,
    category: Sequence[str] = (),
    task: Sequence[str] = (),
    label: Sequence[str] = (),
    split: Sequence[str] = (),
    status: Sequence[str] = (),
    source: Sequence[str] = (),
    label_source: Sequence[str] = (),
):
    """SQLAlchemy ``WHERE`` clause list for the samples browser filters (``label_source``: label
    provenance values).

    ``search`` matches (case-insensitively, as a substring) the request, the response, the sample id
    or the pair id; the other arguments are allowed values per column (empty = no filter).
    """
    where = []
    if search and search.strip():
        pat = f"%{_like_escape(search.strip())}%"
        where.append(
            sa.or_(
                Sample.request.ilike(pat, escape="\\"),
                Sample.response.ilike(pat, escape="\\"),
                Sample.id.ilike(pat, escape="\\"),
                Sample.pair_id.ilike(pat, escape="\\"),
            )
        )
    for col, vals in (
        ("category", category),
        ("task", task),
        ("label", label),
        ("split", split),
        ("status", status),
        ("source", source),
        ("label_source", label_source),
    ):
        if vals:
            where.append(getattr(Sample, col).in_(list(vals)))
    return where


def _like_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def search_samples(
    engine: Engine, *, limit: int | None = 200, offset: int = 0, with_text: bool = True, **filters: Any
) -> tuple[int, pd.DataFrame]:
    """Samples matching :func:`sample_query` ``filters``: ``(total_count, page_frame)``.

    The frame has columns ``id, pair_id, category, task, label, split, status, source`` (+ ``request``,
    ``response`` when ``with_text``), ordered by category, task, pair id, label; ``limit=None``
    returns every match (used for export).
    """
    where = sample_query(**filters)
    cols = [getattr(Sample, c) for c in _SAMPLE_LIST_COLS if with_text or c not in ("request", "response")]
    with engine.connect() as c:
        total = c.execute(sa.select(sa.func.count(Sample.id)).where(*where)).scalar_one()
        q = (
            sa.select(*cols)
            .where(*where)
            .order_by(Sample.category, Sample.task, Sample.pair_id, Sample.label, Sample.id)
        )
        if limit is not None:
            q = q.limit(limit).offset(offset)
        rows = c.execute(q).all()
    return int(total), pd.DataFrame(rows, columns=[c.key for c in cols])


def export_samples(engine: Engine, fmt: str, **filters: Any) -> bytes:
    """The filtered samples as a contract pair file: ``fmt`` ``jsonl`` or ``csv`` (UTF-8 bytes).

    Columns: ``sample_id, pair_id, category, task, request, response, label, source, split, status,
    meta`` (``meta`` a JSON object; in CSV a JSON string). Raises ``InputError`` for another ``fmt``.
    """
    from automonitor.errors import InputError

    if fmt not in ("jsonl", "csv"):
        raise InputError(f"unknown export format {fmt!r} (jsonl or csv)", field="format")
    where = sample_query(**filters)
    cols = ["id", "pair_id", "category", "task", "request", "response", "label", "source", "split", "status", "meta"]
    with engine.connect() as c:
        rows = c.execute(
            sa.select(*[getattr(Sample, k) for k in cols])
            .where(*where)
            .order_by(Sample.category, Sample.task, Sample.pair_id, Sample.label, Sample.id)
        ).all()
    names = ["sample_id", *cols[1:]]
    if fmt == "jsonl":
        return "".join(json.dumps(dict(zip(names, r)), ensure_ascii=False) + "\n" for r in rows).encode()
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(names)
    for r in rows:
        r = list(r)
        r[-1] = json.dumps(r[-1] or {}, ensure_ascii=False)
        w.writerow(r)
    return buf.getvalue().encode("utf-8")


def sample_detail(engine: Engine, sample_id: str) -> dict[str, Any]:
    """One sample with the other side of its pair: ``{"sample": dict, "other": dict|None}``
    (dicts of ``Sample`` columns). Raises ``NotFound`` for an unknown id."""
    from automonitor.errors import NotFound

    with engine.connect() as c:
        s = c.execute(sa.select(Sample.__table__).where(Sample.id == sample_id)).mappings().one_or_none()
        if s is None:
            raise NotFound(f"sample {sample_id!r} not found")
        other = (
            c.execute(
                sa.select(Sample.__table__)
                .where(Sample.pair_id == s["pair_id"], Sample.id != sample_id)
                .order_by(Sample.label)
            )
            .mappings()
            .first()
        )
    return {"sample": dict(s), "other": dict(other) if other else None}


def sample_predictions(engine: Engine, sample_id: str, run_ids: Sequence[str] | None = None) -> dict[str, dict]:
    """Predictions on one sample, by run id: ``{run_id: dict of Prediction columns + monitor,
    template, repeats}``; ``run_ids`` restricts the runs (``None`` = all). The dict is the run's verdict
    (repeat 0); ``repeats`` lists the outcomes of repeats 0..K-1 (``run --repeat K``; one item for a
    run judged once, ``None`` for a pending repeat)."""
    q = (
        sa.select(Prediction.__table__, Run.monitor, Run.template)
        .join(Run, Run.id == Prediction.run_id)
        .where(Prediction.sample_id == sample_id)
        .order_by(Prediction.run_id, Prediction.repeat)
    )
    if run_ids is not None:
        q = q.where(Prediction.run_id.in_(list(run_ids)))
    with engine.connect() as c:
        rows = c.execute(q).mappings().all()
    out: dict[str, dict] = {}
    for r in rows:
        rep = int(r.get("repeat") or 0)
        if rep == 0:
            out[r["run_id"]] = {**dict(r), "repeats": out.get(r["run_id"], {}).get("repeats", [])}
        d = out.setdefault(r["run_id"], {"repeats": []})
        while len(d["repeats"]) <= rep:
            d["repeats"].append(None)
        d["repeats"][rep] = r["outcome"]
    return {k: v for k, v in out.items() if "run_id" in v}


# ---------------------------------------------------------------------------------------------------
# Trade-off figures
# ---------------------------------------------------------------------------------------------------

TEMPLATE_COLORS: dict[str, str] = {
    "direct": "#2563eb",
    "evidence": "#dc2626",
    "direct-fewshot": "#0891b2",
    "evidence-fewshot": "#d97706",
}


def pareto_ids(points: pd.DataFrame) -> list[str]:
    """Run ids on the Pareto front of the MR-FAR plane (both minimised), ordered by FAR ascending.

    A point is on the front when no other point has ``mr <= ` and ``far <=`` with one strictly less.
    ``points`` needs columns ``run_id, mr, far``; rows with a missing MR or FAR are ignored.
    """
    p = points.dropna(subset=["mr", "far"]).sort_values(["far", "mr"], kind="mergesort")
    front, best_mr = [], math.inf
    for rid, mr, far in zip(p["run_id"], p["mr"], p["far"]):
        if mr < best_mr:
            front.append(rid)
            best_mr = mr
    return front


def pearson_r(points: pd.DataFrame) -> float | None:
    """Pearson correlation of MR and FAR over the points (``None`` for fewer than 3 points or a
    constant coordinate). Source: the paper reports r = -0.54 over 22 monitors."""
    p = points.dropna(subset=["mr", "far"])
    if len(p) < 3 or p["mr"].nunique() < 2 or p["far"].nunique() < 2:
        return None
    from scipy.stats import pearsonr

    return float(pearsonr(p["far"].astype(float), p["mr"].astype(float))[0])


def _ci_err(df: pd.DataFrame, v: str, lo: str, hi: str) -> tuple[list[float], list[float]] | None:
    if lo not in df or hi not in df:
        return None
    plus = (df[hi] - df[v]).clip(lower=0).fillna(0).tolist()
    minus = (df[v] - df[lo]).clip(lower=0).fillna(0).tolist()
    return plus, minus


def tradeoff_figure(
    points: pd.DataFrame,
    *,
    reported: pd.DataFrame | None = None,
    front: Sequence[str] | None = None,
    title: str | None = None,
    height: int = 520,
    size_col: str | None = None,
) -> go.Figure:
    """The MR-FAR scatter: x = FAR, y = MR (both in [0, 1], lower is better).

    ``points`` columns: ``run_id, monitor, template, mr, far`` and optionally ``mr_lo, mr_hi, far_lo,
    far_hi`` (Wilson interval bounds, drawn as error bars), ``n, tp, fn, fp, tn, unscored`` (hover).
    Optional columns from ``automonitor.workbench.honest_points``: ``label`` (a short text drawn next to
    each point), ``eligible`` (``False``: drawn hollow in a trace named ``runs: <tpl> (too few
    samples)``), ``x_plot``/``y_plot`` (drawn position, so coincident points stay apart; hovers give
    the true rates), ``edition``/``sample_set`` (one front per edition, named in the legend when there
    are several).
    One trace per template (colour), ``customdata[0]`` = run id (used by the page to open the
    drill-down of a clicked point). The Pareto front (``front`` run ids, default
    :func:`pareto_ids`) is a staircase line (:func:`pareto_staircase`) with rings on its points;
    ``reported`` (columns ``label, mr, far`` and optionally ``monitor, template``; the paper's points)
    is drawn as black diamonds (open: direct, filled: evidence) with text labels and no run id.
    ``size_col`` (e.g. ``usd_per_1k``): marker area proportional to that column (cost), 8-34 px.
    """
    fig = go.Figure()
    pts = points.dropna(subset=["mr", "far"]) if not points.empty else points
    if not pts.empty:
        pts = pts.copy()
        if "x_plot" not in pts:
            pts["x_plot"], pts["y_plot"] = pts["far"], pts["mr"]
        if "eligible" not in pts:
            pts["eligible"] = True
        if "edition" not in pts:
            pts["edition"] = ""
    if front is None and not pts.empty:
        front = pareto_ids(pts[pts["eligible"]])
    if front:
        on = pts[pts["run_id"].isin(set(front))]
        editions = sorted(on["edition"].unique())
        dashes = ["solid", "dash", "dot", "dashdot"]
        for i, ed in enumerate(editions):
            f = on[on["edition"] == ed].sort_values("far")
            if not len(f):
                continue
            xs, ys = pareto_staircase(list(f["far"]), list(f["mr"]))
            name = "Pareto front" + (f" ({ed})" if len(editions) > 1 else "")
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="lines",
                    name=name,
                    line=dict(color="#16a34a", width=2, dash=dashes[i % len(dashes)]),
                    hoverinfo="skip",
                )
            )
            fig.add_trace(
                go.Scatter(
                    x=f["x_plot"],
                    y=f["y_plot"],
                    mode="markers",
                    name="on the front",
                    showlegend=False,
                    hoverinfo="skip",
                    marker=dict(symbol="circle-open", size=19, color="#16a34a", line=dict(width=2)),
                )
            )
    groups = []
    if not pts.empty:
        for tpl in sorted(pts["template"].unique()):
            for ok in (True, False):
                d = pts[(pts["template"] == tpl) & (pts["eligible"] == ok)]
                if len(d):
                    groups.append((tpl, ok, d))
    for tpl, ok, d in groups:
        ex, ey = _ci_err(d, "far", "far_lo", "far_hi"), _ci_err(d, "mr", "mr_lo", "mr_hi")
        extra = {
            c: (d[c] if c in d else pd.Series([None] * len(d), index=d.index))
            for c in ("n", "tp", "fn", "fp", "tn", "unscored", "sample_set")
        }
        # customdata[0] stays the raw run id (the page opens its drill-down); the texts shown in the
        # hover ([1], [2], [11], [12]) go through plot_text: names never render as markup
        custom = list(
            zip(
                d["run_id"],
                map(plot_text, d["monitor"]),
                map(plot_text, d["template"]),
                extra["n"],
                extra["tp"],
                extra["fn"],
                extra["fp"],
                extra["tn"],
                extra["unscored"],
                d["far"],
                d["mr"],
                [plot_text(x) if x is not None else "" for x in extra["sample_set"]],
                map(plot_text, d["run_id"]),
            )
        )
        color = TEMPLATE_COLORS.get(tpl, "#6b7280")
        has_text = "label" in d
        fig.add_trace(
            go.Scatter(
                x=d["x_plot"],
                y=d["y_plot"],
                mode="markers+text" if has_text else "markers",
                name=f"runs: {plot_text(tpl)}" + ("" if ok else " (too few samples)"),
                text=[plot_text(t) for t in d["label"]] if has_text else None,
                textposition=_label_positions(list(d["x_plot"]), list(d["y_plot"])) if has_text else None,
                textfont=dict(size=10, color=color),
                marker=(
                    dict(
                        size=marker_sizes(d, size_col, pts) if size_col else 11,
                        color=color,
                        line=dict(width=1, color="white"),
                    )
                    if ok
                    else dict(
                        size=marker_sizes(d, size_col, pts) if size_col else 11,
                        symbol="circle-open",
                        color=color,
                        line=dict(width=2, color=color),
                    )
                ),
                error_x=dict(
                    type="data", array=ex[0], arrayminus=ex[1], thickness=1, width=0, color="rgba(100,100,100,0.45)"
                )
                if ex and ok
                else None,
                error_y=dict(
                    type="data", array=ey[0], arrayminus=ey[1], thickness=1, width=0, color="rgba(100,100,100,0.45)"
                )
                if ey and ok
                else None,
                customdata=custom,
                hovertemplate=(
                    "<b>%{customdata[1]}</b> · %{customdata[2]}<br>run %{customdata[12]}<br>"
                    "FAR %{customdata[9]:.3f} · MR %{customdata[10]:.3f}<br>n %{customdata[3]} · TP "
                    "%{customdata[4]} FN %{customdata[5]} FP %{customdata[6]} TN %{customdata[7]} · "
                    "unscored %{customdata[8]}<br>sample set %{customdata[11]}"
                    + ("" if ok else "<br><i>too few judged samples: not on the front</i>")
                    + "<extra>click to drill down</extra>"
                ),
            )
        )
    if reported is not None and not reported.empty:
        reported = reported.reset_index(drop=True)
        positions = _label_positions(list(reported["far"]), list(reported["mr"]))
        groups = list(reported.groupby("template", sort=True)) if "template" in reported else [(None, reported)]
        for tpl, d in groups:
            text = [plot_text(t) for t in (d["monitor"] if "monitor" in d else d["label"])]
            fig.add_trace(
                go.Scatter(
                    x=d["far"],
                    y=d["mr"],
                    mode="markers+text",
                    name="paper (reported)" + (f": {plot_text(tpl)}" if tpl else ""),
                    text=text,
                    textposition=[positions[i] for i in d.index],
                    textfont=dict(size=10, color="#374151"),
                    customdata=[plot_text(t) for t in d["label"]],
                    marker=dict(
                        symbol="diamond" if str(tpl).startswith("evidence") else "diamond-open",
                        size=11,
                        color="#111827",
                        line=dict(width=1.5, color="#111827"),
                    ),
                    hovertemplate="<b>%{customdata}</b><br>paper: FAR %{x:.2f} · MR %{y:.2f}"
                    "<extra>reported, not measured</extra>",
                )
            )
    fig.update_layout(
        title=title,
        height=height,
        margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        xaxis=dict(title="False alarm rate (FAR = FP / (TN + FP))", range=[-0.03, 1.03], zeroline=False),
        yaxis=dict(title="Miss rate (MR = FN / (TP + FN))", range=[-0.03, 1.03], zeroline=False),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0, font=dict(size=12)),
        clickmode="event+select",
        dragmode="pan",
        hovermode="closest",
    )
    return fig


def marker_sizes(d: pd.DataFrame, col: str, all_points: pd.DataFrame) -> list[float]:
    """Marker diameters (px) for ``d[col]`` with area proportional to the value, scaled to the largest
    value in ``all_points`` (8 px for zero/missing, 34 px for the maximum)."""
    top = float(pd.to_numeric(all_points.get(col), errors="coerce").max() or 0.0) if col in all_points else 0.0
    vals = pd.to_numeric(d[col], errors="coerce").fillna(0.0) if col in d else pd.Series([0.0] * len(d))
    if top <= 0:
        return [11.0] * len(d)
    return [8.0 + 26.0 * (max(0.0, float(v)) / top) ** 0.5 for v in vals]


def pareto_staircase(far: Sequence[float], mr: Sequence[float]) -> tuple[list[float], list[float]]:
    """The Pareto front (points sorted by FAR ascending, MR descending) as a staircase polyline
    bounding the dominated region: down from MR = 1 at the first point's FAR, then right to the next
    point's FAR and down to its MR, ..., then right to FAR = 1 at the last point's MR."""
    xs, ys = [far[0]], [1.0]
    for i, (x, y) in enumerate(zip(far, mr)):
        if i:
            xs.append(x)
            ys.append(ys[-1])
        xs.append(x)
        ys.append(y)
    xs.append(1.0)
    ys.append(ys[-1])
    return xs, ys


def _label_positions(x: Sequence[float], y: Sequence[float], near: float = 0.07) -> list[str]:
    """Text positions for labelled markers: below a point when a close neighbour sits above it (or to
    its upper right), else above; left/right chosen to push apart neighbours at the same height."""
    out = []
    for i, (xi, yi) in enumerate(zip(x, y)):
        vert, horiz = "top", "center"
        for j, (xj, yj) in enumerate(zip(x, y)):
            if i == j or abs(xi - xj) > near or abs(yi - yj) > near:
                continue
            if yj > yi or (yj == yi and j < i):
                vert = "bottom"
            horiz = "left" if xj > xi else ("right" if xj < xi else horiz)
        out.append(f"{vert} {horiz}")
    return out


def roc_figure(
    curves: Mapping[str, pd.DataFrame], *, operating: Mapping[str, Mapping[str, float]] | None = None, height: int = 460
) -> go.Figure:
    """ROC curves (x = FPR = FAR, y = TPR = 1 - MR), one per ``curves`` entry (label -> frame with
    columns ``fpr, tpr``), the chance diagonal, and for each label in ``operating`` a marker at its
    operating point (dict with ``far``/``fpr`` and ``mr``/``tpr``; optional ``threshold``)."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, 1], y=[0, 1], mode="lines", name="chance", line=dict(color="#9ca3af", dash="dot"), hoverinfo="skip"
        )
    )
    palette = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777"]
    for i, (label, df) in enumerate(curves.items()):
        color = palette[i % len(palette)]
        fig.add_trace(
            go.Scatter(
                x=df["fpr"],
                y=df["tpr"],
                mode="lines",
                name=plot_text(label),
                line=dict(color=color, width=2, shape="hv"),
                hovertemplate="FPR %{x:.3f} · TPR %{y:.3f}<extra>" + plot_text(label) + "</extra>",
            )
        )
        op = (operating or {}).get(label)
        if op:
            x = op.get("fpr", op.get("far"))
            y = op.get("tpr", 1 - op["mr"] if op.get("mr") is not None else None)
            if x is not None and y is not None:
                thr = op.get("threshold")
                fig.add_trace(
                    go.Scatter(
                        x=[x],
                        y=[y],
                        mode="markers",
                        name=f"operating point: {plot_text(label)}",
                        marker=dict(symbol="x", size=14, color=color, line=dict(width=2)),
                        hovertemplate=(f"threshold {thr:.3f}<br>" if thr is not None else "")
                        + "FAR %{x:.3f} · MR %{customdata:.3f}<extra>operating point</extra>",
                        customdata=[1 - y],
                    )
                )
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=10, b=10),
        xaxis=dict(title="False alarm rate (FPR)", range=[0, 1]),
        yaxis=dict(title="Detection rate (TPR = 1 - MR)", range=[0, 1.02]),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0),
    )
    return fig


def composition_figure(long: pd.DataFrame, height: int = 380) -> go.Figure:
    """Sunburst of the samples: category (inner ring) -> task -> gold label (outer ring; misbehavior
    red, benign green). ``long`` is :func:`composition_frame` output."""
    fig = go.Figure()
    if long.empty:
        return fig
    g = long.groupby(["category", "task", "label"], as_index=False)["n"].sum()
    ids, labels, parents, values, colors = [], [], [], [], []
    cat_colors = {"safety_permission": "#6366f1", "sycophancy_bias": "#0ea5e9", "specification_gaming": "#f59e0b"}
    for cat, gc in g.groupby("category", sort=False):
        ids.append(cat)
        labels.append(vocab.CATEGORY_NAMES.get(cat, cat))
        parents.append("")
        values.append(int(gc["n"].sum()))
        colors.append(cat_colors.get(cat, "#9ca3af"))
        for task, gt in gc.groupby("task", sort=False):
            tid = f"{cat}/{task}"
            ids.append(tid)
            labels.append(vocab.TASK_NAMES.get(task, task))
            parents.append(cat)
            values.append(int(gt["n"].sum()))
            colors.append(cat_colors.get(cat, "#9ca3af") + "aa")
            for lab, n in zip(gt["label"], gt["n"]):
                ids.append(f"{tid}/{lab}")
                labels.append(lab)
                parents.append(tid)
                values.append(int(n))
                colors.append("#ef4444" if lab == "misbehavior" else "#22c55e")
    fig.add_trace(
        go.Sunburst(
            ids=ids,
            labels=labels,
            parents=parents,
            values=values,
            branchvalues="total",
            marker=dict(colors=colors),
            hovertemplate="%{label}: %{value} samples<extra></extra>",
            insidetextorientation="radial",
        )
    )
    fig.update_layout(height=height, margin=dict(l=0, r=0, t=10, b=0))
    return fig


def format_duration(seconds: float | None) -> str:
    """``None`` -> ``"–"``; else ``"12.3 s"``, ``"4 min 05 s"`` or ``"2 h 03 min"``."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "–"
    s = float(seconds)
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


# ---------------------------------------------------------------------------------------------------
# Report -> frames for the trade-off and drill-down pages
# ---------------------------------------------------------------------------------------------------


def slice_key(category: str | None, task: str | None) -> tuple[str, ...]:
    """The ``analysis.run_points`` slice for an optional category and task filter."""
    if category and task:
        return ("category_task", category, task)
    if category:
        return ("category", category)
    if task:
        return ("task", task)
    return ("overall",)


def slice_of(run_entry: Mapping[str, Any], category: str | None, task: str | None) -> dict[str, Any] | None:
    """The SLICE dict of one report run entry for an optional category/task (``None`` if absent)."""
    if category and task:
        return (run_entry.get("by_category_task") or {}).get(category, {}).get(task)
    if category:
        return (run_entry.get("by_category") or {}).get(category)
    if task:
        return (run_entry.get("by_task") or {}).get(task)
    return run_entry.get("overall")


def tradeoff_points(
    report: Mapping[str, Any],
    category: str | None = None,
    task: str | None = None,
    templates: Sequence[str] | None = None,
) -> pd.DataFrame:
    """MR-FAR points of the report's runs for a slice (``analysis.run_points``) plus ``tp, fn, fp, tn``
    and ``on_front`` recomputed over the runs kept by the ``templates`` filter (``None`` = all).

    Columns: run_id, monitor, template, kind, n, mr, far, mr_lo, mr_hi, far_lo, far_hi (Wilson 95%),
    unscored, unscored_rate, tp, fn, fp, tn, on_front.
    """
    from automonitor import analysis
    from automonitor.metrics import pareto_front

    pts = analysis.run_points(dict(report), slice_key(category, task))
    if templates is not None:
        pts = pts[pts["template"].isin(list(templates))].reset_index(drop=True)
    by_id = {e["run_id"]: e for e in report.get("runs", [])}
    for k in ("tp", "fn", "fp", "tn"):
        pts[k] = [((slice_of(by_id[r], category, task) or {}).get(k)) for r in pts["run_id"]]
    pts["on_front"] = pareto_front(list(pts["mr"]), list(pts["far"])) if len(pts) else pd.Series(dtype=bool)
    return pts


def reported_for(
    reported: pd.DataFrame, category: str | None, task: str | None, templates: Sequence[str] | None = None
) -> pd.DataFrame:
    """The paper's reported points matching a slice (overall, or one category; the paper reports no
    task slices), with a ``label`` column "<monitor> (<template>)" for the plot."""
    if reported is None or reported.empty or task:
        return pd.DataFrame(columns=["label", "mr", "far"])
    if category:
        d = reported[(reported["slice"] == "category") & (reported["category"] == category)]
    else:
        d = reported[reported["slice"] == "overall"]
    if templates is not None:
        d = d[d["template"].isin(list(templates))]
    d = d.copy()
    d["label"] = d["monitor"] + " (" + d["template"] + ")"
    return d.reset_index(drop=True)


CELL_TITLES: dict[str, str] = {
    "tp": "TP: misbehavior flagged",
    "fn": "FN: misbehavior missed",
    "fp": "FP: benign flagged (false alarm)",
    "tn": "TN: benign passed",
    "unscored": "Unscored",
}
