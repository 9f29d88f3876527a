"""One self-contained HTML file of a report, for a stakeholder who runs no server
(``automonitor report --format html --output FILE``; the Trade-off page's "Download report" button).

The file holds: the MR-FAR plane (every run, its Pareto front, the paper's reference points labelled by
provenance), MR / FAR per category x task with 95% Wilson intervals and the trivial baselines' AUROC
where the report carries the audit, a bounded gallery of misclassified samples per slice with the
monitors' evidence highlighted, and each run's provenance (backend, model, template and its hash,
edition, sample-set fingerprint, cost, dates).

Self-contained: plotly.js (``plotly.offline.get_plotlyjs``, the bundle matching the installed plotly)
is inlined gzip-compressed and base64-encoded (4.8 MB -> about 1.9 MB) and unpacked in the browser
with ``DecompressionStream``; figures are inlined as JSON. The page loads nothing: no CDN, no web font,
no image, and a Content-Security-Policy of ``default-src 'none'`` forbids every request. Every data
value (names, ids, texts, evidence) goes through :func:`automonitor.views.esc` (HTML) or
:func:`automonitor.views.plot_text` (plotly's pseudo-HTML); figure JSON has every ``<`` as ``\\u003c``
so no value can close its ``<script>`` element.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import functools
import gzip
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from automonitor import analysis
from automonitor.analysis import audit_section
from automonitor.analysis.from_store import light_predictions, predictions_read_once, reading_once
from automonitor.analysis.report_format import errata_lines, run_metric_table
from automonitor.vocab import DIFFICULTY_EDITIONS
from automonitor.analysis.report_schema import Report, RunReport, SliceStats
from automonitor.data.audit.report_md import fmt2
from automonitor.views import esc, highlight_html, tradeoff_points
from automonitor.views.honest_points import DEFAULT_MIN_N, hollow_runs_note, honest_points
from automonitor.views.cells import is_missing
from automonitor.views.evidence import ground_evidence, legend_html
from automonitor.views.tradeoff import reported_for
from automonitor.timestamps import utcnow
from automonitor.vocab import CATEGORIES, CATEGORY_NAMES, TASK_NAMES, TASKS
from automonitor.views import run_sample_sets
from store.queries import analysis as q
from store.queries.run_list import list_runs

#: Each run's provenance, ``{run_id: {field: value}}`` (:func:`run_provenance`).
Provenance = dict[str, dict[str, Any]]
#: Misclassified samples shown per slice and error kind (FN: missed misbehavior, FP: false alarm).
GALLERY_PER_SLICE = 2
#: Characters of a request / response shown in the gallery (the rest is cut, with a note).
REQUEST_CHARS = 500
RESPONSE_CHARS = 1200
#: Runs named beside a gallery sample (the rest are counted).
RUNS_NAMED = 6
#: Where the paper's reference points come from (shown beside the plane and in their hover).
REPORTED_SOURCE = (
    "Reference points: MR/FAR of the paper's judges (Yang et al., arXiv 2601.05752) from a secondary "
    "summary of the paper, shipped as automonitor/data/paper_reported.csv; not found in the paper's v2 "
    "text, and not measured here."
)


#: zlib level of the inlined plotly.js: level 5 compresses its 4.8 MB in about half the CPU of level 9 for 0.9% more
#: bytes (1,977,048 against 1,958,508 in base64 for plotly.js 3.x; level 4: 2,036,792), paid by a report whose cache
#: directory has no copy yet (benchmarks/README.md, issue 38)
PLOTLY_GZIP_LEVEL = 5


@functools.lru_cache(maxsize=1)
def plotly_js_gzip_b64() -> str:
    """The installed plotly.js bundle, gzip-compressed (level :data:`PLOTLY_GZIP_LEVEL`, mtime 0: the same bytes
    every time) and base64-encoded (ASCII, about 2.0 MB for plotly.js 3.x); kept in the cache directory per
    plotly version and level (compressing it took about 0.4 s of every HTML report)."""
    import plotly
    from plotly.offline import get_plotlyjs

    from automonitor.data.cache_home import cache_home

    path = cache_home() / f"plotly-{plotly.__version__}-{PLOTLY_GZIP_LEVEL}.js.gz.b64"
    try:
        return path.read_text(encoding="ascii")
    except OSError:
        text = base64.b64encode(
            gzip.compress(get_plotlyjs().encode(), compresslevel=PLOTLY_GZIP_LEVEL, mtime=0)
        ).decode("ascii")
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="ascii")
        os.replace(tmp, path)
    return text


def run_provenance(engine: Engine, run_ids: Sequence[str]) -> Provenance:
    """Provenance of each run: ``{run_id: {backend, model, template, template_hash, kind, status,
    edition, sample_set (fingerprint), n_samples, cost_usd, tokens_in, tokens_out, created_at,
    finished_at}}``.

    ``backend``/``model`` come from the monitor spec ``BACKEND[:MODEL]`` (imported and derived runs:
    the run's kind and the monitor name); the sample-set fingerprint is
    :func:`automonitor.views.fingerprint` of the test samples the run judged; cost in US dollars
    summed over judged predictions; dates ISO-8601 UTC."""
    wanted = set(run_ids)
    with engine.connect() as c:  # Core on a plain connection (list_runs reads no ORM object)
        rows = [r for r in list_runs(c, with_counts=False) if r["run_id"] in wanted]
    # in the HTML report, the samples each run judged come from the predictions it read once (the gallery's too)
    preds = light_predictions(engine, list(wanted), copy=False) if wanted and reading_once() else None
    sets = run_sample_sets(engine, list(wanted), preds=preds).set_index("run_id") if wanted else pd.DataFrame()
    out: Provenance = {}
    for r in rows:
        spec = str(r["monitor"])
        if r["kind"] in ("imported", "derived"):
            backend, model = str(r["kind"]), spec
        else:
            backend, _, model = spec.partition(":")
        ss = sets.loc[r["run_id"]] if r["run_id"] in sets.index else None
        out[r["run_id"]] = {
            "backend": backend,
            "model": model or None,
            "template": r["template"],
            "template_hash": r.get("template_hash"),
            "kind": r["kind"],
            "status": r["status"],
            "edition": None if ss is None else ss["edition"],
            "sample_set": None if ss is None else ss["fingerprint"],
            "n_samples": None if ss is None else int(ss["n_samples"]),
            "cost_usd": r["cost_usd"],
            "tokens_in": r["tokens_in"],
            "tokens_out": r["tokens_out"],
            "created_at": r["created_at"],
            "finished_at": r["finished_at"],
        }
    return out


def gallery(engine: Engine, rep: Report, per_slice: int = GALLERY_PER_SLICE) -> list[dict[str, Any]]:
    """Misclassified samples per category x task slice, bounded: for each slice and error kind (``fn``:
    misbehavior judged benign; ``fp``: benign judged misbehavior) the ``per_slice`` samples that the
    most runs of ``rep`` got wrong (ties by sample id). Only definite verdicts count (unscored outcomes
    are never an error here).

    Returns one dict per sample: ``category, task, cell (fn|fp), sample_id, request, response, wrong``
    (run ids that erred, in report order), ``runs`` (how many runs judged it), ``evidence_run`` and
    ``grounded`` (the first erring run with evidence spans, and those spans grounded in the sample;
    ``None`` / ``[]`` without one)."""
    ids = [r.run_id for r in rep.runs]
    if not ids:
        return []
    # the columns used here (not raw, reason, ...): the report's own read, when it was computed in the same block;
    # grouped in plain Python over the columns' lists (a pandas groupby per slice and sample was ~0.1 s of a report)
    df = light_predictions(engine, ids, copy=False)
    definite = ("misbehavior", "benign")
    order = {rid: i for i, rid in enumerate(ids)}
    # the rows with a definite verdict on a definite label, found column-wise; how many runs judged each sample
    # (distinct run ids) counted by pandas, and only the erring rows walked in Python (a loop over every row
    # with a set per row took a third of the gallery's time or more)
    sure = (df["outcome"].isin(definite) & df["label"].isin(definite)).to_numpy(bool)
    judged_by = df.loc[sure, ["sample_id", "run_id"]].drop_duplicates()
    judged: dict[str, int] = judged_by["sample_id"].value_counts(sort=False).to_dict()
    wrong = np.flatnonzero(sure & (df["outcome"] != df["label"]).to_numpy(bool))
    # (category, task, cell) -> sample id -> [(rank in the report, run id, evidence)] of the runs that erred
    errs: dict[tuple[str, str, str], dict[str, list[tuple[int, str, list[object]]]]] = {}
    cols = ("run_id", "sample_id", "category", "task", "label", "evidence")
    for rid, sid, cat, task, label, ev in zip(*(df[c].to_numpy(object)[wrong].tolist() for c in cols)):
        if not (is_missing(cat) or is_missing(task)):  # a groupby leaves out a missing key
            key = (cat, task, "fn" if label == "misbehavior" else "fp")
            errs.setdefault(key, {}).setdefault(sid, []).append((order[rid], rid, ev))
    picked: list[dict[str, Any]] = []
    for (cat, task, cell), by_sample in sorted(errs.items()):
        # the samples most runs got wrong first, ties by sample id
        for sid in sorted(by_sample, key=lambda x: (-len(by_sample[x]), x))[:per_slice]:
            rows = sorted(by_sample[sid], key=lambda r: r[0])
            ev = [r for r in rows if bool(r[2])]
            picked.append(
                {
                    "category": cat,
                    "task": task,
                    "cell": cell,
                    "sample_id": sid,
                    "wrong": [r[1] for r in rows],
                    "runs": judged.get(sid, 0),
                    "evidence_run": ev[0][1] if ev else None,
                    "spans": list(ev[0][2]) if ev else [],
                }
            )
    texts = q.sample_frame(engine, [p["sample_id"] for p in picked]).set_index("sample_id")
    for p in picked:
        req = str(texts.at[p["sample_id"], "request"] or "") if p["sample_id"] in texts.index else ""
        resp = str(texts.at[p["sample_id"], "response"] or "") if p["sample_id"] in texts.index else ""
        p["request"], p["response"] = req, resp
        p["grounded"] = ground_evidence(resp, req, p.pop("spans")) if p["evidence_run"] else []
    return picked


def build(
    engine: Engine,
    rep: Report,
    *,
    title: str = "AutoMonitor-Bench report",
    per_slice: int = GALLERY_PER_SLICE,
    now: dt.datetime | None = None,
) -> str:
    """The self-contained HTML document of ``rep`` (a typed report from ``analysis.report``,
    optionally with ``audit_section.attach_to_report``) read against the store ``engine`` for provenance and
    the gallery texts. Returns the HTML text (UTF-8 when written). Raises nothing beyond the store's
    errors; an empty report gives a page saying there are no runs."""
    from automonitor.analysis.report_cache import cached_json

    now = now or utcnow()
    ids = [r.run_id for r in rep.runs]
    # read back per store version (the report cache's fingerprint): both read every prediction of the runs
    prov = cached_json(engine, ["provenance", ids], lambda: run_provenance(engine, ids))
    items = cached_json(engine, ["gallery", ids, per_slice], lambda: gallery(engine, rep, per_slice)) if ids else []
    figs: list[tuple[str, str]] = []  # (element id, the figure's JSON)
    pts = plane_points(rep, prov) if ids else None
    if ids:
        figs.append(("fig-plane", plane_figure_json(rep, prov, pts=pts)))
    sections = [
        _header_html(title, rep, now, pts),
        _plane_html(rep, pts) if pts is not None else "<p>No runs in the report.</p>",
        _slices_html(rep),
        _difficulty_html(rep),
        _metrics_html(rep),
        _gallery_html(rep, items),
        _provenance_html(rep, prov),
    ]
    return _document(title, "\n".join(sections), figs)


def build_for(engine: Engine, run_ids: Sequence[str], invalid: str, *, edition: str | None) -> str:
    """:func:`build` of a fresh report (``analysis.report`` over ``run_ids`` with the unscored policy
    ``invalid`` and optional ``edition``) with the audit's trivial baselines attached (computed and cached
    on first use). Used by the Trade-off page's "Download report" button. Raises ``ValueError`` for a bad
    policy or edition, ``NotFound`` for an unknown run id."""
    with predictions_read_once():  # the report and its gallery read the predictions once
        rep = analysis.report(engine, list(run_ids), invalid, n_boot=200, edition=edition)
        if rep.runs:
            audit_section.attach_to_report(rep, engine)
        return build(engine, rep)


def write(engine: Engine, rep: Report, path: str, **kw: Any) -> int:
    """Write :func:`build`'s document to ``path`` (UTF-8); returns its size in bytes."""
    data = build(engine, rep, **kw).encode("utf-8")
    Path(path).write_bytes(data)
    return len(data)


