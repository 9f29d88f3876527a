"""Assignment of candidate items to annotators: :func:`assign` (per annotator batches or shared
rounds, :func:`plan_rounds`) and the non-adjacent ordering of pair sides."""

from __future__ import annotations

from collections import Counter
import random
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypedDict

from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.annotation.accounts import Account, require_admin
from automonitor.annotation._common import transaction
from automonitor.annotation.queries import annotator_loads, assignment_rows, candidate_samples, label_rows
from automonitor.errors import InputError
from store.models import utcnow
from store.queries import annotation as store
from store.queries.rowtypes import CandidateItem, NewAssignment, OpenAssignment

_SHUFFLE_ATTEMPTS = 500  # orders drawn by _arrange before it settles for the fewest adjacencies

#: How a pair reaches the gold set under pair spread, in the words the CLI's ``assign --limit`` and the
#: Adjudicate page's round form both show next to the limit.
PAIR_RULE = (
    "A pair reaches the gold set only whole: both sides resolved, one misbehavior and one benign. With pair "
    "spread (the default) a round holds one side of each pair, so a pilot takes two rounds: the next round "
    "takes the other sides."
)


class RoundInfo(TypedDict):
    """One batch of an assignment round (:attr:`AssignResult.rounds`): its number, items, whether it is
    the calibration batch, and its annotators' names."""

    batch: int
    items: int
    calibration: bool
    annotators: list[str]


class SessionInfo(TypedDict):
    """What a small session drew (:attr:`AssignResult.session`): the ``limit`` asked, ``sampling``
    (``stratified`` or ``random``), ``overlap`` share, items ``shared`` by everyone and labelled once
    (``single``), ``pair_spread``, ``pairs`` touched and items per ``category/task``."""

    limit: int
    sampling: str
    overlap: float
    shared: int
    single: int
    pair_spread: bool
    pairs: int
    by_category_task: dict[str, int]


class ReassignResult(TypedDict):
    """:func:`reassign_open`'s outcome: items ``moved``, per new annotator name, and the items ``left``."""

    moved: int
    by_annotator: dict[str, int]
    left: list[str]


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
    rounds: list[RoundInfo] = field(default_factory=list)
    session: SessionInfo | None = None

    def explain(self) -> list[str]:
        """The outcome in words, one sentence a line (the same lines in the CLI's ``assign`` and on the
        Adjudicate page): the first counts the items and assignments (for a small session: the
        round's items and its batch number), then, for a small session, how its items were shared,
        the pair rule under pair spread (:data:`PAIR_RULE`) and a shortfall against the limit."""
        if self.session is None:
            return [f"{self.items} items, {self.assignments} assignments (k={self.k}, seed={self.seed})"]
        ses = self.session
        batch = f" (batch {self.rounds[0]['batch']})" if self.rounds else ""
        lines = [
            f"Assigned a round of {self.items} item(s){batch}: {self.assignments} assignments (seed={self.seed})",
            f"session: {ses['shared']} item(s) for every annotator, {ses['single']} labelled once, "
            f"{ses['pairs']} pair(s), pair spread {'on' if ses['pair_spread'] else 'off'}",
        ]
        if ses["pair_spread"] and self.items:
            lines.append(
                "a pair reaches the gold set only whole: this round holds at most one side of each pair; its "
                "other side comes in another round (`automonitor assign --limit N`, or the Adjudicate page's round)"
            )
        if self.items < ses["limit"]:
            lines.append(f"only {self.items} of the {ses['limit']} requested item(s) were available")
        return lines

    def to_json(self) -> dict[str, object]:
        """The contract's ``assign --json`` document (plus ``seed``, ``k``, ``batch`` and, in rounds,
        ``rounds``: ``[{"batch", "items", "calibration", "annotators"}]``; for a small session
        ``session``: ``{"limit", "sampling", "overlap", "shared", "single", "pair_spread", "pairs",
        "by_category_task"}``)."""
        doc: dict[str, object] = {
            "items": self.items,
            "assignments": self.assignments,
            "by_annotator": dict(self.by_annotator),
            "seed": self.seed,
            "k": self.k,
            "batch": dict(self.batch),
        }
        if self.rounds:
            doc["rounds"] = [dict(r) for r in self.rounds]
        if self.session is not None:
            doc["session"] = dict(self.session)
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


