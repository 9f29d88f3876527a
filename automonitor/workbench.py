"""Streamlit-free logic of the workbench pages added in round 2 (issue 12): which sample set a run was
measured on, honest trade-off points (labels, coincident points, minimum sample size), run archiving,
and browsing aids for the drill-down (cell navigation, filters, previews, search highlights, pair
diffs). The pages in ``pages/`` only render what these functions return.

Definitions:

* **Sample set** of a run: the set of sample ids it judged. Its *fingerprint* is the first 10 hex digits
  of ``sha256("\\n".join(sorted(ids)))``; its *edition* is ``run.edition`` when recorded, else inferred
  (``verified`` when any judged sample is adjudicated (``label_source = 'adjudicated'``), else
  ``paper``). Runs are only compared on one Pareto front within one edition; a plot with several
  editions draws one front per edition and says so.
* **Minimum sample size**: a run whose slice has fewer than ``min_n`` judged samples (TP+FN+FP+TN; default
  :data:`DEFAULT_MIN_N` = 100) is *ineligible*: drawn hollow and left off the Pareto front, so a
  4-sample run cannot look better than a measured or reported frontier model.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session

from automonitor.errors import InputError, NotFound
from automonitor.views.escaping import esc as _esc

DEFAULT_MIN_N = 100
"""Default minimum number of judged samples (TP+FN+FP+TN) of a slice for a run to enter the Pareto front."""

PAGE_SIZES: tuple[int, ...] = (50, 100, 200, 500)
"""Page sizes offered by the Samples page (at least 50)."""

TEMPLATE_SHORT = {
    "direct": "direct",
    "evidence": "evid.",
    "direct-fewshot": "direct-fs",
    "evidence-fewshot": "evid.-fs",
}


def template_independent_backends() -> frozenset[str]:
    """Names of the registered backends whose class says ``template_independent = True`` (they read no
    prompt, so one run stands for every template; e.g. ``rules``)."""
    from automonitor.monitors import REGISTRY

    return frozenset(n for n, cls in REGISTRY.items() if getattr(cls, "template_independent", False))


"""Backends whose verdicts do not depend on the prompt template (``rules`` reads no prompt): their runs
are labelled without a template, and ``scripts/demo_runs.sh`` runs them once."""


# ---------------------------------------------------------------------------------------------------
# Store fingerprint and sample sets
# ---------------------------------------------------------------------------------------------------


def store_fingerprint(conn: Connection | Session) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """Part of the app's cache key covering sample *state* (issue 12): counts of samples by
    ``(status, split, label_source)``, the ``edition_sample`` row count per edition, and a hash of the
    archived run ids (``store.queries.workbench.sample_state_fingerprint``). It changes whenever a
    sample moves between status/split (for example when adjudicated pairs are finalised), an edition
    gains members, or a run is archived.

    ``conn``: an open SQLAlchemy connection (or session). Aggregates only, no table scan beyond COUNT.
    """
    from store.queries.workbench import sample_state_fingerprint

    return sample_state_fingerprint(conn)


def fingerprint(sample_ids: Iterable[str]) -> str:
    """Fingerprint of a set of sample ids: first 10 hex digits of sha256 over the sorted, newline-joined
    ids (order and duplicates do not matter)."""
    ids = sorted(set(map(str, sample_ids)))
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:10]


def sample_set_row(run_id: str, recorded_edition: str | None, judged: pd.DataFrame | None) -> dict[str, Any]:
    """One :func:`run_sample_sets` row from a run's recorded edition and its ``judged`` predictions
    (frame with ``sample_id, label_source``; ``None`` when it has none): the edition (recorded, else
    ``verified`` when a judged sample is adjudicated, else ``paper``), the distinct sample count and the
    :func:`fingerprint` of the ids."""
    ids = [] if judged is None else list(judged["sample_id"])
    inferred = "verified" if judged is not None and (judged["label_source"] == "adjudicated").any() else "paper"
    edition = recorded_edition or inferred
    fp = fingerprint(ids)
    n = len(set(ids))
    return {
        "run_id": run_id,
        "edition": edition,
        "edition_recorded": recorded_edition is not None,
        "n_samples": n,
        "fingerprint": fp,
        "sample_set": f"{edition} · {n:,} samples · {fp}",
    }


def run_sample_sets(engine: Engine, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Which sample set every run judged (its test samples; the controls slice is left out): one row per
    run with ``run_id, edition, edition_recorded (bool), n_samples, fingerprint, sample_set``
    (``"<edition> · <n> samples · <fingerprint>"``; :func:`sample_set_row`).

    ``edition`` is ``run.edition`` when recorded, else inferred (see the module docstring). Runs without
    predictions get ``n_samples`` 0 and the fingerprint of the empty set.
    """
    from store.queries import workbench as q

    with engine.connect() as c:
        runs = q.run_editions(c, run_ids)
        preds = pd.DataFrame(q.judged_test_samples(c, run_ids), columns=["run_id", "sample_id", "label_source"])
    groups = {rid: g for rid, g in preds.groupby("run_id")} if not preds.empty else {}
    rows = [sample_set_row(rid, edition, groups.get(rid)) for rid, edition in runs]
    return pd.DataFrame(
        rows, columns=["run_id", "edition", "edition_recorded", "n_samples", "fingerprint", "sample_set"]
    )