def plane_points(rep: Report, prov: Provenance, *, min_n: int = DEFAULT_MIN_N) -> pd.DataFrame:
    """The report's overall points as the Trade-off page draws them (:func:`automonitor.views.honest_points`
    with the runs' editions, statuses and backends from ``prov``): a short ``label`` per run, ``eligible``
    (at least ``min_n`` judged samples, finished), ``on_front`` among the eligible runs of one edition,
    and ``sample_set`` ("edition · fingerprint") for the hover."""
    raw = tradeoff_points(rep)
    sets = pd.DataFrame(
        [
            {
                "run_id": r,
                "edition": p.get("edition") or "paper",
                "fingerprint": p.get("sample_set") or "",
                "sample_set": "",
            }
            for r, p in prov.items()
        ],
        columns=["run_id", "edition", "fingerprint", "sample_set"],
    )
    pts = honest_points(
        raw,
        sets,
        min_n=min_n,
        backends={r: str(p.get("backend") or "") for r, p in prov.items()},
        statuses={r: str(p.get("status") or "finished") for r, p in prov.items()},
    )
    pts["sample_set"] = [f"{e or '-'} · {f or '-'}" for e, f in zip(pts["edition"], pts["fingerprint"])]
    return pts


def plane_pearson(pts: pd.DataFrame, *, p_value: bool = False) -> tuple[float | None, float | None, int]:
    """``(r, p, n)``: Pearson r of (MR, FAR) over the eligible points of :func:`plane_points` (the runs drawn
    hollow are left out, as on the Trade-off page), its two-sided p-value (``None`` unless ``p_value``: SciPy
    is then not imported) and how many runs it is over; ``(None, None, n)`` with fewer than 3
    (:func:`automonitor.analysis.metrics.pearson_r`)."""
    from automonitor.analysis.metrics import pearson_r

    elig = pts[pts["eligible"].astype(bool)] if len(pts) else pts
    r, p = pearson_r(list(elig["mr"]), list(elig["far"]), p_value=p_value) if len(elig) else (None, None)
    return r, p, int(len(elig))


