"""An edition's audit from the store: :func:`check_edition`, :func:`load_samples` (the edition's test set
plus gold train and controls) and :func:`run_audit`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from automonitor.data.audit.document import audit_frame
from automonitor.data.audit.params import check_edition
from automonitor.data.errata import errata_counts, errata_in_force
from store import session_scope
from automonitor.vocab import CONTROLS_SPLIT


def load_samples(engine, edition: str = "paper") -> tuple[pd.DataFrame, str]:
    """The audit's samples from the store: gold ``train`` and ``controls`` samples plus the test set of
    ``edition``, and how that test set was chosen.

    The test set is the edition's members (``edition_sample`` rows); when ``paper`` has no rows it falls
    back to every gold sample of split ``test`` (a store built before editions existed); another edition
    without rows has an empty test set. Returns ``(frame, test_source)`` with ``test_source`` one of
    ``edition_sample``, ``fallback: gold split test``, ``empty``. Raises ``InputError`` for an unknown
    edition."""
    from store.queries import audit as q

    check_edition(edition)
    with engine.connect() as c:
        members = q.edition_member_ids(c, edition)
        base = q.gold_samples(c, ("train", "test", CONTROLS_SPLIT))
        if members:
            test = q.samples_by_ids(c, members)
            test["split"] = "test"
            how = "edition_sample"
        elif edition == "paper":
            test = base[base["split"] == "test"]
            how = "fallback: gold split test"
        else:
            test = base.iloc[0:0]
            how = "empty"
    rest = base[base["split"].isin(["train", CONTROLS_SPLIT]) & ~base["id"].isin(set(test["id"]))]
    return pd.concat([rest, test], ignore_index=True), how


def tier_counts(df: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Test pairs per category x task cell and detector-ladder tier (``meta.tier`` of the misbehavior side,
    written by the build): ``{"cat/task": {"surface": n, "implicit": n}}``; pairs without a tier are left out."""
    if "meta" not in df.columns or df.empty:
        return {}
    te = df[(df["split"] == "test") & (df["label"] == "misbehavior")]
    out: dict[str, dict[str, int]] = {}
    for cat, task, meta in zip(te["category"], te["task"], te["meta"]):
        tier = meta.get("tier") if isinstance(meta, dict) else None
        if tier in ("surface", "implicit"):
            c = out.setdefault(f"{cat}/{task}", {"surface": 0, "implicit": 0})
            c[tier] += 1
    return dict(sorted(out.items()))


def hard_certificate(engine) -> dict[str, Any] | None:
    """What the newest build selected ``hard`` with and certified it against (``store.queries.samples.
    hard_certificate`` of the newest build report: the ``selection`` and ``held_out`` detector families, the
    band, the per-slice certification with intervals and effective n, the cells with no implicit tier, the
    readings); ``None`` when the store was never built with them."""
    from store.queries.samples import hard_certificate as cert, latest_build_report

    with session_scope(engine) as s:
        return cert(latest_build_report(s))


def run_audit(engine, edition: str = "paper") -> dict[str, Any]:
    """Audit ``edition`` of the store (:func:`load_samples` + :func:`audit_frame`); the document gains
    ``"test_set"`` (how the test set was chosen), for ``hard`` the detectors it was selected with and
    certified against (``"hard"``: :func:`hard_certificate`), and the errata in force per source (``errata``: the
    counts of the errata in force, shipped and stored, :func:`automonitor.data.errata.errata_counts`, next to the test
    pairs of this edition they mark). Raises ``InputError`` for an unknown edition or errata file."""
    df, how = load_samples(engine, edition)
    doc = audit_frame(df, edition)
    doc["test_set"] = how
    doc["tiers"] = tier_counts(df)
    if edition == "hard":
        doc["hard"] = hard_certificate(engine)
    with session_scope(engine) as s:
        errata = errata_in_force(s)
    doc["errata"] = {**errata_counts(errata), **doc["errata"]}
    return doc
