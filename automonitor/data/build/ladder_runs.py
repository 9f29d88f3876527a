"""The detector ladder as runs in the store: one run of kind ``ladder`` per detector the build ran.

The build (:func:`automonitor.data.build.reconcile.build`) writes each detector of
:data:`~automonitor.data.build.ladder.BUILD_DETECTORS` that scored something as a finished run
``ladder-<detector>`` (monitor ``ladder:<detector>``, template ``ladder``, edition :data:`EDITION`) from the
ladder's result, cached or not: nothing is recomputed to write it. Its predictions are the detector's
scores on the members of :data:`EDITION` (both sides of each pair) and on the benign-only controls it
applies to: ``score`` the detector's score (P(misbehavior) for a probe, 0/1 for a pattern, a lexicon
oriented per cell), outcome ``misbehavior`` when the score is >= 0.5 (the ladder's flag) else ``benign``.
So a detector reads like any monitor: ``report --run ladder-char_ngram --json`` gives its MR/FAR per slice,
per tier and on ``hard``; ``derive`` combines detectors.

Provenance, in the run's ``params["ladder"]``: ``detector``, ``family`` (``selection`` or ``held_out``: which
part of the battery the ``hard`` edition selects with or keeps to certify), ``scope``, ``trained``, ``doc``,
``parameters`` (:func:`~automonitor.data.build.ladder.detector_parameters`), ``version`` (the ladder's),
``runs_version`` (:data:`RUNS_VERSION`), ``seed``, ``ladder_key`` (the ladder's cache key: it hashes the
judged and train texts, the seed, the code and the library versions), ``fingerprint`` (:func:`fingerprint`),
``fitted`` / ``orientation`` (how the detector was fitted or oriented per cell), ``cpu_seconds`` of the run
that computed it and ``computed`` (``cache`` or ``fresh``).

A rebuild rewrites a ladder run only when its fingerprint changed (another seed, other texts, other
code), when it judged a sample the build moves, or with ``build --refresh-ladder`` (which also recomputes
the ladder): a warm build writes nothing. A build with the ladder off (``hard=False``) deletes them. The
build owns these runs: they never block a reseed (they are replaced with the samples), and a user's run
is never touched.

Ladder runs are left out of the default lists (``runs``, ``report`` without ``--run``, the app's run
history and Trade-off plane) so that ten cheap detectors do not crowd the monitors a user ran; ``runs
--ladder``, ``report --ladder`` and the plane's *Detector ladder* switch show them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from automonitor.data.build.ladder import (
    DETECTORS,
    LADDER_VERSION,
    LadderResult,
    detector_parameters,
)
from automonitor.vocab import CONTROLS_SPLIT

if TYPE_CHECKING:
    from sqlmodel import Session

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
    """Insert ``runs`` (their samples must be stored); returns how many."""
    from store.queries import ladder_runs as q

    for r in runs:
        q.insert_run(session, run_id=r.run_id, monitor=r.monitor, edition=EDITION, params=r.params, scores=r.scores)
    return len(runs)
