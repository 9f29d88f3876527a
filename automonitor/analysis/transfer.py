"""Cross-slice transfer of trained probes (the paper's fine-tuning probe question, with linear probes).

``transfer_matrix`` trains one probe per training slice (each category x task cell of the corpus with at
least 2 records of each label, plus ``all``) and scores every test slice (each category x task cell of
the test set, plus ``all``). Per cell: TP/FN/FP/TN at the probe's 0.5 threshold, miss rate
MR = FN/(TP+FN) and false alarm rate FAR = FP/(TN+FP) with 95% Wilson intervals, AUROC with a 95%
interval from the Hanley & McNeil (1982, Radiology 143:29-36) standard error, and n. Each test slice also
carries the trivial baselines (:func:`trivial_baselines`: response length, in-slice
TF-IDF + LR) so that a probe that only learned a shortcut is visible as such. The paper's full Figure 8
(v2, Appendix C: MR and FAR, 7 training rows x 6 test slices; :func:`paper_figure8`, data file
``automonitor/data/paper_figure8.csv``) is shown beside the measured matrix, cell for cell where the
slices match; the cell that answers the paper's question is ``safety_permission/code ->
specification_gaming/code``.

JSON (the CLI contract's ``probe transfer --json``): ``{"slices": [name...], "cells": [{"train", "test", "mr", "far",
"auroc", "n", ...}]}`` plus ``features``, ``train_slices``, ``test_slices``, ``baselines``, ``paper``,
``highlight``, ``artifacts`` (the cards of the probes trained).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence, TypedDict, cast

import numpy as np
import numpy.typing as npt

from automonitor.analysis.metrics import auroc as _auroc
from automonitor.analysis.metrics import ConfusionRates, confusion_rates
from automonitor.data.audit.report_md import fmt2
from automonitor.escaping import plot_text
from automonitor.runs.probe.model import cut_texts

if TYPE_CHECKING:
    import pandas as pd
    from plotly.graph_objects import Figure
    from sqlalchemy.engine import Engine

    from automonitor.runs.probe.corpus import CorpusEntry
    from automonitor.runs.probe.model import EmbedFeatures, Probe, ProbeCard

HIGHLIGHT = {"train": "safety_permission/code", "test": "specification_gaming/code"}
Ints = npt.NDArray[np.int_]
Floats = npt.NDArray[np.float64]
Texts = npt.NDArray[np.str_]


class PaperCell(TypedDict, total=False):
    """One cell of the paper's Figure 8 (:func:`paper_cells`): its training row and test slice, ours, MR, FAR."""

    paper_train: str
    train: str
    variant: str
    paper_test: str
    test: str
    source: str
    mr: float
    far: float


class CellStats(ConfusionRates):
    """:func:`cell_stats` of one probe on one test slice."""

    auroc: float | None
    auroc_ci: list[float] | None


class TransferCell(CellStats):
    """A cell of the transfer matrix: the probe trained on ``train`` scored on ``test``."""

    train: str
    test: str
    same_slice: bool
    highlight: bool


class TransferResult(TypedDict):
    """The transfer JSON (module docstring; :func:`transfer_matrix`)."""

    features: str
    threshold: float
    slices: list[str]
    train_slices: list[str]
    test_slices: list[str]
    cells: list[TransferCell]
    baselines: dict[str, dict[str, float | None]]
    paper: list[PaperCell]
    highlight: dict[str, str]
    artifacts: list[ProbeCard]


FIGURE8_SOURCE = (
    "Yang et al. 2026, AutoMonitor-Bench (arXiv 2601.05752 v2), Appendix C, Figure 8 "
    "(LoRA on Qwen3-4B-Instruct-2507; reported, not measured here)"
)


def paper_figure8() -> pd.DataFrame:
    """The paper's Figure 8 (v2, Appendix C): MR and FAR of LoRA-tuned Qwen3-4B-Instruct-2507 judges,
    7 training rows (``base (none)``, S&PV Code, S&PV QA, Syco QA, Syco Reasoning without / with
    thinking, All) x 6 test slices, from the package data file ``automonitor/data/paper_figure8.csv``
    (its header names the source). Columns: metric (``mr`` | ``far``), paper_train, train_slice (our
    slice name; ``none`` for the untuned base, ``all``), variant (``thinking`` | ``no thinking`` | ""),
    paper_test, test_slice, value in [0, 1]; 84 rows."""
    from importlib import resources

    import pandas as pd

    path = resources.files("automonitor") / "data" / "paper_figure8.csv"
    with resources.as_file(path) as fp:
        df = pd.read_csv(fp, comment="#", dtype=str, keep_default_na=False)
    df["value"] = df["value"].astype(float)
    return df