def _check_assign_args(k: int, seed: int | None, batch_size: int | None, calibration: int) -> int:
    """Validate the arguments of :func:`assign`; returns the seed (drawn at random when ``None``).

    Raises:
        InputError: see :func:`assign` (fields ``k``, ``seed``, ``batch_size``, ``calibration``).
    """
    if k < 1:
        raise InputError("k must be a positive integer", field="k")
    if seed is None:
        seed = secrets.randbelow(2**31)
    if seed < 0:
        raise InputError("seed must be a non-negative integer", field="seed")
    if batch_size is not None and batch_size < 2:
        raise InputError("batch size must be an integer >= 2 (a batch holds whole pairs)", field="batch_size")
    if calibration < 0:
        raise InputError("calibration must be a non-negative number of pairs", field="calibration")
    if calibration and batch_size is None:
        raise InputError("a calibration round needs --batch-size (rounds)", field="calibration")
    return seed


def assign(
    engine: Engine,
    actor: Account,
    k: int = 2,
    seed: int | None = None,
    *,
    batch_size: int | None = None,
    calibration: int = 0,
    limit: int | None = None,
    overlap: float = 1.0,
    stratify: bool = False,
    pair_spread: bool = True,
) -> AssignResult:
    """Assign every unassigned candidate item to ``k`` annotators (admin only).

    Both sides of a pair go to the same ``k`` active annotator-role accounts, chosen least-loaded
    first (ties broken by the seeded RNG), so total loads differ by at most one pair. The new items of
    each annotator form a new batch appended to their queue, in an order randomised with
    ``random.Random(f"{seed}:{annotator_id}")`` such that the two sides of a pair are never adjacent.
    ``seed`` (drawn at random when ``None``) is recorded on every assignment row.

    With ``batch_size`` (labelling rounds) the work is split into shared batches instead: see
    :func:`plan_rounds`. The pairs are shuffled with ``random.Random(seed)`` (never by source or
    label), cut into batches of at most ``batch_size`` items (whole pairs; a batch holds at least one
    pair), and every batch goes to ``k`` annotators chosen least-loaded first; the annotators who share
    a batch get it in the *same* order (sides of a pair never adjacent). ``calibration`` pairs (drawn
    first) form a calibration batch that *every* active annotator labels before anything else. Batch
    numbers are then global (the same number for everybody sharing the batch), so agreement can be
    computed after the first batch.

    With ``limit`` (a small session) only ``limit`` unassigned items are assigned, as one
    round (one global batch number): drawn in a seeded random order (``random.Random(f"{seed}:session")``),
    or with ``stratify`` stratified by category x task (largest-remainder shares). Pairs already
    started in an earlier round come first, so a later round completes them. ``round(overlap * n)``
    of the ``n`` drawn items go to *every* active annotator (``k`` does not apply); the rest are
    labelled once, least-loaded first. With ``pair_spread`` (the default) a round holds at most one
    side of each pair (its other side waits for a later round), and a side labelled once goes, when
    possible, to an annotator who holds no other side of its pair. ``to_json()`` adds ``session``.

    Raises:
        PermissionDenied: ``actor`` is not an admin.
        InputError: ``k < 1`` or fewer than ``k`` annotators (field ``k``), ``batch_size < 2``
            (field ``batch_size``), ``calibration < 0`` (field ``calibration``), ``limit < 1`` (field
            ``limit``), ``overlap`` outside [0, 1] (field ``overlap``). Nothing is written then.
    """
    require_admin(actor)
    seed = _check_assign_args(k, seed, batch_size, calibration)
    if limit is not None:
        share = _check_session_args(limit, overlap, batch_size, calibration)
        return _assign_session(engine, actor, limit, seed, share, bool(stratify), bool(pair_spread))
    if batch_size is not None:
        return _assign_rounds(engine, actor, k, seed, batch_size, calibration)
    return transaction(engine, lambda s: _assign_batches(s, actor, k, seed), actor=actor)


