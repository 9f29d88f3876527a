"""Assignment of candidate items to annotators: :func:`assign` (per annotator batches or shared
rounds, :func:`plan_rounds`) and the non-adjacent ordering of pair sides."""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from automonitor.accounts import Account, check_actor, require_admin
from automonitor.errors import InputError
from automonitor.annotation._common import _transaction

_SHUFFLE_ATTEMPTS = 500  # orders drawn by _arrange before it settles for the fewest adjacencies


@dataclass(frozen=True)
class AssignResult:
    """Outcome of :func:`assign`: ``items`` newly assigned, ``assignments`` rows created,
    ``by_annotator`` new rows per annotator name, the ``seed`` used and the new ``batch`` numbers."""

    items: int
    assignments: int
    by_annotator: dict[str, int]
    seed: int
    k: int
    batch: dict[str, int] = field(default_factory=dict)
    rounds: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The contract's ``assign --json`` document (plus ``seed``, ``k``, ``batch`` and, in rounds,
        ``rounds``: ``[{"batch", "items", "calibration", "annotators"}]``)."""
        doc = {
            "items": self.items,
            "assignments": self.assignments,
            "by_annotator": dict(self.by_annotator),
            "seed": self.seed,
            "k": self.k,
            "batch": dict(self.batch),
        }
        if self.rounds:
            doc["rounds"] = [dict(r) for r in self.rounds]
        return doc


def _arrange(items: list[tuple[str, str]], prev_pair: str | None, rng: random.Random) -> list[str]:
    """Shuffle ``items`` ((sample_id, pair_id)) so that no two items of a pair are adjacent (also not
    the first item next to ``prev_pair``). Rejection sampling: uniform over the valid orders; falls
    back to the order with the fewest adjacencies when none is valid (e.g. a single pair)."""
    best, best_bad = list(items), None
    for _ in range(_SHUFFLE_ATTEMPTS):
        order = list(items)
        rng.shuffle(order)
        bad = sum(
            1 for a, b in zip([prev_pair] + [p for _, p in order], [p for _, p in order]) if a is not None and a == b
        )
        if best_bad is None or bad < best_bad:
            best, best_bad = order, bad
        if bad == 0:
            break
    return [sid for sid, _ in best]


def assign(
    engine: Engine,
    actor: Account,
    k: int = 2,
    seed: int | None = None,
    *,
    batch_size: int | None = None,
    calibration: int = 0,
) -> AssignResult:
    """Assign every unassigned candidate item to ``k`` annotators (admin only).

    Both sides of a pair go to the same ``k`` active annotator-role accounts, chosen least-loaded
    first (ties broken by the seeded RNG), so total loads differ by at most one pair. The new items of
    each annotator form a new batch appended to their queue, in an order randomised with
    ``random.Random(f"{seed}:{annotator_id}")`` such that the two sides of a pair are never adjacent.
    ``seed`` (drawn at random when ``None``) is recorded on every assignment row.

    With ``batch_size`` (rounds, issue 12) the work is split into shared batches instead: see
    :func:`plan_rounds`. The pairs are shuffled with ``random.Random(seed)`` (never by source or
    label), cut into batches of at most ``batch_size`` items (whole pairs; a batch holds at least one
    pair), and every batch goes to ``k`` annotators chosen least-loaded first; the annotators who share
    a batch get it in the *same* order (sides of a pair never adjacent). ``calibration`` pairs (drawn
    first) form a calibration batch that *every* active annotator labels before anything else. Batch
    numbers are then global (the same number for everybody sharing the batch), so agreement can be
    computed after the first batch.

    Raises:
        PermissionDenied: ``actor`` is not an admin.
        InputError: ``k < 1`` or fewer than ``k`` annotators (field ``k``), ``batch_size < 2``
            (field ``batch_size``), ``calibration < 0`` (field ``calibration``). Nothing is written then.
    """
    from store.models import Assignment, utcnow
    from automonitor.annotation.queries import annotator_loads, candidate_samples

    require_admin(actor)
    if not isinstance(k, int) or k < 1:
        raise InputError("k must be a positive integer", field="k")
    if seed is None:
        seed = secrets.randbelow(2**31)
    if not isinstance(seed, int) or seed < 0:
        raise InputError("seed must be a non-negative integer", field="seed")
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 2):
        raise InputError("batch size must be an integer >= 2 (a batch holds whole pairs)", field="batch_size")
    if not isinstance(calibration, int) or calibration < 0:
        raise InputError("calibration must be a non-negative number of pairs", field="calibration")
    if calibration and batch_size is None:
        raise InputError("a calibration round needs --batch-size (rounds)", field="calibration")
    if batch_size is not None:
        return _assign_rounds(engine, actor, k, seed, batch_size, calibration)

    def work(s) -> AssignResult:
        from store.models import Annotator

        check_actor(s, actor)
        if s.get_bind().dialect.name == "postgresql":
            s.execute(sa.text("LOCK TABLE assignment IN SHARE ROW EXCLUSIVE MODE"))
        loads = annotator_loads(s, actor)
        names = dict(s.execute(sa.select(Annotator.id, Annotator.name).where(Annotator.id.in_(list(loads)))).all())
        if len(loads) < k:
            raise InputError(f"k={k} needs at least {k} active annotators; the store has {len(loads)}", field="k")
        items = candidate_samples(s, actor, unassigned_only=True)
        rng = random.Random(seed)
        groups: dict[str, list[str]] = {}
        for it in items:
            groups.setdefault(it["pair_id"], []).append(it["id"])
        pair_ids = sorted(groups)
        rng.shuffle(pair_ids)
        new: dict[int, list[tuple[str, str]]] = {a: [] for a in loads}
        for pid in pair_ids:
            chosen = sorted(loads, key=lambda a: (loads[a], rng.random()))[:k]
            for a in chosen:
                new[a].extend((sid, pid) for sid in groups[pid])
                loads[a] += len(groups[pid])
        # the tail of each annotator's existing queue, for the non-adjacency check at the junction
        tails = {}
        for a in new:
            last = s.execute(
                sa.select(Assignment.position, Assignment.batch, Assignment.sample_id)
                .where(Assignment.annotator_id == a)
                .order_by(Assignment.position.desc())
                .limit(1)
            ).first()
            tails[a] = last
        from store.models import Sample

        now = utcnow()
        rows, by_name, batches = [], {}, {}
        for a, its in new.items():
            if not its:
                continue
            last = tails[a]
            prev_pair = None
            if last is not None:
                prev_pair = s.execute(sa.select(Sample.pair_id).where(Sample.id == last.sample_id)).scalar()
            order = _arrange(its, prev_pair, random.Random(f"{seed}:{a}"))
            start = (last.position + 1) if last is not None else 0
            batch = (
                s.execute(sa.select(sa.func.max(Assignment.batch)).where(Assignment.annotator_id == a)).scalar() or 0
            ) + 1
            for i, sid in enumerate(order):
                rows.append(
                    {
                        "annotator_id": a,
                        "sample_id": sid,
                        "position": start + i,
                        "seed": seed,
                        "batch": batch,
                        "created_at": now,
                    }
                )
            by_name[names[a]] = len(order)
            batches[names[a]] = batch
        if rows:
            s.execute(sa.insert(Assignment), rows)
        return AssignResult(
            items=len(items), assignments=len(rows), by_annotator=by_name, seed=seed, k=k, batch=batches
        )

    return _transaction(engine, work)


@dataclass(frozen=True)
class PlannedBatch:
    """One shared batch of :func:`plan_rounds`: ``items`` in the order every annotator sees them,
    ``annotators`` (ids) who label it, and whether it is the ``calibration`` batch."""

    items: list[str]
    annotators: list[int]
    calibration: bool = False


def plan_rounds(
    items: list[tuple[str, str]], loads: dict[int, int], k: int, seed: int, batch_size: int, calibration: int = 0
) -> list[PlannedBatch]:
    """Cut candidate items into shared batches (pure function; :func:`assign` writes the result).

    Args:
        items: ``(sample_id, pair_id)`` of the unassigned candidate items (any order; sorted here, so
            the plan depends only on the ids and ``seed``, never on source or label).
        loads: current number of assigned items per annotator id (updated copy used for balancing).
        k: annotators per batch. seed: RNG seed. batch_size: max items per batch (>= 2; whole pairs,
            so a batch holds at least one pair). calibration: pairs in a first batch for everybody.

    Returns:
        the batches in order: the calibration batch first (when ``calibration``), then regular batches
        of ``floor(batch_size / 2)`` pairs (for two-sided pairs) each given to the ``k`` least-loaded
        annotators (ties broken by the seeded RNG). Each batch's order is drawn by :func:`_arrange`
        with ``random.Random(f"{seed}:round:{index}")``: no two sides of a pair adjacent.
    """
    rng = random.Random(seed)
    groups: dict[str, list[str]] = {}
    for sid, pid in sorted(items):
        groups.setdefault(pid, []).append(sid)
    pair_ids = sorted(groups)
    rng.shuffle(pair_ids)
    loads = dict(loads)
    chunks: list[tuple[list[str], bool]] = []
    if calibration:
        chunks.append((pair_ids[:calibration], True))
        pair_ids = pair_ids[calibration:]
    cur: list[str] = []
    size = 0
    for pid in pair_ids:
        n = len(groups[pid])
        if cur and size + n > batch_size:
            chunks.append((cur, False))
            cur, size = [], 0
        cur.append(pid)
        size += n
    if cur:
        chunks.append((cur, False))
    out = []
    for i, (pids, calib) in enumerate(chunks):
        if not pids:
            continue
        its = [(sid, pid) for pid in pids for sid in groups[pid]]
        order = _arrange(its, None, random.Random(f"{seed}:round:{i}"))
        who = sorted(loads) if calib else sorted(loads, key=lambda a: (loads[a], rng.random()))[:k]
        for a in who:
            loads[a] += len(order)
        out.append(PlannedBatch(items=order, annotators=sorted(who), calibration=calib))
    return out


def _assign_rounds(
    engine: Engine, actor: Account, k: int, seed: int, batch_size: int, calibration: int
) -> AssignResult:
    """:func:`assign` in rounds (``batch_size`` given): write :func:`plan_rounds` in one transaction."""
    from store.models import Annotator, Assignment, utcnow
    from automonitor.annotation.queries import annotator_loads, candidate_samples

    def work(s) -> AssignResult:
        check_actor(s, actor)
        if s.get_bind().dialect.name == "postgresql":
            s.execute(sa.text("LOCK TABLE assignment IN SHARE ROW EXCLUSIVE MODE"))
        loads = annotator_loads(s, actor)
        if len(loads) < k:
            raise InputError(f"k={k} needs at least {k} active annotators; the store has {len(loads)}", field="k")
        names = dict(s.execute(sa.select(Annotator.id, Annotator.name).where(Annotator.id.in_(list(loads)))).all())
        items = candidate_samples(s, actor, unassigned_only=True)
        plan = plan_rounds([(it["id"], it["pair_id"]) for it in items], loads, k, seed, batch_size, calibration)
        first = (s.execute(sa.select(sa.func.max(Assignment.batch))).scalar() or 0) + 1
        nextpos = {
            a: p
            for a, p in s.execute(
                sa.select(Assignment.annotator_id, sa.func.max(Assignment.position)).group_by(Assignment.annotator_id)
            )
        }
        nextpos = {a: (nextpos[a] + 1 if nextpos.get(a) is not None else 0) for a in loads}
        now = utcnow()
        rows, by_name, batches = [], {}, {}
        for j, b in enumerate(plan):
            number = first + j
            for a in b.annotators:
                for sid in b.items:
                    rows.append(
                        {
                            "annotator_id": a,
                            "sample_id": sid,
                            "position": nextpos[a],
                            "seed": seed,
                            "batch": number,
                            "created_at": now,
                        }
                    )
                    nextpos[a] += 1
                by_name[names[a]] = by_name.get(names[a], 0) + len(b.items)
                batches.setdefault(names[a], number)  # the first new batch of each annotator
        if rows:
            s.execute(sa.insert(Assignment), rows)
        return AssignResult(
            items=len(items),
            assignments=len(rows),
            by_annotator=by_name,
            seed=seed,
            k=k,
            batch=batches,
            rounds=[
                {
                    "batch": first + j,
                    "items": len(b.items),
                    "calibration": b.calibration,
                    "annotators": sorted(names[a] for a in b.annotators),
                }
                for j, b in enumerate(plan)
            ],
        )

    return _transaction(engine, work)