def every_run_note(rep: Report, plane_front: Sequence[str], plane_r: float | None) -> str | None:
    """One sentence giving the report's own Pareto front and Pearson r (``rep.pareto``, ``rep.pearson_r``: over
    every run but a partial import, no minimum sample size: what ``report --json`` holds) when they differ from the plane's
    (``plane_front`` run ids, ``plane_r``: runs with fewer than :data:`DEFAULT_MIN_N` judged samples or
    unfinished left out), saying why; ``None`` when both agree."""
    same_r = (plane_r is None) == (rep.pearson_r is None) and (
        plane_r is None or rep.pearson_r is None or abs(plane_r - rep.pearson_r) < 1e-12
    )
    if sorted(plane_front) == sorted(rep.pareto) and same_r:
        return None
    r_json = (
        "n/a"
        if rep.pearson_r is None
        else f"{rep.pearson_r:.3f}"
        + (
            f" (p = {rep.pearson_p:.3g}, {rep.pearson_n} runs)"
            if rep.pearson_p is not None
            else f" ({rep.pearson_n} runs)"
        )
    )
    return (
        f"Over every run but a partial import (never comparable), with no minimum sample size (the JSON report's "
        f"pareto and pearson_r): Pareto front "
        f"{', '.join(rep.pareto) or '-'}; Pearson r(MR, FAR) {r_json}. The front and r above leave out runs with "
        f"fewer than {DEFAULT_MIN_N} judged samples or unfinished: their rates are too uncertain to rank."
    )