def _assign_batches(s: Session, actor: Account, k: int, run_seed: int) -> AssignResult:
    """:func:`assign` without rounds, inside one transaction: spread the unassigned pairs over the
    least-loaded annotators and append each annotator's share to their queue as one new batch."""
    loads, names, items = _assignment_inputs(s, actor, k)
    new = _spread_pairs(items, loads, k, random.Random(run_seed))
    now = utcnow()
    rows: list[NewAssignment] = []
    by_name: dict[str, int] = {}
    batches: dict[str, int] = {}
    for annotator_id, its in new.items():
        if not its:
            continue
        queued = _append_batch(s, annotator_id, its, run_seed, now)
        rows += queued
        by_name[names[annotator_id]] = len(queued)
        batches[names[annotator_id]] = queued[0]["batch"]
    store.insert_assignments(s, rows)
    return AssignResult(
        items=len(items), assignments=len(rows), by_annotator=by_name, seed=run_seed, k=k, batch=batches
    )


def _assignment_inputs(
    s: Session, actor: Account, k: int
) -> tuple[dict[int, int], dict[int, str], list[CandidateItem]]:
    """Lock the assignment table and read what an assignment run needs: the current load (assigned
    items) per active annotator id, their names, and the unassigned candidate items (rows with ``id``,
    ``pair_id``, ...; by pair then id).

    Raises:
        InputError: fewer than ``k`` active annotators (field ``k``).
    """
    store.lock_assignments(s)
    loads = annotator_loads(s, actor)
    if len(loads) < k:
        raise InputError(f"k={k} needs at least {k} active annotators; the store has {len(loads)}", field="k")
    names = store.annotator_names(s, loads)
    return loads, names, candidate_samples(s, actor, unassigned_only=True)


def _spread_pairs(
    items: list[CandidateItem], loads: dict[int, int], k: int, rng: random.Random
) -> dict[int, list[tuple[str, str]]]:
    """Give every pair (all its items) to the ``k`` least-loaded annotators, pairs in an order shuffled
    by ``rng`` and ties broken by ``rng``. ``loads`` (items per annotator id) is updated in place.
    Returns ``{annotator_id: [(sample_id, pair_id), ...]}`` (every annotator of ``loads``, maybe empty)."""
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
    return new


def _append_batch(
    s: Session, annotator_id: int, items: list[tuple[str, str]], seed: int, now: datetime, batch: int | None = None
) -> list[NewAssignment]:
    """The assignment rows that append ``items`` ((sample_id, pair_id)) to an annotator's queue as batch
    ``batch`` (default: a new one, their highest batch + 1), ordered by :func:`_arrange` with
    ``random.Random(f"{seed}:{annotator_id}")`` so no two sides of a pair are adjacent, also not at the
    junction with the queue's last item. Nothing is written here."""
    tail = store.queue_tail(s, annotator_id)
    prev_pair = tail[1] if tail is not None else None
    order = _arrange(items, prev_pair, random.Random(f"{seed}:{annotator_id}"))
    start = (tail[0] + 1) if tail is not None else 0
    if batch is None:
        batch = store.max_batch(s, annotator_id) + 1
    return [
        NewAssignment(
            annotator_id=annotator_id, sample_id=sid, position=start + i, seed=seed, batch=batch, created_at=now
        )
        for i, sid in enumerate(order)
    ]


@dataclass(frozen=True)
class PlannedBatch:
    """One shared batch of :func:`plan_rounds`: ``items`` in the order every annotator sees them,
    ``annotators`` (ids) who label it, and whether it is the ``calibration`` batch."""

    items: list[str]
    annotators: list[int]
    calibration: bool = False


