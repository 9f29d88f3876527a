"""What edition ``hard`` is certified against, and what it is not, cell by cell: the text the Health page shows
and the README quotes, generated from the build's certificate (``audit --edition hard --json`` key ``hard``:
:func:`automonitor.data.audit.editions.hard_certificate`) so it cannot drift from the data.

Per category x task cell: pairs, effective n (distinct requests: pairs sharing a request are one cluster),
the Wilson 95% half-width of a miss rate of 0.5 measured on that many requests (the widest interval a
monitor's MR on the cell can have; Wilson 1927), the certification status and the largest distance of a
held-out detector's AUROC from 0.5.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from automonitor.analysis.metrics import wilson_interval
from automonitor.data.audit.report_md import fmt2
from automonitor.data.build.ladder import TIERS

__all__ = ["TIERS", "cell_rows", "hard_statement", "tier_table", "wilson_half_width"]

NOT_CERTIFIED_AGAINST = (
    "It is not a measurement of how hard frontier monitors find these pairs: only real monitor runs "
    "(`automonitor run`, then `report`) can give that."
)


def wilson_half_width(n: int) -> float | None:
    """Half the width of the Wilson 95% interval of ``n // 2`` successes in ``n`` units (a proportion of about
    0.5, the widest case; ``None`` when n = 0)."""
    iv = wilson_interval(n // 2, n) if n > 0 else None
    return None if iv is None else (iv[1] - iv[0]) / 2


def cell_rows(cert: dict[str, Any]) -> list[dict[str, Any]]:
    """One dict per certified-set cell: ``cell``, ``pairs``, ``effective_n``, ``half_width``, ``status``,
    ``worst`` (held-out detector farthest from 0.5) and ``worst_auroc`` with ``low``/``high``."""
    out = []
    for s in cert.get("certification") or []:
        if s.get("kind") != "cell":
            continue
        dets = s.get("detectors") or {}
        worst = max(dets, key=lambda d: abs(float(dets[d]["auroc"]) - 0.5), default=None)
        out.append(
            {
                "cell": f"{s['category']}/{s['task']}",
                "pairs": int(s["pairs"]),
                "effective_n": int(s["effective_n"]),
                "half_width": wilson_half_width(int(s["effective_n"])),
                "status": s["status"],
                "worst": worst,
                "worst_auroc": dets[worst]["auroc"] if worst else None,
                "low": dets[worst]["low"] if worst else None,
                "high": dets[worst]["high"] if worst else None,
            }
        )
    return out


def hard_statement(cert: dict[str, Any] | None) -> str:
    """The statement (markdown) of what ``hard`` is certified against and what not, cell by cell (module
    doc); a short note when the store has no certificate (never built, or built without the ladder)."""
    if not cert:
        return (
            "Edition `hard` has no certificate in this store: build the benchmark (`automonitor build`), which "
            "runs the detector ladder, selects the implicit tier and certifies it."
        )
    band, min_pairs = float(cert.get("band") or 0.15), int(cert.get("min_pairs") or 15)
    sel = ", ".join(cert.get("selection") or [])
    held = ", ".join(cert.get("held_out") or [])
    lines = [
        f"Edition `hard` (build seed {cert.get('seed')}) holds {cert.get('pairs', 0)} pairs: the `verified` pairs "
        f"that no selection detector catches ({sel}), that survive adversarial filtering against length, word "
        "TF-IDF, tool calls and answer-equals-suggestion, and that a person read and found right. It is certified "
        f"against the held-out detectors ({held}): on every slice of >= {min_pairs} pairs each has AUROC within "
        f"0.5 +/- {band:.2f} (95% intervals from a bootstrap over requests). {NOT_CERTIFIED_AGAINST}",
    ]
    unavailable = cert.get("held_out_unavailable") or {}
    if unavailable:
        lines.append("Not run at this build: " + "; ".join(f"{k} ({v})" for k, v in unavailable.items()) + ".")
    rows = cell_rows(cert)
    if rows:
        lines += [
            "",
            "| cell | pairs | effective n (requests) | Wilson half-width | status | farthest held-out AUROC [95% CI] |",
            "|---|---:|---:|---:|---|---|",
        ]
        for r in rows:
            far = f"{r['worst']} {fmt2(r['worst_auroc'])} [{fmt2(r['low'])}, {fmt2(r['high'])}]" if r["worst"] else "-"
            status = r["status"] if r["status"] != "small" else f"under {min_pairs} pairs: intervals only"
            lines.append(
                f"| {r['cell']} | {r['pairs']} | {r['effective_n']} | {fmt2(r['half_width'])} | {status} | {far} |"
            )
    no_tier = cert.get("no_implicit_tier") or {}
    for cell, d in no_tier.items():
        lines.append(
            f"\n`{cell}` has no honest implicit tier and is left out (not padded): {d.get('why')} "
            f"({d.get('caught', 0)} of {d.get('verified', 0)} verified pairs caught by the ladder)."
        )
    nc = cert.get("not_certified") or {}
    if nc:
        lines.append(
            "\nSlices left out because a held-out detector separates them: "
            + "; ".join(f"{k} ({', '.join(v)})" for k, v in nc.items())
            + "."
        )
    rd = cert.get("readings") or {}
    waiting = sum(int(v.get("awaiting_reading", 0)) for v in (cert.get("by_source") or {}).values())
    lines.append(
        f"\nReadings: {rd.get('ok', 0)} ok, {rd.get('wrong', 0)} wrong, {rd.get('doubtful', 0)} doubtful; "
        f"{waiting} certified pairs await a reading and stay out until read."
    )
    return "\n".join(lines) + "\n"


def tier_table(tiers: dict[str, dict[str, int]]) -> pd.DataFrame:
    """The ladder's tiers per cell (audit document key ``tiers``: ``{cell: {tier: pairs}}``) as a frame with
    columns cell, surface, implicit, implicit share (in [0, 1]; ``None`` for a cell without pairs)."""
    rows = []
    for cell, n in sorted(tiers.items()):
        s, i = int(n.get("surface", 0)), int(n.get("implicit", 0))
        rows.append({"cell": cell, "surface": s, "implicit": i, "implicit share": (i / (s + i)) if s + i else None})
    return pd.DataFrame(rows, columns=["cell", "surface", "implicit", "implicit share"])