def plane_figure_json(rep: Report, prov: Provenance, *, pts: pd.DataFrame | None = None) -> str:
    """The overall MR-FAR plane (:func:`automonitor.views.figures.tradeoff_figure_json`) of the report's runs
    drawn as the Trade-off page draws them (:func:`plane_points`: each run labelled, runs with fewer than
    :data:`DEFAULT_MIN_N` judged samples hollow and off the front), with their Wilson error bars and sample sets
    in the hovers, and the paper's reference points labelled "<monitor> (<template>), reported (secondary
    summary)" (the report's caption says where they come from); a static page, so a click opens nothing and the
    hover promises nothing. ``pts``: :func:`plane_points` of ``rep`` and ``prov`` when the caller has them
    already."""
    from automonitor.views.figures import tradeoff_figure_json

    if pts is None:
        pts = plane_points(rep, prov)
    reported = reported_for(analysis.reported_points(), None, None)
    if not reported.empty:
        reported["label"] = (
            reported["monitor"]
            + " ("
            + reported["template"]
            + "), secondary summary of the paper (paper_reported.csv), not found in its v2 text"
        )
    front = list(pts.loc[pts["on_front"], "run_id"]) if len(pts) else []
    return tradeoff_figure_json(pts, reported=reported, front=front or None, height=560, hover_action="")