# ---------------------------------------------------------------------------------------------------
# Archiving runs
# ---------------------------------------------------------------------------------------------------


def set_archived(engine: Engine, run_id: str, archived: bool = True) -> bool:
    """Archive (hide from the trade-off plot and the run list by default) or unarchive a run; reversible,
    nothing else changes. Returns the previous state. Raises :class:`NotFound` for an unknown run id."""
    from store import session_scope
    from store.queries.workbench import set_run_archived

    with session_scope(engine) as s:
        return set_run_archived(s, run_id, archived)


# ---------------------------------------------------------------------------------------------------
# Trade-off points
# ---------------------------------------------------------------------------------------------------


def short_label(monitor: str, template: str, backend: str | None = None, max_len: int = 22) -> str:
    """A short text label for a measured point: ``"<model> <template>"`` where the model is the last
    path/colon part of the monitor spec (``llamacpp:/m/gemma-3-270m.gguf`` -> ``gemma-3-270m``), cut to
    ``max_len`` characters with an ellipsis; template-independent backends (``rules``) get no template."""
    backend = backend or str(monitor).split(":", 1)[0]
    name = str(monitor)
    if backend == "derived" or re.match(r"(ensemble|thresholds|cascade) ", name):
        # a derived run's name is "<recipe> <rule> (<inputs>)": keep the recipe and rule, not the inputs
        name = re.sub(r"\s*\(.*$", "", name).strip() or name
        if len(name) > max_len:
            name = name[: max_len - 1] + "…"
        return f"{name} {TEMPLATE_SHORT.get(template, template)}"
    if ":" in name:
        name = name.split(":", 1)[1] or name
    name = re.split(r"[/\\]", name)[-1]
    name = re.sub(r"\.(gguf|bin|safetensors)$", "", name, flags=re.I) or str(monitor)
    if len(name) > max_len:
        name = name[: max_len - 1] + "…"
    if backend in template_independent_backends():
        return name
    return f"{name} {TEMPLATE_SHORT.get(template, template)}"


def judged(points: pd.DataFrame) -> pd.Series:
    """Judged samples per point: ``tp + fn + fp + tn`` (0 where missing)."""
    cols = [c for c in ("tp", "fn", "fp", "tn") if c in points]
    if not cols:
        return pd.Series([0] * len(points), index=points.index)
    return points[cols].fillna(0).astype(int).sum(axis=1)


def pareto_mask(mr: Sequence[float], far: Sequence[float], eligible: Sequence[bool]) -> list[bool]:
    """Pareto front (both rates minimised) over the eligible points only: a point is on the front when
    it is eligible and no other eligible point has ``mr <=`` and ``far <=`` with one strictly less
    (:func:`automonitor.metrics.pareto_front` over the eligible points). Ineligible points and points
    with a missing rate are never on the front. Source: the paper's Pareto analysis (Sec. 4)."""
    from automonitor.metrics import pareto_front

    keep = [bool(e) and not (pd.isna(m) or pd.isna(f)) for m, f, e in zip(mr, far, eligible)]
    front = pareto_front([m if k else None for m, k in zip(mr, keep)], [f if k else None for f, k in zip(far, keep)])
    return [bool(x) for x in front]