def paper_cells() -> list[PaperCell]:
    """Figure 8 as cells ``{"paper_train", "train", "variant", "paper_test", "test", "mr", "far",
    "source"}`` (42: one per training row x test slice), ``train``/``test`` in our slice names."""
    df = paper_figure8()
    cells: dict[tuple[str, str], PaperCell] = {}
    for r in df.itertuples(index=False):
        c = cells.setdefault(
            (r.paper_train, r.paper_test),
            {
                "paper_train": r.paper_train,
                "train": r.train_slice,
                "variant": r.variant,
                "paper_test": r.paper_test,
                "test": r.test_slice,
                "source": FIGURE8_SOURCE,
            },
        )
        if r.metric == "mr":
            c["mr"] = float(r.value)
        else:
            c["far"] = float(r.value)
    return list(cells.values())


def hanley_mcneil_ci(a: float | None, n_pos: int, n_neg: int, z: float = 1.959964) -> list[float] | None:
    """95% interval of an AUROC from the Hanley & McNeil (1982) standard error
    ``se^2 = (A(1-A) + (n1-1)(Q1-A^2) + (n2-1)(Q2-A^2)) / (n1 n2)``, ``Q1 = A/(2-A)``,
    ``Q2 = 2A^2/(1+A)``; clipped to [0, 1]. ``None`` when ``a`` is None or a class is empty."""
    if a is None or n_pos == 0 or n_neg == 0:
        return None
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    var = (a * (1 - a) + (n_pos - 1) * (q1 - a * a) + (n_neg - 1) * (q2 - a * a)) / (n_pos * n_neg)
    se = math.sqrt(max(var, 0.0))
    return [max(0.0, a - z * se), min(1.0, a + z * se)]


def cell_stats(labels: Ints, scores: Floats, threshold: float = 0.5) -> CellStats:
    """Confusion counts, MR/FAR with Wilson intervals and AUROC with a Hanley-McNeil interval.

    Args: ``labels`` (n,) ints 1 = misbehavior; ``scores`` (n,) P(misbehavior). Returns a dict with
    ``n, tp, fn, fp, tn, mr, mr_ci, far, far_ci, auroc, auroc_ci`` (rates None when undefined)."""
    rates = confusion_rates(scores >= threshold, labels == 1)
    a = _auroc(labels.tolist(), np.clip(scores, 0, 1).tolist()) if len(labels) else None
    pos, neg = rates["tp"] + rates["fn"], rates["fp"] + rates["tn"]
    return {**rates, "auroc": a, "auroc_ci": hanley_mcneil_ci(a, pos, neg)}


def test_rows(engine: Engine) -> list[dict[str, str]]:
    """Gold test samples with texts: ``{id, pair_id, category, task, label, request, response}``.
    (Uses every gold ``test`` sample; with editions in the store this is where ``paper`` filters.)"""
    from store import session_scope
    from store.queries.probes import gold_test_texts

    with session_scope(engine) as s:
        return gold_test_texts(s)


def _trainable_slices(by_cell: dict[str, list[CorpusEntry]]) -> list[str]:
    """The cells with at least 2 records of each label, sorted, then ``all``.

    Raises:
        InputError: no such cell (field ``on``).
    """
    from automonitor.errors import InputError

    slices = [
        c
        for c in sorted(by_cell)
        if sum(r.label == "misbehavior" for r in by_cell[c]) >= 2 and sum(r.label == "benign" for r in by_cell[c]) >= 2
    ]
    if not slices:
        raise InputError("no training slice has 2 misbehavior and 2 benign records", field="on")
    return slices + ["all"]


def _slice_probe(kind: str, slice_name: str, recs: Sequence[CorpusEntry], shared: EmbedFeatures | None) -> Probe:
    """A probe of ``kind`` trained on ``recs`` (card slices ``[slice_name]``); with ``shared`` (an
    ``EmbedFeatures``) the new extractor reuses its embedding memo."""
    from automonitor.runs.probe.model import EmbedFeatures, train_probe

    feats = None
    if shared is not None:
        feats = EmbedFeatures(**shared.params)
        feats._cache = shared._cache
    return train_probe(
        kind,
        [r.request for r in recs],
        [r.response for r in recs],
        [r.label for r in recs],
        slices=[slice_name],
        keys=[r.key() for r in recs],
        meta=[(r.category, r.task) for r in recs],
        features=feats,
    )