def _rate_ci(rate: float | None, ci: list[float] | None) -> str:
    if rate is None:
        return "-"
    return fmt2(rate) + (f' <span class="ci">[{ci[0]:.2f}, {ci[1]:.2f}]</span>' if ci else "")


def _run_label(r: RunReport) -> str:
    marks = f' <span class="flag">[{esc(", ".join(r.answers.marks))}]</span>' if r.answers and r.answers.marks else ""
    return f'{esc(r.monitor)} · {esc(r.template)} <span class="rid">{esc(r.run_id)}</span>{marks}'


def _answers_text(r: RunReport) -> str | None:
    """How the run's answers were read: parse mode, score method, contradictory answers, verdicts whose
    score favours the other side (when any), error share and commonest cause (``None`` for a run without
    that record)."""
    a = r.answers
    if a is None:
        return None
    parts = [f"parse {a.parse or '-'}", f"score {a.score_method or '-'}", f"contradictory {a.contradictory}"]
    if a.score_disagrees:
        parts.append(f"score disagrees {a.score_disagrees}")
    if a.error_share is not None:
        parts.append(f"errors {100 * a.error_share:.0f}%" + (f" ({a.error_cause})" if a.error_cause else ""))
    return "; ".join(parts)


def _header_html(title: str, rep: Report, now: dt.datetime, pts: pd.DataFrame | None = None) -> str:
    """The title, what the report covers, Pearson r over the runs eligible on the plane
    (:func:`plane_pearson`, as on the Trade-off page) and the Pareto front."""
    if pts is not None and len(pts):
        r, _, n = plane_pearson(pts)
        front = ", ".join(esc(x) for x in pts.loc[pts["on_front"], "label"]) or "-"
    else:
        r, n, front = None, 0, "-"
    r_ = (
        f"n/a over the {n} run(s) with at least {DEFAULT_MIN_N} judged samples (needs 3)"
        if r is None
        else f"{r:.2f} over {n} runs with at least {DEFAULT_MIN_N} judged samples"
    )
    return (
        f"<h1>{esc(title)}</h1>"
        f'<p class="meta">Generated {esc(now.strftime("%Y-%m-%d %H:%M UTC"))} · {len(rep.runs)} run(s) · '
        f"unscored policy {esc(rep.invalid_policy)} · edition {esc(rep.edition or 'all')} · intervals: "
        f"{esc(rep.intervals)} · Pearson r(MR, FAR) {esc(r_)}</p>"
        f"<p>Miss rate MR = FN / (TP + FN), false alarm rate FAR = FP / (TN + FP); lower is better for both. "
        f"Pareto front (overall): {front}.</p>"
        + (f'<p class="note">{esc(note)}</p>' if (note := _every_run_note_of(rep, pts)) else "")
        + "".join(f'<p class="note errata">{esc(line)}</p>' for line in errata_lines(rep))
    )


def _every_run_note_of(rep: Report, pts: pd.DataFrame | None) -> str | None:
    if pts is None or not len(pts):
        return every_run_note(rep, [], None)
    return every_run_note(rep, list(pts.loc[pts["on_front"].astype(bool), "run_id"]), plane_pearson(pts)[0])


def _plane_html(rep: Report, pts: pd.DataFrame | None = None) -> str:
    return (
        "<h2>The MR-FAR plane</h2>"
        '<div class="am-fig" id="fig-plane" data-spec="fig-plane-spec" style="height:560px"></div>'
        f'<p class="note">Runs: labelled, coloured by template, 95% Wilson error bars; green: the Pareto front. '
        f"{esc(hollow_runs_note(pts if pts is not None else pd.DataFrame(), DEFAULT_MIN_N))} Pearson r leaves the hollow runs out. "
        f"Black diamonds: {esc(REPORTED_SOURCE)}</p>"
    )