def _cut_batches(
    pair_ids: list[str], groups: dict[str, list[str]], batch_size: int, calibration: int
) -> list[tuple[list[str], bool]]:
    """Cut the (shuffled) ``pair_ids`` into ``(pair ids, is_calibration)`` chunks: the first
    ``calibration`` pairs as the calibration chunk (when ``calibration``), then consecutive whole pairs
    of at most ``batch_size`` items per chunk (a chunk holds at least one pair). ``groups``: the item
    ids of each pair."""
    chunks: list[tuple[list[str], bool]] = []
    if calibration:
        chunks.append((pair_ids[:calibration], True))
        pair_ids = pair_ids[calibration:]
    cur: list[str] = []
    size = 0
    for pid in pair_ids:
        n_items = len(groups[pid])
        if cur and size + n_items > batch_size:
            chunks.append((cur, False))
            cur, size = [], 0
        cur.append(pid)
        size += n_items
    if cur:
        chunks.append((cur, False))
    return chunks


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
    out = []
    for i, (pids, calib) in enumerate(_cut_batches(pair_ids, groups, batch_size, calibration)):
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

    def work(s: Session) -> AssignResult:
        loads, names, items = _assignment_inputs(s, actor, k)
        plan = plan_rounds([(it["id"], it["pair_id"]) for it in items], loads, k, seed, batch_size, calibration)
        first = store.max_batch(s) + 1
        last = store.last_positions(s)
        next_position = {a: last[a] + 1 if a in last else 0 for a in loads}
        rows = _round_rows(plan, first, next_position, seed, utcnow())
        store.insert_assignments(s, rows)
        by_name: dict[str, int] = {}
        batches: dict[str, int] = {}
        for j, planned in enumerate(plan):
            for a in planned.annotators:
                by_name[names[a]] = by_name.get(names[a], 0) + len(planned.items)
                batches.setdefault(names[a], first + j)  # the first new batch of each annotator
        rounds = [
            RoundInfo(
                batch=first + j,
                items=len(planned.items),
                calibration=planned.calibration,
                annotators=sorted(names[a] for a in planned.annotators),
            )
            for j, planned in enumerate(plan)
        ]
        return AssignResult(
            items=len(items),
            assignments=len(rows),
            by_annotator=by_name,
            seed=seed,
            k=k,
            batch=batches,
            rounds=rounds,
        )

    return transaction(engine, work, actor=actor)


def _round_rows(
    plan: list[PlannedBatch], first: int, next_position: dict[int, int], seed: int, now: datetime
) -> list[NewAssignment]:
    """The assignment rows of a round plan: batch ``j`` of the plan gets the global number ``first + j``
    and is appended, in its shared order, to the queue of each of its annotators starting at
    ``next_position[annotator_id]`` (updated in place)."""
    rows: list[NewAssignment] = []
    for j, planned in enumerate(plan):
        for a in planned.annotators:
            for sid in planned.items:
                rows.append(
                    NewAssignment(
                        annotator_id=a,
                        sample_id=sid,
                        position=next_position[a],
                        seed=seed,
                        batch=first + j,
                        created_at=now,
                    )
                )
                next_position[a] += 1
    return rows


# ------------------------------------------------------------------------ small sessions
@dataclass(frozen=True)
class UnassignResult:
    """Outcome of :func:`unassign`: assignment rows ``removed`` (per annotator name in ``by_annotator``)
    and rows ``kept`` because they carry a label or belong to a submitted batch."""

    removed: int
    kept: int
    by_annotator: dict[str, int]

    def to_json(self) -> dict[str, object]:
        """``{"removed", "kept", "by_annotator"}``."""
        return {"removed": self.removed, "kept": self.kept, "by_annotator": dict(self.by_annotator)}