def _score_row(
    train: str,
    test_slices: Sequence[str],
    y_test: Ints,
    test_cell: Texts,
    scores: Floats,
    threshold: float,
) -> list[TransferCell]:
    """One row of the matrix: :func:`cell_stats` of the probe trained on ``train`` per test slice.

    Args: ``y_test`` (n,) 1 = misbehavior; ``test_cell`` (n,) each test sample's ``category/task``;
    ``scores`` (n,) the probe's P(misbehavior)."""
    row: list[TransferCell] = []
    for te in test_slices:
        in_slice = np.ones(len(y_test), bool) if te == "all" else (test_cell == te)
        row.append(
            {
                "train": train,
                "test": te,
                **cell_stats(y_test[in_slice], scores[in_slice], threshold),
                "same_slice": train == te,
                "highlight": train == HIGHLIGHT["train"] and te == HIGHLIGHT["test"],
            }
        )
    return row


def transfer_matrix(
    records: Sequence[CorpusEntry],
    tests: Sequence[Mapping[str, str]],
    kind: str,
    *,
    threshold: float = 0.5,
    progress: Callable[[str], None] | None = None,
) -> TransferResult:
    """Train one probe per training slice and score every test slice (see the module docstring).

    Args:
        records: corpus records (``automonitor.runs.probe.corpus.CorpusEntry``-like: category, task, label, request,
            response, key()).
        tests: :func:`test_rows` dicts.
        kind: ``tfidf`` | ``embed``.
        progress: optional ``progress(message)`` callback.
    Returns:
        the transfer JSON (module docstring).
    Raises:
        InputError: no test samples or no trainable slice.
    """
    from automonitor.errors import InputError
    from automonitor.runs.probe.model import EmbedFeatures

    if not tests:
        raise InputError("the store has no test samples; run `automonitor build` first")
    by_cell: dict[str, list[CorpusEntry]] = {}  # records by category/task cell, record order kept
    for r in records:
        by_cell.setdefault(f"{r.category}/{r.task}", []).append(r)
    train_slices = _trainable_slices(by_cell)
    y_test = np.array([1 if t["label"] == "misbehavior" else 0 for t in tests])  # 1 = misbehavior
    test_cell = np.array([f"{t['category']}/{t['task']}" for t in tests])  # each test sample's cell
    test_slices = sorted(set(test_cell.tolist())) + ["all"]
    slices = sorted(set(train_slices[:-1]) | set(test_slices[:-1])) + ["all"]
    shared = EmbedFeatures() if kind == "embed" else None  # one embedding memo for every probe
    cells: list[TransferCell] = []
    cards: list[ProbeCard] = []
    for ts in train_slices:
        recs = [r for c in sorted(by_cell) for r in by_cell[c]] if ts == "all" else by_cell[ts]
        if progress:
            progress(f"train {kind} probe on {ts} ({len(recs)} records)")
        probe = _slice_probe(kind, ts, recs, shared)
        cards.append(probe.card)
        scores = probe.predict_proba([t["request"] for t in tests], [t["response"] for t in tests])
        cells += _score_row(ts, test_slices, y_test, test_cell, scores, threshold)
    baselines = {}  # the trivial baselines per test slice
    for te in test_slices:
        idx = [i for i, c in enumerate(test_cell) if te == "all" or c == te]
        baselines[te] = trivial_baselines(*([tests[i][k] for i in idx] for k in ("response", "label", "pair_id")))
    return {
        "features": kind,
        "threshold": threshold,
        "slices": slices,
        "train_slices": train_slices,
        "test_slices": test_slices,
        "cells": cells,
        "baselines": baselines,
        "paper": paper_cells(),
        "highlight": HIGHLIGHT,
        "artifacts": cards,
    }


def _number(d: Mapping[str, object], key: str) -> float | None:
    """``d[key]`` when it is a number (a cell of a result, read back from JSON too), else ``None``."""
    v = d.get(key)
    return float(v) if isinstance(v, (int, float)) else None


def _pair(d: Mapping[str, object], key: str) -> list[float] | None:
    """``d[key]`` when it is an interval ``[lo, hi]`` of numbers, else ``None``."""
    v = d.get(key)
    ok = isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v)
    return [float(x) for x in cast("list[float]", v)] if ok else None


