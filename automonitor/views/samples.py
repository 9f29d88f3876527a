"""The Samples page and the drill-down's sample queries: the browser's filters, a page of matches, the
export as a contract pair file, one sample with its pair, and the predictions on one sample."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Mapping, Sequence, TypedDict

import pandas as pd
from sqlalchemy.engine import Engine
from typing_extensions import Unpack

from automonitor.data.records import csv_cell_out
from automonitor.data.row_models import PAIR_FIELDS
from automonitor.escaping import md_escape
from automonitor.vocab import EDITIONS

#: The fields of a samples export: the pair file's (:data:`~automonitor.data.row_models.PAIR_FIELDS`) up to
#: ``source``, then the store's ``split``, ``status`` and ``meta``; read from the ``Sample`` columns of the
#: same names (``id`` for ``sample_id``).
EXPORT_FIELDS = (*PAIR_FIELDS[: PAIR_FIELDS.index("source") + 1], "split", "status", "meta")


class SampleFilters(TypedDict, total=False):
    """The samples browser's filters (:func:`store.queries.samples.browser_filter`'s keyword arguments):
    ``search`` matches (case-insensitively, as a substring) the request, the response, the sample id or the
    pair id; each other key gives the allowed values of its column (empty = no filter; ``label_source``: label
    provenance values; ``tier``: the detector ladder's ``surface`` / ``implicit``)."""

    search: str | None
    category: Sequence[str]
    task: Sequence[str]
    label: Sequence[str]
    split: Sequence[str]
    status: Sequence[str]
    source: Sequence[str]
    label_source: Sequence[str]
    tier: Sequence[str]


def search_samples(
    engine: Engine,
    *,
    limit: int | None = 200,
    offset: int = 0,
    with_text: bool = True,
    **filters: Unpack[SampleFilters],
) -> tuple[int, pd.DataFrame]:
    """Samples matching the :class:`SampleFilters` ``filters``: ``(total_count, page_frame)``.

    The frame has columns ``id, pair_id, category, task, label, split, status, source`` (+ ``request``,
    ``response`` when ``with_text``), ordered by category, task, pair id, label; ``limit=None``
    returns every match (used for export).
    """
    from store.queries.samples import BROWSER_COLUMNS, browser_filter, browser_rows, count_matching

    where = browser_filter(**filters)
    cols = [c for c in BROWSER_COLUMNS if with_text or c not in ("request", "response")]
    with engine.connect() as c:
        total = count_matching(c, where)
        rows = browser_rows(c, where, cols, limit=limit, offset=offset)
    return total, pd.DataFrame(rows, columns=cols)


def matching_line(total: int, splits: Sequence[str], statuses: Sequence[str]) -> tuple[str, str]:
    """The Samples page's count line (markdown) and its tooltip: how many samples match, then the split and the
    status filters' values, so a count is never read as another page's, e.g. ``"**17,818** matching samples ·
    split: all · status: gold"`` (an empty filter: ``all``, resp. ``any``). The tooltip says that the test split
    holds every edition's members once, where the Overview's tile counts one edition. Values markdown-escaped."""
    split_text = ", ".join(md_escape(x) for x in splits) if splits else "all"
    status_text = ", ".join(md_escape(x) for x in statuses) if statuses else "any"
    line = f"**{total:,}** matching samples · split: {split_text} · status: {status_text}"
    tip = (
        "Samples in the store that match every filter. Split test holds the members of every edition "
        f"({', '.join(EDITIONS)}) once, so it is larger than the Overview's Gold samples tile, which counts "
        "one edition's test split."
    )
    return line, tip


def pair_file_bytes(rows: Sequence[Sequence[object]], fmt: str) -> bytes:
    """Rows of :data:`EXPORT_FIELDS` as a contract pair file (UTF-8 bytes): JSON lines (``fmt="jsonl"``) or
    CSV with a header (any other ``fmt``; ``meta``, the last column, as a JSON string)."""
    names = list(EXPORT_FIELDS)
    if fmt == "jsonl":
        return "".join(json.dumps(dict(zip(names, r)), ensure_ascii=False) + "\n" for r in rows).encode()
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(names)
    for r in rows:  # spreadsheet-bound: formula-like cells neutralised (records.csv_cell_out)
        values = list(r)
        values[-1] = json.dumps(values[-1] or {}, ensure_ascii=False)
        writer.writerow([csv_cell_out(v) for v in values])
    return buf.getvalue().encode("utf-8")


def export_samples(engine: Engine, fmt: str, **filters: Unpack[SampleFilters]) -> bytes:
    """The filtered samples as a contract pair file: ``fmt`` ``jsonl`` or ``csv`` (UTF-8 bytes).

    Columns: :data:`EXPORT_FIELDS` (``meta`` a JSON object; in CSV a JSON string). Raises ``InputError``
    for another ``fmt``.
    """
    from automonitor.errors import InputError
    from store.queries.samples import browser_filter, browser_rows

    if fmt not in ("jsonl", "csv"):
        raise InputError(f"unknown export format {fmt!r} (jsonl or csv)", field="format")
    where = browser_filter(**filters)
    with engine.connect() as c:
        rows = browser_rows(c, where, ["id", *EXPORT_FIELDS[1:]])
    return pair_file_bytes(rows, fmt)


class SampleDetail(TypedDict):
    """:func:`sample_detail`: a sample and the other side of its pair (dicts of ``Sample`` columns)."""

    sample: dict[str, object]
    other: dict[str, object] | None


def sample_detail(engine: Engine, sample_id: str) -> SampleDetail:
    """One sample with the other side of its pair: ``{"sample": dict, "other": dict|None}``
    (dicts of ``Sample`` columns). Raises ``NotFound`` for an unknown id."""
    from automonitor.errors import NotFound
    from store.queries.samples import sample_with_pair

    with engine.connect() as c:
        found = sample_with_pair(c, sample_id)
    if found is None:
        raise NotFound(f"sample {sample_id!r} not found")
    return {"sample": found[0], "other": found[1]}


def shown_responses(
    engine: Engine, sample: Mapping[str, object], run_ids: Sequence[str]
) -> dict[str, tuple[str, str | None]]:
    """``{run_id: (monitor view, the response as the monitor saw it)}`` for ``sample`` (a
    :func:`sample_detail` sample: response, source, meta) under each run's view (``Run.params["view"]``,
    :func:`automonitor.data.monitor_views.render`); ``full`` gives the stored response, a sample without
    the run's view ``None``."""
    from automonitor.data.monitor_views import render
    from store.queries.analysis import run_views

    out: dict[str, tuple[str, str | None]] = {}
    response, source, meta = str(sample.get("response") or ""), str(sample.get("source") or ""), sample.get("meta")
    for rid, view in run_views(engine, list(run_ids)).items():
        if view == "full":
            out[rid] = (view, response)
            continue
        r = render(response, view, source=source, meta=meta if isinstance(meta, dict) else None)
        out[rid] = (view, None if r is None else r.text)
    return out


def raw_cut_note(raw: str | None, meta: object) -> str | None:
    """What a stored raw monitor answer leaves out: ``"first 8,000 of 1,000,006 characters"`` when the
    prediction's ``meta`` says it was cut on storing (``raw_truncated: true``, ``raw_chars``: the full
    length; :func:`automonitor.runs.monitors.judgement.bounded_raw`), else ``None``. A cut answer without
    a readable ``raw_chars`` reads ``"first 8,000 characters (cut when stored)"``."""
    if not isinstance(meta, dict) or meta.get("raw_truncated") is not True:
        return None
    kept = len(raw or "")
    full = meta.get("raw_chars")
    if isinstance(full, int) and not isinstance(full, bool) and full > kept:
        return f"first {kept:,} of {full:,} characters"
    return f"first {kept:,} characters (cut when stored)"


def score_disagree_note(outcome: str | None, score: float | None, meta: object) -> str | None:
    """What a prediction flagged ``meta.score_disagrees`` (:func:`automonitor.runs.parsing.score_disagrees`)
    shows beside its score: ``"the log-probabilities favour the other side: P(misbehavior) 0.007 beside the
    verdict misbehavior read from the answer's text"``; ``None`` for a prediction without the flag."""
    if not isinstance(meta, dict) or meta.get("score_disagrees") is not True:
        return None
    p = f"{score:.3f}" if isinstance(score, (int, float)) else "?"
    return (
        f"the log-probabilities favour the other side: P(misbehavior) {p} beside the verdict {outcome} "
        "read from the answer's text"
    )


def sample_predictions(
    engine: Engine, sample_id: str, run_ids: Sequence[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Predictions on one sample, by run id: ``{run_id: dict of Prediction columns + monitor,
    template, repeats, raw_note, score_note}``; ``run_ids`` restricts the runs (``None`` = all). The dict is the run's
    verdict (repeat 0); ``repeats`` lists the outcomes of repeats 0..K-1 (``run --repeat K``; one item for a
    run judged once, ``None`` for a pending repeat); ``raw_note`` says how much of a raw answer cut on
    storing is kept (:func:`raw_cut_note`; ``None`` when it is whole); ``score_note`` says that the score
    favours the other side than the verdict (:func:`score_disagree_note`; ``None`` when it does not)."""
    from store.queries.samples import predictions_on_sample

    with engine.connect() as c:
        rows = predictions_on_sample(c, sample_id, run_ids)
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        rep = int(r.get("repeat") or 0)
        if rep == 0:
            out[r["run_id"]] = {
                **r,
                "repeats": out.get(r["run_id"], {}).get("repeats", []),
                "raw_note": raw_cut_note(r.get("raw"), r.get("meta")),
                "score_note": score_disagree_note(r.get("outcome"), r.get("score"), r.get("meta")),
            }
        d = out.setdefault(r["run_id"], {"repeats": []})
        while len(d["repeats"]) <= rep:
            d["repeats"].append(None)
        d["repeats"][rep] = r["outcome"]
    return {k: v for k, v in out.items() if "run_id" in v}