def _check_session_args(limit: int, overlap: float, batch_size: int | None, calibration: int) -> float:
    """Validate the small-session arguments of :func:`assign`; returns ``overlap`` as a float.

    Raises:
        InputError: ``limit < 1`` (field ``limit``), ``overlap`` outside ``[0, 1]`` (field ``overlap``),
            a session combined with ``batch_size``/``calibration`` (field ``limit``).
    """
    if limit < 1:
        raise InputError("limit must be a positive number of items", field="limit")
    share = float(overlap)
    if not 0.0 <= share <= 1.0:
        raise InputError("overlap must be a number in [0, 1] (share of items every annotator labels)", field="overlap")
    if batch_size is not None or calibration:
        raise InputError(
            "a small session (--limit/--sample) is one round: drop --batch-size/--calibration", field="limit"
        )
    return share


def _session_units(
    unassigned: list[CandidateItem], started: set[str], pair_spread: bool, rng: random.Random
) -> list[list[CandidateItem]]:
    """The units a small session draws from, in a seeded random order with the pairs already started
    (a side assigned in an earlier round) first, so a later round completes them. With
    ``pair_spread`` a unit is one side of a pair (drawn at random): a round holds at most one side of
    each pair. Without, a unit is every unassigned side of a pair."""
    groups: dict[str, list[CandidateItem]] = {}
    for it in sorted(unassigned, key=lambda r: (r["pair_id"], r["id"])):
        groups.setdefault(it["pair_id"], []).append(it)
    pair_ids = sorted(groups)
    rng.shuffle(pair_ids)
    pair_ids.sort(key=lambda p: p not in started)  # stable: started pairs first, each tier shuffled
    units = []
    for pid in pair_ids:
        sides = groups[pid]
        units.append([sides[rng.randrange(len(sides))]] if pair_spread else sides)
    return units


def _take(units: list[list[CandidateItem]], n: int) -> list[CandidateItem]:
    """The first ``n`` items of ``units`` in order (the last unit cut when it does not fit)."""
    out: list[CandidateItem] = []
    for u in units:
        if len(out) >= n:
            break
        out.extend(u[: n - len(out)])
    return out


def _stratified(units: list[list[CandidateItem]], n: int, rng: random.Random) -> list[CandidateItem]:
    """``n`` items drawn from ``units`` stratified by category x task: each stratum gets its share
    ``n * items_in_stratum / items`` rounded by the largest-remainder (Hamilton) method (ties broken by
    ``rng``), capped at what it holds; units are taken in their (random) order within a stratum."""
    strata: dict[tuple[str, str], list[list[CandidateItem]]] = {}
    for u in units:
        strata.setdefault((u[0]["category"], u[0]["task"]), []).append(u)
    sizes = {k: sum(len(u) for u in v) for k, v in strata.items()}
    total = sum(sizes.values())
    if n >= total:
        return [it for u in units for it in u]
    exact = {k: n * sizes[k] / total for k in strata}
    quota = {k: int(exact[k]) for k in strata}
    order = sorted(strata, key=lambda k: (-(exact[k] - quota[k]), rng.random()))
    for k in order[: n - sum(quota.values())]:
        quota[k] += 1
    out: list[CandidateItem] = []
    for k in sorted(strata):
        out += _take(strata[k], quota[k])
    return out


def _spread_singles(
    singles: list[CandidateItem],
    annotators: list[int],
    holders: dict[str, set[int]],
    pair_spread: bool,
    rng: random.Random,
) -> dict[int, list[CandidateItem]]:
    """Give each item of ``singles`` to one annotator: the least loaded in this session (ties by
    ``rng``); with ``pair_spread`` an annotator who holds no other side of the item's pair is
    preferred (``holders``: pair id -> annotator ids holding a side; updated in place)."""
    load = {a: 0 for a in annotators}
    out: dict[int, list[CandidateItem]] = {a: [] for a in annotators}
    for it in singles:
        held = holders.get(it["pair_id"], set())
        a = min(annotators, key=lambda x: ((pair_spread and x in held), load[x], rng.random()))
        out[a].append(it)
        load[a] += 1
        holders.setdefault(it["pair_id"], set()).add(a)
    return out