def _fmt_ci(ci: list[float] | None) -> str:
    return "" if not ci else f" [{ci[0]:.2f}, {ci[1]:.2f}]"


def to_markdown(res: TransferResult) -> str:
    """The transfer result as markdown: one table each for AUROC, MR and FAR (train rows x test columns,
    95% intervals in brackets; the highlighted cell in bold), the trivial baselines per test slice, and
    the paper's reported cells."""
    lines = [f"# Transfer matrix ({res['features']} probes, threshold {res['threshold']})", ""]
    idx = {(c["train"], c["test"]): c for c in res["cells"]}
    for metric, ci_key in (("auroc", "auroc_ci"), ("mr", "mr_ci"), ("far", "far_ci")):
        lines += [
            f"## {metric.upper()} (rows: trained on, columns: tested on)",
            "",
            "| train \\ test | " + " | ".join(res["test_slices"]) + " |",
            "|---" * (len(res["test_slices"]) + 1) + "|",
        ]
        for tr in res["train_slices"]:
            row = []
            for te in res["test_slices"]:
                c = idx.get((tr, te))
                txt = "-" if c is None else fmt2(_number(c, metric)) + _fmt_ci(_pair(c, ci_key))
                row.append(f"**{txt}**" if c and c.get("highlight") else txt)
            lines.append(f"| {tr} | " + " | ".join(row) + " |")
        lines.append("")
    lines += [
        "## Trivial baselines on the same test slices (AUROC)",
        "",
        "| test slice | length | tfidf (in-slice, pair-grouped CV) |",
        "|---|---|---|",
    ]
    for te, b in res["baselines"].items():
        lines.append(f"| {te} | {fmt2(b.get('length'))} | {fmt2(b.get('tfidf'))} |")
    lines += ["", *figure8_markdown(res)]
    return "\n".join(lines) + "\n"


def figure8_markdown(res: TransferResult | None = None) -> list[str]:
    """Markdown lines: the paper's Figure 8 MR and FAR matrices (7 training rows x 6 test slices), each
    cell ``paper / ours`` where ``res`` (a transfer result) has the same train and test slice (``ours``
    is this probe's value at its threshold; ``-`` where the slices do not match)."""
    cells = paper_cells()
    tests = list(dict.fromkeys(c["paper_test"] for c in cells))
    rows = list(dict.fromkeys(c["paper_train"] for c in cells))
    by = {(c["paper_train"], c["paper_test"]): c for c in cells}
    ours = {(str(c.get("train")), str(c.get("test"))): c for c in (res["cells"] if res else [])}
    out: list[str] = []
    for metric in ("mr", "far"):
        out += [
            f"## Paper Figure 8, {metric.upper()} (paper / ours; {FIGURE8_SOURCE})",
            "",
            "| trained on \\ tested on | " + " | ".join(tests) + " |",
            "|---" * (len(tests) + 1) + "|",
        ]
        for tr in rows:
            row = []
            for te in tests:
                p = by[(tr, te)]
                o = ours.get((p["train"], p["test"]))
                row.append(f"{fmt2(_number(p, metric))} / {fmt2(_number(o, metric)) if o else '-'}")
            out.append(f"| {tr} | " + " | ".join(row) + " |")
        out.append("")
    return out


# ------------------------------------------------------------------------------------------ app view


def saved_path(features: str) -> Path:
    """Where ``automonitor probe transfer --save`` keeps the result for the app."""
    from automonitor.runs.probe.model import artifact_dir

    return artifact_dir() / f"transfer-{features}.json"


def load_saved(features: str) -> TransferResult | None:
    """The saved transfer result for ``features`` or ``None`` (missing or unreadable file)."""
    import json

    p = saved_path(features)
    try:
        res = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(res, dict) and isinstance(res.get("cells"), list)
    return cast(TransferResult, res) if ok else None  # as `probe transfer --save` wrote it