def spread_coincident(
    x: Sequence[float], y: Sequence[float], radius: float = 0.012
) -> tuple[list[float], list[float], list[int]]:
    """Plot positions that keep coincident points apart: points with identical (rounded to 1e-9)
    coordinates are placed on a small circle of ``radius`` (plot units) around the true position, so
    each stays visible and clickable. Returns ``(x_plot, y_plot, group_size)`` (``group_size`` = how many
    points share the position; 1 = drawn at its true place)."""
    keys = [(round(float(a), 9), round(float(b), 9)) for a, b in zip(x, y)]
    groups: dict[tuple, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    xp, yp, size = [float(v) for v in x], [float(v) for v in y], [1] * len(keys)
    for members in groups.values():
        if len(members) < 2:
            continue
        for j, i in enumerate(members):
            ang = 2 * math.pi * j / len(members) + math.pi / 4
            xp[i] = xp[i] + radius * math.cos(ang)
            yp[i] = yp[i] + radius * math.sin(ang)
            size[i] = len(members)
    return xp, yp, size


def honest_points(
    points: pd.DataFrame,
    sets: pd.DataFrame | None = None,
    *,
    min_n: int = DEFAULT_MIN_N,
    archived: Iterable[str] = (),
    show_archived: bool = False,
    backends: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Trade-off points ready to draw (issue 12 items 2, 4-7).

    Args:
        points: :func:`automonitor.views.tradeoff_points` output (``run_id, monitor, template, mr, far,
            tp, fn, fp, tn, ...``).
        sets: :func:`run_sample_sets` output (adds ``edition, fingerprint, sample_set``).
        min_n: minimum judged samples of the slice to be eligible for the front (>= 1).
        archived: archived run ids; left out unless ``show_archived`` (then flagged ``archived``).
        backends: run id -> backend (for template-independent labels); default: monitor prefix.

    Returns:
        the points with MR/FAR defined plus ``judged`` (int), ``eligible`` (bool), ``on_front`` (the
        Pareto front among eligible points *of the same edition*), ``label`` (short text),
        ``x_plot``/``y_plot`` (coincident points spread apart), ``coincide`` (group size), ``archived``.
    Raises:
        InputError: ``min_n < 1`` (field ``min_n``).
    """
    if not isinstance(min_n, int) or min_n < 1:
        raise InputError("the minimum number of judged samples must be a positive integer", field="min_n")
    p = _shown_points(points, set(archived), show_archived)
    p = _with_sample_sets(p, sets)
    p["judged"] = judged(p)
    p["eligible"] = p["judged"] >= min_n
    p["on_front"] = front_by_edition(p)
    bk = backends or {}
    p["label"] = [short_label(m, t, bk.get(r)) for r, m, t in zip(p["run_id"], p["monitor"], p["template"])]
    xp, yp, size = spread_coincident(list(p["far"]), list(p["mr"])) if len(p) else ([], [], [])
    p["x_plot"], p["y_plot"], p["coincide"] = xp, yp, size
    return p


def _shown_points(points: pd.DataFrame, archived: set[str], show_archived: bool) -> pd.DataFrame:
    """A copy of the points with MR and FAR defined (an empty frame with the base columns when
    ``points`` has none), flagged ``archived``; archived runs left out unless ``show_archived``.
    Index reset."""
    p = points.dropna(subset=["mr", "far"]).copy() if not points.empty else points.copy()
    if "mr" not in p:
        p = pd.DataFrame(columns=["run_id", "monitor", "template", "mr", "far"])
    p["archived"] = p["run_id"].isin(archived)
    if not show_archived:
        p = p[~p["archived"]]
    return p.reset_index(drop=True)


def _with_sample_sets(points: pd.DataFrame, sets: pd.DataFrame | None) -> pd.DataFrame:
    """The points with ``edition, fingerprint, sample_set`` from ``sets`` (:func:`run_sample_sets`
    output, replacing any such columns); runs without a row get ``paper``, ``""``, ``""``."""
    p = points
    if sets is not None and not sets.empty:
        p = p.drop(columns=[c for c in ("edition", "fingerprint", "sample_set", "n_samples") if c in p])
        p = p.merge(sets[["run_id", "edition", "fingerprint", "sample_set"]], on="run_id", how="left")
    for c, default in (("edition", "paper"), ("fingerprint", ""), ("sample_set", "")):
        if c not in p:
            p[c] = default
        p[c] = p[c].fillna(default)
    return p


def front_by_edition(points: pd.DataFrame) -> pd.Series:
    """``on_front`` per point: the Pareto front (:func:`pareto_mask`) among the ``eligible`` points of
    the same ``edition``; a bool Series aligned with ``points``."""
    on_front = pd.Series(False, index=points.index)
    for _, g in points.groupby("edition"):
        on_front.loc[g.index] = pareto_mask(list(g["mr"]), list(g["far"]), list(g["eligible"]))
    return on_front


def set_summary(points: pd.DataFrame) -> list[dict[str, Any]]:
    """One entry per edition among the drawn points: ``{"edition", "runs", "sample_sets": [sample_set,
    ...]}``, largest first. More than one entry means the plot mixes test sets (the page says so)."""
    out: list[dict[str, Any]] = []
    if points.empty:
        return out
    for ed, g in points.groupby("edition"):
        out.append({"edition": ed, "runs": int(len(g)), "sample_sets": sorted(set(g["sample_set"]))})
    return sorted(out, key=lambda d: (-d["runs"], d["edition"]))


# ---------------------------------------------------------------------------------------------------
# Drill-down browsing
# ---------------------------------------------------------------------------------------------------


def neighbours(ids: Sequence[str], current: str | None) -> dict[str, Any]:
    """Previous/next navigation inside a list of sample ids: ``{"index", "total", "prev", "next"}``
    (``index`` 0-based, ``None`` when ``current`` is not in the list: then ``next`` is the first id)."""
    ids = list(ids)
    if current in ids:
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
    ellipsis. Plain text (the caller escapes it where HTML is built)."""
    t = re.sub(r"\s+", " ", text or "").strip()
    return t if len(t) <= limit else t[: limit - 1] + "…"


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
    these sample ids (e.g. :func:`disagreeing_samples`). ``search``: case-insensitive substring of the
    request or the response. Adds ``request_preview`` and ``response_preview`` (:func:`preview`).
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


_MARK = "background:#fef08a;color:#111827;border-radius:2px;padding:0 1px;"


def highlight_search_html(text: str | None, query: str | None) -> str:
    """``text`` escaped, with every case-insensitive occurrence of ``query`` wrapped in
    ``<mark class="am-hit">`` (the matched text escaped too). No query: just the escaped text."""
    text = text or ""
    if not query or not query.strip():
        return _esc(text)
    pat = re.compile(re.escape(query.strip()), re.I)
    out, cur = [], 0
    for m in pat.finditer(text):
        out.append(_esc(text[cur : m.start()]))
        out.append(f'<mark class="am-hit" style="{_MARK}">{_esc(m.group(0))}</mark>')
        cur = m.end()
    out.append(_esc(text[cur:]))
    return "".join(out)


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
    one-line legend naming both sides. Every text piece is escaped."""
    parts = []
    for op, t in pair_diff(a, b, mode):
        if op == "equal":
            parts.append(_esc(t))
        elif op == "delete":
            parts.append(f'<del class="am-del" style="{_DEL}">{_esc(t)}</del>')
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


def front_sample_sets(points: pd.DataFrame) -> list[str]:
    """Distinct sample sets (``sample_set`` text: edition, size, fingerprint) of the runs on a Pareto front
    in :func:`honest_points` output, sorted; more than one means the front compares MR/FAR estimated on
    different samples (the page says so). ``[]`` when there is no front or no sample-set column."""
    if points.empty or "on_front" not in points or "sample_set" not in points:
        return []
    on = points[points["on_front"].fillna(False).astype(bool)]
    return sorted({str(x) for x in on["sample_set"].dropna()})
