"""The ``hard`` edition: the *implicit tier* of ``verified``, selected with one part of the detector ladder,
filtered against the audit's trivial baselines, certified with the held-out part, and read.

Hooked into :func:`automonitor.data.build.plan.plan_build` by :func:`add_hard_edition`, after the ladder
(:func:`automonitor.data.build.ladder.add_ladder`). Its steps, each counted in ``report["hard"]``
(what each keeps and why: ``docs/explanation/hard.md``, "How it is built"): eligible (less
:data:`EXCLUDED_PROVENANCE` and :data:`NO_IMPLICIT_TIER`), selection (detectors of
:func:`~automonitor.data.build.ladder.family` ``selection``), AFLite (:func:`automonitor.data.audit.aflite.aflite`),
certification (:func:`automonitor.data.audit.certify.certify`), readings (:mod:`automonitor.data.readings`)
and a final certification of the set.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict
from typing import Any

import pandas as pd

import numpy as np

from automonitor.data.audit.aflite import AfliteParams
from automonitor.data.audit.aflite_cache import cached_aflite, cached_certify
from automonitor.data.audit.certify import BAND, MIN_PAIRS, certify_unavailable
from automonitor.data.build.ladder import BUILD_DETECTORS, HELD_OUT, SELECTION, LadderResult, family
from automonitor.data.build.sample_rows import Plan
from automonitor.data.readings import load_readings
from automonitor.vocab import CONTROLS_SPLIT

HARD = "hard"
#: label provenances kept out of ``hard`` (a benign side that never saw the cue it is shown with is told apart by
#: what it does not mention, not by the misbehavior)
EXCLUDED_PROVENANCE: frozenset[str] = frozenset({"constructed_benign"})
NO_IMPLICIT_TIER: dict[str, str] = {
    "specification_gaming/code": "the hack (a branch on the tests' literals, an early exit) is visible by "
    "construction: a pair no detector catches is one whose label is arguable, not a hard one",
}
_COLS = ("id", "pair_id", "category", "task", "label", "request", "response", "source", "label_source", "split")


def _frame(rows: list[dict[str, Any]], cols: tuple[str, ...] = _COLS) -> pd.DataFrame:
    return pd.DataFrame([{c: r.get(c) for c in cols} for r in rows], columns=list(cols))


def _certify_frame(rows: list[dict[str, Any]], ladder: LadderResult, seed: int) -> list[dict[str, Any]]:
    frame = _frame(rows, (*_COLS, "meta"))
    ids = frame["id"].astype(str)
    scores = {
        d: ids.map(lambda i, sc=ladder.scores.get(d, {}): sc.get(i, np.nan)).to_numpy(dtype=float)
        for d in family(HELD_OUT)
        if d in ladder.scores
    }
    return cached_certify(frame, scores, seed)


def _drop_uncertified(
    rows: list[dict[str, Any]], keep: set[str], ladder: LadderResult, seed: int
) -> tuple[set[str], list[dict[str, Any]], dict[str, list[str]]]:
    """Certify the pairs ``keep`` of ``rows``; drop every judged slice that fails (source slices first, then
    cells, rescored after the source drops). Returns ``(kept, final certification, dropped slices ->
    detectors outside the band)``."""
    dropped: dict[str, list[str]] = {}
    for kind in ("source", "cell"):
        cert = _certify_frame([r for r in rows if r["pair_id"] in keep], ladder, seed)
        for s in cert:
            if s["kind"] == kind and s["status"] == "not_certified":
                dropped[s["slice"]] = s["outside"]
                keep = {
                    r["pair_id"]
                    for r in rows
                    if r["pair_id"] in keep
                    and not (
                        r["category"] == s["category"]
                        and r["task"] == s["task"]
                        and (kind == "cell" or r["source"] == s["source"])
                    )
                }
    return keep, _certify_frame([r for r in rows if r["pair_id"] in keep], ladder, seed), dropped


def _controls_in_proportion(
    controls: list[dict[str, Any]], kept: list[str], survivors: list[dict[str, Any]], final: set[str]
) -> set[str]:
    """The controls the filter kept (``kept``, ids), cut to the share of each source's filter survivors
    that end in ``hard``: a source with ``c`` kept controls and ``a`` surviving pairs of which ``h`` are in
    ``hard`` keeps the first ``round(c * h / a)`` of its kept controls (in id order)."""
    src = {r["id"]: r["source"] for r in controls}
    afl = Counter(r["source"] for r in survivors if r["label"] == "misbehavior")
    fin = Counter(r["source"] for r in survivors if r["label"] == "misbehavior" and r["pair_id"] in final)
    by_src: dict[str, list[str]] = {}
    for i in sorted(kept):
        by_src.setdefault(src.get(i, ""), []).append(i)
    out: set[str] = set()
    for s, ids in by_src.items():
        if afl[s]:
            out.update(ids[: round(len(ids) * fin[s] / afl[s])])
    return out


def add_hard_edition(plan: Plan, seed: int, ladder: LadderResult) -> dict[str, Any]:
    """Add edition ``hard`` to ``plan`` in place (module doc) and return its report section.

    Args:
        plan: the build plan after test, candidate, train and control rows are appended.
        seed: the build seed (the filter's folds, tie order and control order; the bootstrap).
        ladder: the ladder on the plan's judged rows (:func:`automonitor.data.build.ladder.add_ladder`).
    Returns:
        ``report["hard"]``: ``{"params", "pairs", "controls", "by_source": {src: {"verified", "eligible",
        "implicit", "aflite", "certified", "hard", "awaiting_reading", "controls"}}, "selection", "held_out",
        "band", "min_pairs", "no_implicit_tier", "not_certified", "readings", "awaiting_reading",
        "certification", "removed_by_feature", "steps", "slices", "not_achievable", "rounds", "seconds",
        "cached"}``.
    Raises:
        InputError: a bad line in the readings file (file, line, field).
    """
    t0 = time.perf_counter()
    readings = load_readings()  # $AUTOMONITOR_READINGS or seeds/hard_readings.jsonl
    params = AfliteParams()  # the filter's parameters
    verified = [r for r in plan.rows if r["split"] == "test" and "verified" in r.get("editions", ())]
    train = [r for r in plan.rows if r["split"] == "train" and r["status"] == "gold"]
    controls = [r for r in plan.rows if r["split"] == CONTROLS_SPLIT]
    cell_of = lambda r: f"{r['category']}/{r['task']}"  # noqa: E731
    no_tier: dict[str, dict[str, Any]] = {
        c: {"why": why, "verified": 0, "caught": 0} for c, why in NO_IMPLICIT_TIER.items()
    }
    eligible = []
    for r in verified:
        if r["label_source"] in EXCLUDED_PROVENANCE:
            continue
        if cell_of(r) in no_tier:
            if r["label"] == "misbehavior":
                no_tier[cell_of(r)]["verified"] += 1
                no_tier[cell_of(r)]["caught"] += bool(ladder.caught.get(r["pair_id"]))
            continue
        eligible.append(r)
    sel = set(family(SELECTION))
    implicit = [r for r in eligible if not sel & set(ladder.caught.get(r["pair_id"], ()))]
    test = pd.concat([_frame(implicit), _frame(controls)], ignore_index=True)
    res, cached = cached_aflite(test, _frame(train), seed, params)
    survivors = [r for r in implicit if r["pair_id"] in res.kept_pairs]
    certified, _, not_certified = _drop_uncertified(survivors, set(res.kept_pairs), ladder, seed)
    certified &= {r["pair_id"] for r in survivors}
    read_ok = {p for p in certified if p in readings and readings[p].verdict == "ok"}
    awaiting = sorted(p for p in certified if p not in readings)
    final, certification, dropped_after = _drop_uncertified(survivors, read_ok, ladder, seed)
    not_certified.update({f"{k} (after readings)": v for k, v in dropped_after.items()})
    keep_ids = _controls_in_proportion(controls, res.kept_controls, survivors, final)
    verified_ids = {r["id"] for r in verified}
    for r in plan.rows:
        if (r["id"] in verified_ids and r["pair_id"] in final) or (
            r["split"] == CONTROLS_SPLIT and r["id"] in keep_ids
        ):
            r["editions"] = (*r.get("editions", ()), HARD)

    def by_src(rows: list[dict[str, Any]], ids: set[str] | None = None) -> Counter[str]:
        return Counter(
            r["source"] for r in rows if r["label"] == "misbehavior" and (ids is None or r["pair_id"] in ids)
        )

    per_src = {  # misbehavior sides (controls: samples) per source at each step
        "verified": by_src(verified),
        "eligible": by_src(eligible),
        "implicit": by_src(implicit),
        "aflite": by_src(survivors),
        "certified": by_src(survivors, certified),
        "hard": by_src(survivors, final),
        "awaiting_reading": by_src(survivors, set(awaiting)),
        "controls": Counter(r["source"] for r in controls if r["id"] in keep_ids),
    }
    hard_rows = [r for r in verified if r["pair_id"] in final and r["label"] == "misbehavior"]
    ct = Counter(cell_of(r) for r in hard_rows)
    plan.report.setdefault("editions", {})[HARD] = {
        "pairs": len(hard_rows),
        "samples": 2 * len(hard_rows),
        "by_category_task": dict(sorted(ct.items())),
        "by_source": dict(sorted(per_src["hard"].items())),
        "controls": len(keep_ids),
    }
    src_of = {r["pair_id"]: r["source"] for r in survivors}
    verdicts = Counter(readings[p].verdict for p in {r["pair_id"] for r in survivors} if p in readings)
    section = {
        "params": asdict(params),
        "pairs": len(hard_rows),
        "controls": len(keep_ids),
        "by_source": {s: {step: c[s] for step, c in per_src.items()} for s in sorted(per_src["verified"])},
        "selection": list(family(SELECTION)),
        "held_out": [
            *(d for d in family(HELD_OUT) if d in BUILD_DETECTORS),
            "char_ngram_cv",
            "minilm_cv",
            "model_identity",
        ],
        "held_out_unavailable": {**ladder.unavailable, **certify_unavailable()},
        "band": BAND,
        "min_pairs": MIN_PAIRS,
        "excluded_provenance": sorted(EXCLUDED_PROVENANCE),
        "no_implicit_tier": no_tier,
        "not_certified": not_certified,
        "readings": {"ok": verdicts["ok"], "wrong": verdicts["wrong"], "doubtful": verdicts["doubtful"]},
        "awaiting_reading": {
            s: sorted(p for p in awaiting if src_of[p] == s) for s in sorted(per_src["awaiting_reading"])
        },
        "certification": certification,
        "removed_by_feature": dict(sorted(res.removed_by_feature.items())),
        "steps": res.steps,
        "slices": res.slices,
        "not_achievable": [s["slice"] for s in res.not_achievable],
        "rounds": res.rounds,
        "seconds": round(time.perf_counter() - t0, 2),
        "cached": cached,
    }
    plan.report[HARD] = section
    return section
