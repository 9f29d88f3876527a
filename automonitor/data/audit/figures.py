"""Frames and figures for the app's "Benchmark health" page (plotly; every label HTML-escaped)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from automonitor.escaping import plot_text
from automonitor.data.audit.params import BASELINES, FLAG_AUROC, TINY_DIFF_TOKENS


def slices_table(doc: dict[str, Any]) -> pd.DataFrame:
    """One row per slice of an audit document: source, category, task, pairs, label source (text),
    length / tfidf / answer = suggestion AUROC (NaN when null or not applicable), near-dup pairs,
    shared conv., <=3-token pairs, flagged (bool), flagged by (text), notes (text)."""
    rows = []
    for s in doc.get("slices", []):
        b = s["baselines"]
        rows.append(
            {
                "source": s["source"],
                "category": s["category"],
                "task": s["task"],
                "pairs": s["pairs"],
                "label source": ", ".join(f"{k} {v}" for k, v in s["label_source"].items()),
                "length": b.get("length"),
                "tfidf": b.get("tfidf"),
                "answer = suggestion": b.get("answer_equals_suggestion"),
                "near-dup pairs": s["near_duplicate_pairs"],
                "shared conv.": s["shared_conversations"],
                "<=3-token pairs": s["tiny_diff_pairs"],
                "flagged": s["flagged"],
                "flagged by": ", ".join(s["flagged_by"]),
                "notes": "; ".join(f"{k}: {v}" for k, v in s.get("notes", {}).items()),
            }
        )
    cols = [
        "source",
        "category",
        "task",
        "pairs",
        "label source",
        "length",
        "tfidf",
        "answer = suggestion",
        "near-dup pairs",
        "shared conv.",
        "<=3-token pairs",
        "flagged",
        "flagged by",
        "notes",
    ]
    df = pd.DataFrame(rows, columns=cols)
    for c in ("length", "tfidf", "answer = suggestion"):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def baselines_figure(doc: dict[str, Any]):
    """Grouped bar chart (plotly): AUROC of each baseline per slice, with the flag line at
    :data:`FLAG_AUROC` and the chance line at 0.5. Slice names are HTML-escaped (plotly renders HTML in
    tick labels and hovers)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    names = [plot_text(f"{s['source']} · {s['category']}/{s['task']}") for s in doc.get("slices", [])]
    for base in BASELINES:
        ys = [s["baselines"].get(base) for s in doc.get("slices", [])]
        if all(y is None for y in ys):
            continue
        fig.add_bar(name=base, x=names, y=ys, hovertemplate="%{x}<br>" + base + " AUROC %{y:.3f}<extra></extra>")
    fig.add_hline(
        y=doc.get("params", {}).get("flag_auroc", FLAG_AUROC),
        line_dash="dash",
        line_color="red",
        annotation_text="flag",
    )
    fig.add_hline(y=0.5, line_dash="dot", line_color="gray", annotation_text="chance")
    fig.update_layout(
        barmode="group",
        yaxis_title="AUROC (train -> test)",
        yaxis_range=[0, 1.05],
        height=420,
        margin=dict(l=10, r=10, t=30, b=10),
        legend_title_text="baseline",
    )
    return fig


def leakage_figure(doc: dict[str, Any]):
    """Grouped bar chart (plotly) per source slice: near-duplicate pairs, shared conversations and pairs
    differing by <= :data:`TINY_DIFF_TOKENS` tokens. Labels HTML-escaped."""
    import plotly.graph_objects as go

    src = [s for s in doc.get("slices", []) if s["kind"] == "source"]
    names = [plot_text(s["source"]) for s in src]
    fig = go.Figure()
    for key, label in (
        ("near_duplicate_pairs", "near-duplicate pairs"),
        ("shared_conversations", "shared conversations"),
        ("tiny_diff_pairs", f"<={TINY_DIFF_TOKENS}-token pairs"),
    ):
        fig.add_bar(
            name=plot_text(label),
            x=names,
            y=[s[key] for s in src],
            hovertemplate="%{x}<br>" + plot_text(label) + ": %{y}<extra></extra>",
        )
    fig.update_layout(barmode="group", yaxis_title="test pairs", height=360, margin=dict(l=10, r=10, t=30, b=10))
    return fig


def controls_figure(doc: dict[str, Any]):
    """Bar chart (plotly) of each baseline's false alarm rate on the benign-only controls, or ``None``
    when there are no controls."""
    import plotly.graph_objects as go

    far = doc.get("controls", {}).get("far") or {}
    if not far:
        return None
    fig = go.Figure(
        go.Bar(
            x=[plot_text(k) for k in far],
            y=list(far.values()),
            hovertemplate="%{x}<br>false alarm rate %{y:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        yaxis_title="false alarm rate on controls",
        yaxis_range=[0, 1.05],
        height=320,
        margin=dict(l=10, r=10, t=30, b=10),
    )
    return fig


#: How the audit chose its test set (``run_audit``'s ``test_set``), said for a reader.
TEST_SET_TEXT = {
    "edition_sample": "the edition's member pairs",
    "fallback: gold split test": "every gold test pair (the store records no edition membership)",
    "empty": "none (the edition has no member pairs)",
}


def test_set_text(how: str | None) -> str:
    """The reader's words for the audit document's ``test_set`` (:data:`TEST_SET_TEXT`); an unknown value
    is returned as it is, ``None`` as ``-``."""
    return "-" if how is None else TEST_SET_TEXT.get(how, how)


def flag_rule_text() -> str:
    """The flag rule in words, from :data:`FLAG_AUROC`: a baseline at least that far from chance either way
    (``|AUROC - 0.5| >= FLAG_AUROC - 0.5``: AUROC >= 0.9 or <= 0.1, a reversed separator counting too)."""
    return f"AUROC >= {FLAG_AUROC:.1f} or <= {1 - FLAG_AUROC:.1f} (a reversed separator separates as well)"