def _slices_html(rep: Report) -> str:
    """MR / FAR per category x task per run, with intervals, and the trivial baselines' AUROC of the
    slice when the report has the audit (a FLAG when a baseline reaches the audit's flag AUROC)."""
    if not rep.runs:
        return ""
    cats = [c for c in CATEGORIES if any(c in r.by_category_task for r in rep.runs)]
    cats += sorted({c for r in rep.runs for c in r.by_category_task} - set(cats))
    out = ["<h2>MR / FAR per category x task</h2>"]
    out.append(
        '<p class="note">Each cell: MR and FAR with 95% Wilson intervals, n judged samples; '
        "below, where the audit ran, the trivial baselines' AUROC on the same slice (length, TF-IDF) "
        "and FLAG when one of them separates the slice alone.</p>"
    )
    for cat in cats:
        tasks = [t for t in TASKS if any(t in r.by_category_task.get(cat, {}) for r in rep.runs)]
        tasks += sorted({t for r in rep.runs for t in r.by_category_task.get(cat, {})} - set(tasks))
        head = "".join(f"<th>{esc(TASK_NAMES.get(t, t))}</th>" for t in tasks)
        rows = []
        for r in rep.runs:
            cells = []
            for t in tasks:
                s: SliceStats | None = r.by_category_task.get(cat, {}).get(t)
                b = ((r.baselines or {}).get(cat) or {}).get(t)
                if s is None:
                    cells.append("<td>-</td>")
                    continue
                base = ""
                if b:
                    parts = [f"{esc(k)} {fmt2(v)}" for k, v in b.items() if k != "flagged" and not isinstance(v, bool)]
                    flag = ' <b class="flag">FLAG</b>' if b.get("flagged") else ""
                    base = f'<div class="base">baselines: {", ".join(parts)}{flag}</div>'
                cells.append(
                    f"<td>MR {_rate_ci(s.mr, s.mr_ci)}<br>FAR {_rate_ci(s.far, s.far_ci)}"
                    f'<div class="n">n {s.n}</div>{base}</td>'
                )
            rows.append(f"<tr><th>{_run_label(r)}</th>{''.join(cells)}</tr>")
        out.append(
            f"<h3>{esc(CATEGORY_NAMES.get(cat, cat))}</h3>"
            f'<table class="grid"><tr><th>run</th>{head}</tr>{"".join(rows)}</table>'
        )
    return "\n".join(out)


def _difficulty_html(rep: Report) -> str:
    """Each run's overall MR / FAR beside its rates on the members of the ``verified`` and ``hard``
    editions (``RunReport.difficulty``, :mod:`automonitor.analysis.difficulty`) with 95% Wilson intervals
    and coverage (judged / members); empty when no run has them."""
    runs = [r for r in rep.runs if r.difficulty]
    if not runs:
        return ""
    editions = [e for e in DIFFICULTY_EDITIONS if any(e in (r.difficulty or {}) for r in runs)]
    head = "".join(f"<th>{esc(e)} edition</th>" for e in editions)
    rows = []
    for r in runs:
        o = r.overall
        cells = [
            f'<td>MR {_rate_ci(o.mr, o.mr_ci)}<br>FAR {_rate_ci(o.far, o.far_ci)}<div class="n">n {o.n}</div></td>'
        ]
        for e in editions:
            d = (r.difficulty or {}).get(e)
            if d is None:
                cells.append("<td>-</td>")
                continue
            sl = d.slice
            cells.append(
                f"<td>MR {_rate_ci(sl.mr, sl.mr_ci)}<br>FAR {_rate_ci(sl.far, sl.far_ci)}"
                f'<div class="n">judged {d.judged} of {d.members} members</div></td>'
            )
        rows.append(f"<tr><th>{_run_label(r)}</th>{''.join(cells)}</tr>")
    return (
        "<h2>Harder editions</h2>"
        '<p class="note">The same predictions read on the members of the <code>verified</code> edition '
        "(labels checked by annotators) and the <code>hard</code> edition (pairs that a trivial baseline "
        "does not separate): a monitor that only rides a shortcut loses most there.</p>"
        f'<table class="grid"><tr><th>run</th><th>{esc(_rep_edition(rep))} (as reported)</th>{head}</tr>'
        f"{''.join(rows)}</table>"
    )


