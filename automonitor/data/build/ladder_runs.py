"""The detector ladder as runs in the store: one finished run ``ladder-<detector>`` (kind ``ladder``, monitor
``ladder:<detector>``, template ``ladder``, edition :data:`EDITION`) per detector of
:data:`~automonitor.data.build.ladder.BUILD_DETECTORS` that scored something, written by the build from the
ladder's result, cached or not; a prediction per sample it applies to (``score``; outcome ``misbehavior``
when the score is >= 0.5). Its provenance (``params["ladder"]``: ``runs_version`` :data:`RUNS_VERSION`,
``fingerprint`` :func:`fingerprint`, ...), when a rebuild rewrites it (fingerprint changed, a judged sample
moved, ``--refresh-ladder``; ``hard=False`` deletes them) and where the lists show it:
``docs/explanation/hard.md``, "The ladder as runs". A user's run is never touched.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from automonitor.vocab import CONTROLS_SPLIT

if TYPE_CHECKING:  # the ladder (it imports pandas) loads when runs are planned, not when stored ones are written
    from sqlmodel import Session

    from automonitor.data.build.ladder import LadderResult

RUNS_VERSION = 1
#: the edition a ladder run judges (``hard`` is drawn from it; the difficulty section reads ``hard`` in it)
EDITION = "verified"
RUN_PREFIX = "ladder-"
MONITOR_PREFIX = "ladder:"


def run_id(detector: str) -> str:
    """The id of detector ``detector``'s run (``ladder-<detector>``)."""
    return f"{RUN_PREFIX}{detector}"


@dataclass(frozen=True)
class LadderRun:
    """One ladder run to store: ``run_id``, ``detector``, ``monitor``, ``fingerprint`` (:func:`fingerprint`),
    ``params`` (provenance, module doc: ``params["ladder"]`` holds the fingerprint too) and ``scores``
    (``[(sample_id, score)]`` in sample-id order)."""

    run_id: str
    detector: str
    monitor: str
    fingerprint: str
    params: dict[str, object]
    scores: list[tuple[str, float]]


def fingerprint(detector: str, ladder_key: str, scores: list[tuple[str, float]]) -> str:
    """SHA-256 of (:data:`RUNS_VERSION`, the ladder's cache key, the detector, its ``(sample_id, score)``
    list): equal exactly when the run would be written the same."""
    doc = json.dumps([RUNS_VERSION, ladder_key, detector, scores], separators=(",", ":"))
    return hashlib.sha256(doc.encode()).hexdigest()


def _member(row: Mapping[str, object]) -> bool:
    eds = row.get("editions")
    return row["split"] == "test" and isinstance(eds, (tuple, list)) and EDITION in eds


def plan_runs(
    rows: Sequence[Mapping[str, object]], res: LadderResult, *, ladder_key: str, seed: int, cached: bool
) -> list[LadderRun]:
    """The ladder runs of a plan (module doc): one per detector of ``res`` that scored a member of
    :data:`EDITION` or a control among ``rows`` (the plan's sample rows), in battery order."""
    from automonitor.data.build.ladder import DETECTORS, LADDER_VERSION, detector_parameters

    controls = {str(r["id"]) for r in rows if r["split"] == CONTROLS_SPLIT}
    members = sorted(controls | {str(r["id"]) for r in rows if _member(r)})
    out: list[LadderRun] = []
    for d in DETECTORS:
        sc = res.scores.get(d.name)
        if not sc:
            continue
        scores = [(i, float(sc[i])) for i in members if i in sc]
        if not scores:
            continue
        n_ctrl = sum(1 for i, _ in scores if i in controls)
        fp = fingerprint(d.name, ladder_key, scores)
        prov: dict[str, object] = {
            "detector": d.name,
            "family": d.family,
            "scope": d.scope,
            "trained": d.trained,
            "doc": d.doc,
            "parameters": detector_parameters(d.name),
            "version": LADDER_VERSION,
            "runs_version": RUNS_VERSION,
            "seed": seed,
            "ladder_key": ladder_key,
            "fingerprint": fp,
            "fitted": res.fitted.get(d.name, {}),
            "orientation": res.orientation.get(d.name, {}),
            "cpu_seconds": res.seconds.get(d.name),
            "computed": "cache" if cached else "fresh",
            "samples": {"edition": len(scores) - n_ctrl, "controls": n_ctrl},
        }
        params: dict[str, object] = {"ladder": prov, "edition": EDITION}
        out.append(LadderRun(run_id(d.name), d.name, f"{MONITOR_PREFIX}{d.name}", fp, params, scores))
    return out


def retire_stale(
    session: Session, runs: list[LadderRun], affected: Iterable[str], *, refresh: bool
) -> tuple[list[LadderRun], int]:
    """Delete the stored ladder runs that ``runs`` do not reproduce (another fingerprint, no longer planned,
    judging a sample of ``affected``: the samples the build deletes or moves; every one with ``refresh``).
    Returns ``(the runs of runs to write, after the samples are written: write_runs; how many stored runs
    were deleted)``. Runs inside the caller's transaction."""
    from store.queries import ladder_runs as q

    stored = q.stored_fingerprints(session)
    moved = set(affected)
    want = {r.run_id: r for r in runs}
    stale = [
        rid
        for rid, fp in stored.items()
        if refresh or rid not in want or fp != want[rid].fingerprint or any(sid in moved for sid, _ in want[rid].scores)
    ]
    deleted = q.delete_runs(session, stale)
    kept = set(stored) - set(stale)
    return [r for r in runs if r.run_id not in kept], deleted


def write_runs(session: Session, runs: list[LadderRun]) -> int:
    """Insert ``runs`` (their samples must be stored) as finished runs of backend ``ladder`` on :data:`EDITION`,
    a prediction per ``(sample_id, score)``: outcome ``misbehavior`` when ``score >= 0.5``, else ``benign``;
    returns how many."""
    from store.queries.analysis import insert_finished_run
    from store.queries.runs import get_or_create_monitor

    for r in runs:
        mon = get_or_create_monitor(session, r.monitor, "ladder", r.monitor.split(":", 1)[-1], None, match_backend=True)
        rows = [
            {"sample_id": sid, "outcome": "misbehavior" if s >= 0.5 else "benign", "score": s} for sid, s in r.scores
        ]
        insert_finished_run(
            session,
            run_id=r.run_id,
            monitor=mon,
            template="ladder",
            kind="ladder",
            status="finished",
            params=r.params,
            rows=rows,
            edition=EDITION,
        )
    return len(runs)