def _hover(tr: str, te: str, metric: str, cell: Mapping[str, object], papers: list[PaperCell]) -> str:
    """Hover text of one heatmap cell: slices, the value with its 95% interval, n, and the paper's
    Figure 8 value of every paper cell with the same slices (labels HTML-escaped)."""
    v, ci = _number(cell, metric), _pair(cell, f"{metric}_ci")
    h = (
        f"train {plot_text(tr)}<br>test {plot_text(te)}<br>{metric.upper()} "
        f"{'-' if v is None else f'{v:.3f}'}" + _fmt_ci(ci) + f"<br>n {plot_text(cell.get('n', 0))}"
    )
    for p in papers:
        pv = _number(p, metric)
        if pv is None:
            continue
        row = plot_text(p.get("paper_train", tr))
        h += f"<br>paper Fig. 8 ({row}; LoRA Qwen3-4B): {metric.upper()} {pv:.2f}"
    return h


def heatmap(res: TransferResult, metric: str = "auroc") -> Figure:
    """A plotly heatmap of ``metric`` (``auroc``, ``mr`` or ``far``): rows = training slice, columns =
    test slice, cell text = value, hover = value with its 95% interval and n; the highlighted cell
    (train Safety code -> test Specification Gaming code) is outlined, and a paper-reported value for
    the cell, where there is one, is shown in the hover. Every label is HTML-escaped."""
    trs, tes = [str(x) for x in res["train_slices"]], [str(x) for x in res["test_slices"]]
    idx: dict[tuple[str, str], Mapping[str, object]] = {
        (str(c.get("train")), str(c.get("test"))): c for c in res["cells"]
    }
    paper: dict[tuple[str, str], list[PaperCell]] = {}
    for p in paper_cells():
        paper.setdefault((p["train"], p["test"]), []).append(p)
    z = [[_number(idx.get((tr, te), {}), metric) for te in tes] for tr in trs]
    hl = res.get("highlight") or HIGHLIGHT
    shown = hl.get("train") in trs and hl.get("test") in tes
    outline = (tes.index(hl["test"]), trs.index(hl["train"])) if shown else None
    return _matrix_figure(
        z,
        cols=tes,
        rows=trs,
        text=[["" if v is None else f"{v:.2f}" for v in row] for row in z],
        hover=[[_hover(tr, te, metric, idx.get((tr, te), {}), paper.get((tr, te), [])) for te in tes] for tr in trs],
        hover_extra="",
        scale="RdYlGn" if metric == "auroc" else "RdYlGn_r",
        metric=metric,
        outline=outline,
        title=f"This probe: {metric.upper()} (measured here)",
        top=40,
    )


def _matrix_figure(
    z: Sequence[Sequence[float | None]],
    *,
    cols: list[str],
    rows: list[str],
    text: list[list[str]],
    hover: list[list[str]],
    hover_extra: str,
    scale: str,
    metric: str,
    outline: tuple[int, int] | None,
    title: str,
    top: int,
) -> Figure:
    """The train x test heatmap both :func:`heatmap` and :func:`paper_heatmap` draw: ``z`` (rows x cols,
    values in [0, 1]) with cell ``text``, per-cell ``hover`` (already escaped) and ``hover_extra`` (escaped)
    beside it, column and row names HTML-escaped, the cell ``outline`` = ``(col, row)`` outlined, every test
    column named (none dropped for room) and the first row on top; ``top`` is the top margin in pixels."""
    import plotly.graph_objects as go

    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[plot_text(c) for c in cols],
            y=[plot_text(r) for r in rows],
            text=text,
            texttemplate="%{text}",
            customdata=hover,
            hovertemplate="%{customdata}<extra>" + hover_extra + "</extra>",
            colorscale=scale,
            zmin=0,
            zmax=1,
            colorbar={"title": metric.upper()},
        )
    )
    if outline is not None:
        x0, y0 = outline
        fig.add_shape(
            type="rect", x0=x0 - 0.5, x1=x0 + 0.5, y0=y0 - 0.5, y1=y0 + 0.5, line={"color": "black", "width": 4}
        )
    fig.update_layout(
        title=title,
        xaxis_title="tested on",
        yaxis_title="trained on",
        height=160 + 60 * len(rows),
        margin={"l": 10, "r": 10, "t": top, "b": 10},
    )
    fig.update_xaxes(tickangle=-30, automargin=True)
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig


def paper_frame(res: TransferResult | None) -> pd.DataFrame:
    """The paper's Figure 8 cells (42) beside the measured ones: a DataFrame with the paper's training row
    and test slice, our slice names, paper MR/FAR and, where ``res`` (a transfer result, or ``None``) has
    the same train and test slice, this probe's MR/FAR/AUROC (``None`` otherwise)."""
    import pandas as pd

    idx: dict[tuple[object, object], Mapping[str, object]] = {
        (c.get("train"), c.get("test")): c for c in (res["cells"] if res else [])
    }
    rows = []
    for p in paper_cells():
        c = idx.get((p["train"], p["test"]), {})
        rows.append(
            {
                "paper trained on": p["paper_train"],
                "paper tested on": p["paper_test"],
                "train slice": p["train"],
                "test slice": p["test"],
                "paper MR": p.get("mr"),
                "paper FAR": p.get("far"),
                "probe MR": c.get("mr"),
                "probe FAR": c.get("far"),
                "probe AUROC": c.get("auroc"),
            }
        )
    return pd.DataFrame(rows)


def paper_heatmap(metric: str = "mr") -> Figure:
    """The paper's Figure 8 matrix of ``metric`` (``mr`` or ``far``) as a plotly heatmap: rows = the
    paper's 7 training rows, columns = its 6 test slices, value in each cell, hover naming the source;
    the paper's negative-transfer cell (S&PV Code -> SG Code) outlined."""
    if metric not in ("mr", "far"):
        raise ValueError(f"Figure 8 has mr and far, not {metric!r}")
    cells = paper_cells()
    rows = list(dict.fromkeys(c["paper_train"] for c in cells))
    cols = list(dict.fromkeys(c["paper_test"] for c in cells))
    by = {(c["paper_train"], c["paper_test"]): c for c in cells}
    z = [[_number(by[(r, c)], metric) for c in cols] for r in rows]
    hover = [
        [
            f"paper: trained on {plot_text(r)}<br>tested on {plot_text(c)}<br>{metric.upper()} {_number(by[(r, c)], metric):.2f}"
            for c in cols
        ]
        for r in rows
    ]
    return _matrix_figure(
        z,
        cols=cols,
        rows=rows,
        text=[[f"{v:.2f}" for v in zr] for zr in z],
        hover=hover,
        hover_extra=plot_text("paper Figure 8 (v2), reported"),
        scale="RdYlGn_r",
        metric=metric,
        outline=(cols.index("SG Code"), rows.index("S&PV Code")),
        title=f"Paper Figure 8: {metric.upper()} (reported: LoRA Qwen3-4B judges)",
        top=50,
    )


def trivial_baselines(
    responses: Sequence[str], labels: Sequence[str], groups: Sequence[str], *, folds: int = 5, seed: int = 0
) -> dict[str, float | None]:
    """The trivial shortcut baselines on one slice (out of fold within the slice; the audit,
    :mod:`automonitor.data.audit`, instead trains on the train split and scores the test split).

    - ``length``: AUROC of the response length in characters as the score (longer = misbehavior;
      0.5 = no signal, below 0.5 = shorter responses are the misbehaving ones);
    - ``tfidf``: out-of-fold AUROC of word 1-2-gram TF-IDF of the response + logistic regression,
      ``GroupKFold`` by pair (both sides of a pair in the same fold).

    Args: parallel sequences; ``groups`` are pair ids. Returns ``{"length": auroc|None,
    "tfidf": auroc|None}`` (None when a class is missing or there are too few pairs).
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    y = np.array([1 if v == "misbehavior" else 0 for v in labels])
    out: dict[str, float | None] = {"length": None, "tfidf": None}
    if len(y) == 0 or y.min() == y.max():
        return out
    lens = np.array([len(r or "") for r in responses], dtype=float)
    out["length"] = _auroc(y.tolist(), ((lens - lens.min()) / max(1.0, lens.max() - lens.min())).tolist())
    g = np.asarray(groups)
    k = min(folds, len(set(g.tolist())))
    if k < 2:
        return out
    oof = np.full(len(y), np.nan)
    texts = cut_texts(responses, 6000)
    for tr, te in GroupKFold(n_splits=k).split(texts, y, g):
        if y[tr].min() == y[tr].max():
            continue
        vec = TfidfVectorizer(ngram_range=(1, 2), min_df=1, max_features=30000, sublinear_tf=True)
        Xtr = vec.fit_transform([texts[i] for i in tr])
        clf = LogisticRegression(C=4.0, solver="liblinear", random_state=seed).fit(Xtr, y[tr])
        oof[te] = clf.predict_proba(vec.transform([texts[i] for i in te]))[:, 1]
    ok = ~np.isnan(oof)
    if ok.sum() and y[ok].min() != y[ok].max():
        out["tfidf"] = _auroc(y[ok], oof[ok])
    return out