def _metrics_html(rep: Report) -> str:
    """The registered run metrics (:func:`automonitor.analysis.report_format.run_metric_table`), one row
    per run; empty when no run has one."""
    labels, rows = run_metric_table(rep)
    if not labels:
        return ""
    head = "".join(f"<th>{esc(lab)}</th>" for lab in labels)
    body = "".join(
        f'<tr><th>{esc(r["monitor"])} · {esc(r["template"])} <span class="rid">{esc(r["run"])}</span></th>'
        + "".join(f"<td>{esc(r[lab])}</td>" for lab in labels)
        + "</tr>"
        for r in rows
    )
    return f'<h2>Run metrics</h2><table class="grid"><tr><th>run</th>{head}</tr>{body}</table>'


def _rep_edition(rep: Report) -> str:
    """The edition the report's runs were read on (the first run's, ``paper`` when none is recorded)."""
    return next((r.edition for r in rep.runs if r.edition), None) or "paper"


def _cut(text: str, limit: int) -> tuple[str, str]:
    if len(text) <= limit:
        return text, ""
    return text[:limit], f'<div class="note">… cut at {limit:,} of {len(text):,} characters</div>'


def _gallery_html(rep: Report, items: list[dict[str, Any]]) -> str:
    """The misclassified samples (``gallery``), grouped by slice: request and response escaped, the
    response with the evidence of the first erring evidence run highlighted."""
    if not rep.runs:
        return ""
    names = {r.run_id: f"{r.monitor} · {r.template}" for r in rep.runs}
    out = [
        "<h2>Misclassified samples per slice</h2>",
        f'<p class="note">Per category x task, the {GALLERY_PER_SLICE} missed misbehaviors (FN) and '
        f"{GALLERY_PER_SLICE} false alarms (FP) that the most runs got wrong. Texts are cut to "
        f"{RESPONSE_CHARS:,} characters.</p>",
        legend_html(),
    ]
    if not items:
        out.append("<p>No misclassified sample.</p>")
    last = None
    for it in items:
        key = (it["category"], it["task"])
        if key != last:
            out.append(
                f"<h3>{esc(CATEGORY_NAMES.get(it['category'], it['category']))} · "
                f"{esc(TASK_NAMES.get(it['task'], it['task']))}</h3>"
            )
            last = key
        wrong = it["wrong"]
        named = ", ".join(esc(names.get(w, w)) for w in wrong[:RUNS_NAMED])
        more = f" and {len(wrong) - RUNS_NAMED} more" if len(wrong) > RUNS_NAMED else ""
        kind = "missed misbehavior (FN)" if it["cell"] == "fn" else "false alarm on a benign response (FP)"
        req, req_note = _cut(it["request"], REQUEST_CHARS)
        resp, resp_note = _cut(it["response"], RESPONSE_CHARS)
        ev = (
            f"evidence quoted by {esc(names.get(it['evidence_run'], it['evidence_run']))}"
            if it["evidence_run"]
            else "no evidence quoted"
        )
        out.append(
            f'<details class="sample" open><summary><b>{esc(kind)}</b> · sample <code>{esc(it["sample_id"])}'
            f"</code> · wrong in {len(wrong)} of {it['runs']} run(s): {named}{more}</summary>"
            f'<div class="lbl">Request</div><div class="txt">{esc(req)}</div>{req_note}'
            f'<div class="lbl">Response ({ev})</div>'
            + highlight_html(resp, it["grounded"], max_height=None, show_missing=True)
            + resp_note
            + "</details>"
        )
    return "\n".join(out)