def _assign_session(
    engine: Engine, actor: Account, limit: int, seed: int, overlap: float, stratify: bool, pair_spread: bool
) -> AssignResult:
    """:func:`assign` as a small session (``limit`` given): one round, written in one transaction."""

    def work(s: Session) -> AssignResult:
        store.lock_assignments(s)
        loads = annotator_loads(s, actor)
        if not loads:
            raise InputError("a session needs at least one active annotator; the store has none", field="k")
        names = store.annotator_names(s, loads)
        annotators = sorted(loads)
        everything = candidate_samples(s, actor)
        pair_of = {it["id"]: it["pair_id"] for it in everything}
        holders: dict[str, set[int]] = {}
        for r in assignment_rows(s, actor):
            if r["sample_id"] in pair_of:
                holders.setdefault(pair_of[r["sample_id"]], set()).add(r["annotator_id"])
        assigned = {r["sample_id"] for r in assignment_rows(s, actor)}
        unassigned = [it for it in everything if it["id"] not in assigned]
        rng = random.Random(f"{seed}:session")
        units = _session_units(unassigned, set(holders), pair_spread, rng)
        picked = _stratified(units, limit, rng) if stratify else _take(units, limit)
        rng.shuffle(picked)
        n_shared = round(overlap * len(picked)) if len(annotators) > 1 else len(picked)
        shared, singles = picked[:n_shared], picked[n_shared:]
        per: dict[int, list[CandidateItem]] = {a: list(shared) for a in annotators}
        for a, its in _spread_singles(singles, annotators, holders, pair_spread, rng).items():
            per[a] += its
        batch = store.max_batch(s) + 1
        now = utcnow()
        rows: list[NewAssignment] = []
        for a in annotators:
            if per[a]:
                rows += _append_batch(s, a, [(it["id"], it["pair_id"]) for it in per[a]], seed, now, batch)
        store.insert_assignments(s, rows)
        by_name = {names[a]: len(per[a]) for a in annotators if per[a]}
        return AssignResult(
            items=len(picked),
            assignments=len(rows),
            by_annotator=by_name,
            seed=seed,
            k=len(annotators) if shared else 1,
            batch={n: batch for n in by_name},
            rounds=[RoundInfo(batch=batch, items=len(picked), calibration=False, annotators=sorted(by_name))]
            if picked
            else [],
            session=SessionInfo(
                limit=limit,
                sampling="stratified" if stratify else "random",
                overlap=overlap,
                shared=len(shared),
                single=len(singles),
                pair_spread=pair_spread,
                pairs=len({it["pair_id"] for it in picked}),
                by_category_task=dict(sorted(Counter(f"{it['category']}/{it['task']}" for it in picked).items())),
            ),
        )

    return transaction(engine, work, actor=actor)


