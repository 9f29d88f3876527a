"""The Overview page's data: the store fingerprint the app caches on, the benchmark's composition
(frame, pivot table, sunburst) and sample counts by column and status."""

from __future__ import annotations


import pandas as pd
import plotly.graph_objects as go
from sqlalchemy.engine import Engine

from automonitor import vocab
from automonitor.timestamps import iso_utc
from store.queries.fingerprints import sample_state

#: Inner-ring colours of the composition sunburst, by category.
CATEGORY_COLORS = {"safety_permission": "#6366f1", "sycophancy_bias": "#0ea5e9", "specification_gaming": "#f59e0b"}


#: :func:`store_version`'s fingerprint (the last item: ``store.queries.fingerprints.sample_state``).
StoreVersion = tuple[
    int, int, str | None, int, int, str | None, tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...], str]
]


def store_version(engine: Engine) -> StoreVersion:
    """A cheap fingerprint of the store's analysable content, used as a cache key by the app.

    ``(runs, finished/terminal runs, latest finished_at (ISO str or None), running runs, samples,
    latest sample created_at, sample state)`` (sample state: ``store.queries.fingerprints.sample_state``,
    counts by status/split/label source, edition rows, archived runs): it changes whenever a run is
    created, finishes or is imported, or samples are added, so cached reports/frames are recomputed
    exactly then. A few small aggregate queries; no table scan beyond ``COUNT``.
    """
    from store.queries import workbench as q

    with engine.connect() as c:
        runs, finished_at, active, terminal = q.run_totals(c)
        samples, created_at = q.sample_totals(c)
        state = sample_state(c)  # status/split/edition changes and archived runs
    return (runs, terminal, iso_utc(finished_at), active, samples, iso_utc(created_at), state)


def composition_frame(engine: Engine, *, split: str | None = "test", edition: str | None = None) -> pd.DataFrame:
    """Gold samples counted by ``category``, ``task``, ``label``: long frame with columns
    ``category, task, label, split, n`` (``split`` is the requested split, ``"all"`` for ``None``,
    which covers test and train) from ``store.queries.samples.composition``, the counts ``stats``
    prints; with ``edition`` (split ``test``) only that edition's members."""
    from sqlmodel import Session  # here, not at the top: store_version (every page) needs no ORM

    from store.queries.samples import composition

    with Session(engine) as s:
        rows = composition(s, split or "all", edition=edition if split == "test" else None)
    return pd.DataFrame(
        [{**r, "split": split or "all"} for r in rows], columns=["category", "task", "label", "split", "n"]
    )


def gold_tile_label(split: str, edition: str | None = None) -> str:
    """The Overview's tile of gold samples, naming what it counts (the count :func:`composition_frame`
    gives): split ``test`` is one edition's members, ``"Gold samples (test, edition paper)"``; ``train``
    ``"Gold samples (train)"``; ``all`` every gold sample of the store, ``"Gold samples (all splits)"`` (the
    Samples page's count with status gold and no split chosen)."""
    if split == "all":
        return "Gold samples (all splits)"
    if split == "test":
        return f"Gold samples (test, edition {edition or 'paper'})"
    return f"Gold samples ({split})"


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
    """Sample counts grouped by ``column`` (``source``, ``split``, ``category``, ``task``, ``label``,
    ``label_source``) and ``status``: frame ``[column, status, n]`` (just ``[status, n]`` for
    ``column="status"``), sorted by ``n`` descending. ``status`` restricts to one status. Raises
    ``ValueError`` for another column."""
    from store.queries.samples import counts_by_status

    with engine.connect() as c:
        rows = counts_by_status(c, column, status)
    df = pd.DataFrame(rows, columns=[column, "n"] if column == "status" else [column, "status", "n"])
    return df.sort_values("n", ascending=False, ignore_index=True)


def _sunburst_nodes(long: pd.DataFrame) -> dict[str, list[str | int]]:
    """The sunburst's nodes as parallel lists ``ids, labels, parents, values, colors``: one node per
    category, per category/task and per category/task/label, with sample counts."""
    nodes: dict[str, list[str | int]] = {k: [] for k in ("ids", "labels", "parents", "values", "colors")}

    def add(node_id: str, label: str, parent: str, value: int, color: str) -> None:
        row: tuple[str | int, ...] = (node_id, label, parent, value, color)
        for key, v in zip(nodes, row):
            nodes[key].append(v)

    counts = long.groupby(["category", "task", "label"], as_index=False)["n"].sum()
    for cat, by_cat in counts.groupby("category", sort=False):
        cat_color = CATEGORY_COLORS.get(cat, "#9ca3af")
        add(cat, vocab.CATEGORY_NAMES.get(cat, cat), "", int(by_cat["n"].sum()), cat_color)
        for task, by_task in by_cat.groupby("task", sort=False):
            task_id = f"{cat}/{task}"
            add(task_id, vocab.TASK_NAMES.get(task, task), cat, int(by_task["n"].sum()), cat_color + "aa")
            for lab, n in zip(by_task["label"], by_task["n"]):
                add(f"{task_id}/{lab}", lab, task_id, int(n), "#ef4444" if lab == "misbehavior" else "#22c55e")
    return nodes


def composition_figure(long: pd.DataFrame, height: int = 380) -> go.Figure:
    """Sunburst of the samples: category (inner ring) -> task -> gold label (outer ring; misbehavior
    red, benign green). ``long`` is :func:`composition_frame` output."""
    fig = go.Figure()
    if long.empty:
        return fig
    nodes = _sunburst_nodes(long)
    fig.add_trace(
        go.Sunburst(
            ids=nodes["ids"],
            labels=nodes["labels"],
            parents=nodes["parents"],
            values=nodes["values"],
            branchvalues="total",
            marker=dict(colors=nodes["colors"]),
            hovertemplate="%{label}: %{value} samples<extra></extra>",
            insidetextorientation="radial",
        )
    )
    fig.update_layout(height=height, margin=dict(l=0, r=0, t=10, b=0))
    return fig