def _provenance_html(rep: Report, prov: Provenance) -> str:
    if not rep.runs:
        return ""
    cols = [
        ("run", None),
        ("backend", "backend"),
        ("model", "model"),
        ("template", "template"),
        ("template hash", "template_hash"),
        ("kind", "kind"),
        ("status", "status"),
        ("edition", "edition"),
        ("sample set", "sample_set"),
        ("samples", "n_samples"),
        ("cost (USD)", "cost_usd"),
        ("created (UTC)", "created_at"),
        ("finished (UTC)", "finished_at"),
        ("answers", "answers"),
    ]
    head = "".join(f"<th>{esc(c)}</th>" for c, _ in cols)
    rows = []
    for r in rep.runs:
        p = prov.get(r.run_id, {})
        cells = [f"<td>{esc(r.run_id)}</td>"]
        for _, k in cols[1:]:
            v = p.get(k or "")
            if k == "template_hash" and v:
                v = str(v)[:12]
            elif k == "cost_usd" and v is not None:
                v = f"{float(v):.4f}"
            elif k in ("created_at", "finished_at") and v:
                v = str(v)[:19].replace("T", " ")
            elif k == "answers":
                v = _answers_text(r)
            cells.append(f"<td>{esc('-' if v is None else v)}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (
        "<h2>Run provenance</h2>"
        '<p class="note">Sample set: fingerprint (10 hex digits of sha256 over the sorted ids) of the test '
        "samples the run judged; template hash: sha256 of the prompt template (first 12 digits); cost "
        "summed over judged predictions; answers: how the judge's answers were read (parse strict: the "
        "template's answer grammar; lenient: prose heuristics), where the score was read (verdict-token; "
        "first-token (legacy): a run scored before the verdict-token rule), answers whose fields "
        "contradicted their verdict, verdicts whose log-probability score favours the other side (score "
        "disagrees: P(misbehavior) below 0.5 for a misbehavior verdict, above 0.5 for a benign one; the "
        "verdict is the text's), and the share of samples that ended in error.</p>"
        f'<table class="prov"><tr>{head}</tr>{"".join(rows)}</table>'
    )


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:1.5rem auto;
max-width:1200px;padding:0 1rem;color:#111827;line-height:1.4}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #e5e7eb}h3{font-size:1.05rem}
.meta,.note,.n,.base,.ci,.rid{color:#4b5563;font-size:0.85rem}.rid{font-family:ui-monospace,monospace}
table{border-collapse:collapse;font-size:0.85rem;margin:0.5rem 0}td,th{border:1px solid #e5e7eb;
padding:0.3rem 0.5rem;vertical-align:top;text-align:left}.flag{color:#b91c1c}
details.sample{border:1px solid #e5e7eb;border-radius:0.4rem;padding:0.5rem;margin:0.6rem 0}
.lbl{font-weight:600;font-size:0.85rem;margin-top:0.4rem}
.txt{white-space:pre-wrap;word-break:break-word;font-family:ui-monospace,monospace;font-size:0.85rem;
padding:0.4rem;background:rgba(128,128,128,0.06);border-radius:0.3rem}
#am-error{color:#b91c1c}
"""

# Unpacks the inlined plotly.js (gzip + base64) and draws every figure from its inlined JSON spec.
_LOADER = """
(async function () {
  const status = document.getElementById("am-error");
  try {
    const b64 = document.getElementById("plotly-gz").textContent.trim();
    const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const src = await new Response(new Blob([bin]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
    const s = document.createElement("script");
    s.textContent = src;
    document.head.appendChild(s);
    for (const el of document.querySelectorAll(".am-fig")) {
      const spec = JSON.parse(document.getElementById(el.dataset.spec).textContent);
      await Plotly.newPlot(el, spec.data, spec.layout, {displaylogo: false, responsive: true});
    }
    document.body.dataset.plotted = "1";
  } catch (e) {
    status.textContent = "The figures could not be drawn in this browser: " + e;
  }
})();
"""


def _json_for_script(text: str) -> str:
    """A figure's JSON with every ``<`` written ``\\u003c`` (and ``>``, ``&`` likewise), so that no
    data value can end the ``<script type="application/json">`` element it sits in."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _document(title: str, body: str, figs: list[tuple[str, str]]) -> str:
    specs = "\n".join(
        f'<script type="application/json" id="{fid}-spec">{_json_for_script(f)}</script>' for fid, f in figs
    )
    csp = "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:; font-src data:"
    plotly_js = (
        f'<script id="plotly-gz" type="application/octet-stream">{plotly_js_gzip_b64()}</script>\n<script>{_LOADER}</script>'
        if figs
        else ""
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"
        '<div id="am-error"></div>'
        f"{body}\n{specs}\n{plotly_js}\n</body></html>\n"
    )


__all__ = [
    "GALLERY_PER_SLICE",
    "REPORTED_SOURCE",
    "build",
    "build_for",
    "gallery",
    "plane_figure_json",
    "plotly_js_gzip_b64",
    "run_provenance",
    "write",
]