def unassign(
    engine: Engine,
    actor: Account,
    *,
    annotator: str | None = None,
    batch: int | None = None,
    everything: bool = False,
) -> UnassignResult:
    """Take back open assignments (admin only): every assignment of ``annotator`` and/or ``batch``
    (or all of them with ``everything``) that has no label from its annotator and is not submitted;
    the items return to the unassigned pool. Labeled or submitted assignments are kept (counted in
    ``kept``): a label is never orphaned. The delete is one statement under the assignment lock.

    Raises:
        PermissionDenied: ``actor`` is not an admin.
        InputError: no selector given (field ``annotator``); unknown ``annotator`` (field
            ``annotator``); ``batch`` not a positive integer (field ``batch``). Nothing is removed then.
    """
    require_admin(actor)
    if annotator is None and batch is None and not everything:
        raise InputError("say what to unassign: --annotator NAME, --batch N or --all", field="annotator")
    if batch is not None and batch < 0:
        raise InputError("batch must be a non-negative integer", field="batch")

    def work(s: Session) -> UnassignResult:
        store.lock_assignments(s)
        who = None
        if annotator is not None:
            who = store.annotator_id(s, annotator)
            if who is None:
                raise InputError(f"no account named {annotator!r}", field="annotator")
        rows = [r for r in assignment_rows(s, actor, who) if batch is None or r["batch"] == batch]
        labeled = {(r["annotator_id"], r["sample_id"]) for r in label_rows(s, actor, who)}
        drop = [r for r in rows if r["submitted_at"] is None and (r["annotator_id"], r["sample_id"]) not in labeled]
        removed = store.delete_open_assignments(s, [r["id"] for r in drop])
        by_name = dict(Counter(r["annotator"] for r in drop))
        return UnassignResult(removed=removed, kept=len(rows) - removed, by_annotator=by_name)

    return transaction(engine, work, actor=actor)


def reassign_open(engine: Engine, actor: Account, name: str, to: str | None = None) -> ReassignResult:
    """Move the open (not submitted) assignments of the deactivated annotator ``name`` to active
    annotators (admin only): each pair's open sides go together to ``to``, else to the least-loaded
    active annotator who holds no side of that pair, at the end of their queue (batch kept). Their
    unsubmitted drafts on those items are dropped (a draft is no label); their submitted labels stay,
    under their name (provenance). Recorded in ``account_event`` (action ``reassigned``).

    Returns:
        ``{"moved": int, "by_annotator": {name: int}, "left": [sample_id, ...]}``: ``left`` are items
        no eligible annotator could take (they stay with ``name``).
    Raises:
        InputError: ``name`` is still active, or ``to`` is not an active annotator (field ``to``).
        PermissionDenied: ``actor`` is not an admin. NotFound: no such user.
    """
    from automonitor.annotation.accounts import account_row
    from store.queries import accounts as account_store

    require_admin(actor)

    def work(s: Session) -> ReassignResult:
        store.lock_assignments(s)
        src = account_row(s, name)
        if src.active:
            raise InputError(f"user {src.name!r} is active: deactivate them first", field="name")
        src_id = int(src.id or 0)
        loads = annotator_loads(s, actor)  # active annotator-role accounts only
        names = store.annotator_names(s, loads)
        if to is not None:
            ids = [aid for aid, n in names.items() if n == to]
            if not ids:
                raise InputError(f"{to!r} is not an active annotator", field="to")
            loads = {ids[0]: loads[ids[0]]}
        open_rows = store.open_assignments(s, src_id)
        held = store.pairs_held(s)
        by_pair: dict[str, list[OpenAssignment]] = {}
        for r in open_rows:
            by_pair.setdefault(r["pair_id"], []).append(r)
        tails = store.last_positions(s)
        moved: dict[str, int] = {}
        left: list[str] = []
        for pair_id, rows in by_pair.items():
            fit = [aid for aid in loads if pair_id not in held.get(aid, set())]
            if not fit:
                left += [r["sample_id"] for r in rows]
                continue
            dest = min(fit, key=lambda a: (loads[a], a))
            for r in rows:
                tails[dest] = tails.get(dest, -1) + 1
                store.move_assignment(s, r["id"], dest, tails[dest])
                loads[dest] += 1
                moved[names[dest]] = moved.get(names[dest], 0) + 1
            held.setdefault(dest, set()).add(pair_id)
            store.delete_drafts(s, src_id, [r["sample_id"] for r in rows])
        total = sum(moved.values())
        if total:
            detail = ", ".join(f"{n}: {c}" for n, c in sorted(moved.items()))
            account_store.record_event(s, src_id, "reassigned", actor.name, f"{total} open item(s) to {detail}")
        return ReassignResult(moved=total, by_annotator=dict(sorted(moved.items())), left=sorted(left))

    return transaction(engine, work, actor=actor, write_lock=True)
