"""Selection: the gated, de-duplicated pool, the seeded test draw per quota, the candidate pool, the
train split and the controls, as rows appended to a :class:`~automonitor.data.build.sample_rows.Plan` (package
doc, "Selection" to "Train split")."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from automonitor.data.build.config import (
    HAND_CHECK_FAILED,
    NOT_VERIFIED,
    OTHER_PROMPT_PROVENANCES,
    PAPER_CELLS_PLAN,
    PAPER_R2,
    TEST_PLAN,
    Cell,
    Quota,
    candidate_plan,
    verified_extra,
)
from automonitor.data.errata import Erratum, apply_errata
from automonitor.data.families import families
from automonitor.data.build.gating import apply_gates
from automonitor.data.build.sample_rows import Plan, pair_hashes, rows_for, shuffled, proportional, rng_for
from automonitor.data.gates import conversation_groups
from automonitor.data.sources import OPTIONAL_SOURCES, REGISTRY, SourcePair, SourceResult
from automonitor.vocab import CONTROLS_SPLIT, DIFFICULTY_EDITIONS


@dataclass
class Blocked:
    """Text hashes a pair may not share: request hashes and response hashes (either side)."""

    req: set[str] = field(default_factory=set)
    resp: set[str] = field(default_factory=set)

    def __or__(self, other: Blocked) -> Blocked:
        return Blocked(self.req | other.req, self.resp | other.resp)


@dataclass
class Pool:
    """Every source's gated, de-duplicated pairs (source name -> pairs, in load order), their
    ``(request, misbehavior, benign)`` sha256 hashes by ``pair_id``, the gate counts per source and
    the hh_rlhf conversation group of each hh_rlhf ``pair_id``."""

    pairs: dict[str, list[SourcePair]] = field(default_factory=dict)
    hashes: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    gates: dict[str, Counter[str]] = field(default_factory=dict)
    conv: dict[str, int] = field(default_factory=dict)
    errata_applied: dict[str, str] = field(default_factory=dict)  # erratum pair id -> pool pair_id
    by_language: dict[str, dict[str, Counter[str]]] = field(default_factory=dict)  # analyser gate counts
    family: dict[str, int] = field(default_factory=dict)  # pair_id -> problem family (data.families)
    #: pair_id -> why :func:`gated_pool` dropped it: ``(reason, pair_id of the pair kept instead)``
    dropped_for: dict[str, tuple[str, str]] = field(default_factory=dict)

    def collides(self, p: SourcePair, blocked: Blocked) -> bool:
        """Whether pool pair ``p`` shares its request or a response with ``blocked``."""
        h = self.hashes[p.pair_id]
        return h[0] in blocked.req or h[1] in blocked.resp or h[2] in blocked.resp


@dataclass
class TestSet:
    """The test selection: pairs per source, the ``paper-r2`` quota rows of the report (``source``,
    ``category``, ``task``, ``target_pairs``, ``built_pairs``), the paper cell rows (``category``,
    ``task``, ``target_pairs``, ``built_pairs``, ``missing_pairs``, ``by_source``, ``why``), the ids of
    the ``paper-r2`` and ``paper`` pairs and the hashes of the chosen texts."""

    pairs: dict[str, list[SourcePair]] = field(default_factory=dict)
    quotas: list[dict[str, Any]] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)
    r2_ids: set[str] = field(default_factory=set)
    paper_ids: set[str] = field(default_factory=set)
    unbalanced: dict[str, str] = field(default_factory=dict)  # pair_id -> why side balance keeps it out of verified
    balance: dict[str, dict[str, Any]] = field(default_factory=dict)  # source -> side-balance report
    req: set[str] = field(default_factory=set)
    mis: set[str] = field(default_factory=set)
    ben: set[str] = field(default_factory=set)

    def ids(self) -> set[str]:
        """``pair_id`` of every test pair."""
        return {p.pair_id for ps in self.pairs.values() for p in ps}


# Candidate pairs per source, each with the reason it is a candidate (``None``: a planned draw).
Candidates = dict[str, list[tuple[SourcePair, str | None]]]


@dataclass
class TrainCounts:
    """Per source: train pairs kept, dropped for a hash collision, dropped for sharing an hh_rlhf
    conversation with the test set or the candidate pool."""

    kept: Counter[str] = field(default_factory=Counter)
    dropped_collision: Counter[str] = field(default_factory=Counter)
    dropped_conversation: Counter[str] = field(default_factory=Counter)
    dropped_family: Counter[str] = field(default_factory=Counter)


SHARING_SOURCES = frozenset(q.shares_with for q in TEST_PLAN if q.shares_with)


def other_prompt_problem(p: SourcePair) -> str | None:
    """Why the two sides of ``p`` break the same-prompt rule of ``verified`` (``None``: they do not): a side
    answered another prompt than the request shown (``p.answered_other_prompt``) and the pair's provenance
    does not say so (not in :data:`OTHER_PROMPT_PROVENANCES`), or a ``constructed_benign`` pair does not
    name the prompt its benign side answered."""
    if p.answered_other_prompt and p.label_source not in OTHER_PROMPT_PROVENANCES:
        sides = ", ".join(f"{k}: {v}" for k, v in sorted(p.answered_other_prompt.items()))
        return f"the sides answered different prompts ({sides}) and provenance {p.label_source} does not say so"
    if p.label_source == "constructed_benign" and "benign" not in p.answered_other_prompt:
        return "constructed_benign pair without the prompt its benign side answered"
    return None


def verifiable(p: SourcePair) -> bool:
    """Whether a test pair may be in ``verified``: it passed every gate, its provenance is not in
    :data:`NOT_VERIFIED`, its sides answered the request shown or its provenance says otherwise
    (:func:`other_prompt_problem`) and its source passed the hand check (:data:`HAND_CHECK_FAILED`).
    Side balance (:func:`side_balance`) is decided over the whole selection, in :func:`editions_of`."""
    return not_verified_why(p) is None


def not_verified_why(p: SourcePair) -> str | None:
    """Why a test pair is out of ``verified`` (``None``: it is in, unless side balance leaves it out)."""
    if p.gate:
        return p.gate
    if p.label_source in NOT_VERIFIED:
        return f"{p.label_source}: enters verified only through adjudication"
    prompt = other_prompt_problem(p)
    if prompt:
        return prompt
    if p.source in HAND_CHECK_FAILED:
        return f"hand check: {HAND_CHECK_FAILED[p.source]}"
    return None


def side_models(p: SourcePair) -> tuple[str, str] | None:
    """``(misbehavior model, benign model)`` when two different models wrote the two sides (each side's
    ``meta.model``), else ``None``."""
    mis, ben = p.mis_meta.get("model"), p.ben_meta.get("model")
    if isinstance(mis, str) and isinstance(ben, str) and mis and ben and mis != ben:
        return mis, ben
    return None


def balance_slack(n: int) -> int:
    """How far apart a model's misbehavior and benign counts may be among ``n`` of its sides: 1, or a
    tenth of ``n`` (so a model is the misbehaving side in at most about 55% of its pairs)."""
    return max(1, n // 10)


def side_balance(pairs: list[SourcePair], seed: int, source: str) -> tuple[list[SourcePair], dict[str, Any]]:
    """The pairs of one source that ``verified`` keeps so that, where two models wrote the two sides, each
    model is the misbehaving side about as often as the benign side: for every model, ``|misbehavior -
    benign| <= balance_slack(misbehavior + benign)``. Pairs written by one model (or without side
    models) are all kept. Deterministic: pairs with ``meta.strict`` false come last, the rest in the
    seeded order ``rng_for(seed, source, "side balance")``; passes over that order take every pair that
    keeps both its models within the slack until a pass takes none.

    Returns:
        ``(kept pairs in their input order, report)``; report ``{"cross_model_pairs", "kept", "left_out",
        "by_model": {model: {"misbehavior": int, "benign": int}}}`` (counts of the kept pairs).
    """
    cross = [p for p in pairs if side_models(p)]
    order = shuffled(cross, rng_for(seed, source, "side balance"))
    order.sort(key=lambda p: p.meta.get("strict") is False)  # stable: strict (or unmarked) pairs first
    mis: Counter[str] = Counter()
    ben: Counter[str] = Counter()
    taken: set[str] = set()
    progress = True
    while progress:
        progress = False
        for p in order:
            if p.pair_id in taken:
                continue
            m, b = side_models(p) or ("", "")
            mis[m] += 1
            ben[b] += 1
            if all(abs(mis[x] - ben[x]) <= balance_slack(mis[x] + ben[x]) for x in (m, b)):
                taken.add(p.pair_id)
                progress = True
            else:
                mis[m] -= 1
                ben[b] -= 1
    kept = [p for p in pairs if not side_models(p) or p.pair_id in taken]
    models = sorted(set(mis) | set(ben))
    report = {
        "cross_model_pairs": len(cross),
        "kept": len(taken),
        "left_out": len(cross) - len(taken),
        "by_model": {x: {"misbehavior": mis[x], "benign": ben[x]} for x in models if mis[x] or ben[x]},
    }
    return kept, report


def balance_test(test: TestSet, seed: int, pool: Pool) -> None:
    """Side balance of ``verified`` (:func:`side_balance`), source by source over the test pairs that are
    otherwise :func:`verifiable`: fills ``test.unbalanced`` (pair_id -> why) and ``test.balance``. A pair
    that it leaves out and that no other edition drew (a verified-only quota's) leaves the test set (the
    chosen text hashes are recomputed from what stays)."""
    for source, pairs in test.pairs.items():
        candidates = [p for p in pairs if verifiable(p)]
        if not any(side_models(p) for p in candidates):
            continue
        kept, report = side_balance(candidates, seed, source)
        keep = {p.pair_id for p in kept}
        for p in candidates:
            if p.pair_id not in keep:
                test.unbalanced[p.pair_id] = (
                    "side balance: its misbehaving model is already the misbehaving side more often"
                )
        test.balance[source] = report
    gone = {i for i in test.unbalanced if i not in test.paper_ids and i not in test.r2_ids}
    if not gone:
        return
    for source, pairs in test.pairs.items():
        test.pairs[source] = [p for p in pairs if p.pair_id not in gone]
    kept = [pool.hashes[p.pair_id] for ps in test.pairs.values() for p in ps]
    test.req, test.mis, test.ben = {h[0] for h in kept}, {h[1] for h in kept}, {h[2] for h in kept}
    for i in gone:
        del test.unbalanced[i]


def editions_of(p: SourcePair, test: TestSet) -> tuple[str, ...]:
    """The editions a test pair belongs to: ``paper`` when a paper cell drew it, ``paper-r2`` when a
    source quota drew it, ``verified`` when :func:`verifiable`."""
    eds: tuple[str, ...] = ("paper",) if p.pair_id in test.paper_ids else ()
    if p.pair_id in test.r2_ids:
        eds += (PAPER_R2,)
    if verifiable(p) and p.pair_id not in test.unbalanced:
        eds += ("verified",)
    return eds


def check_verified_prompts(rows: list[dict[str, Any]]) -> None:
    """The build's same-prompt invariant over planned rows: no sample of ``verified`` or ``hard`` whose
    side answered another prompt than its request (``meta.answered_other_prompt``) unless its label
    provenance says so (:data:`OTHER_PROMPT_PROVENANCES`).

    Raises:
        RuntimeError: a row breaks it (a build bug: names the pair and the side).
    """
    for r in rows:
        if not set(DIFFICULTY_EDITIONS) & set(r.get("editions", ())):
            continue
        note = (r.get("meta") or {}).get("answered_other_prompt")
        if note and r.get("label_source") not in OTHER_PROMPT_PROVENANCES:
            raise RuntimeError(
                f"pair {r['pair_id']} is in verified but its {r['label']} side answered another prompt "
                f"({note}) and its provenance {r.get('label_source')} does not say so"
            )


SHARED_SAMPLE = "shares a sample (request and response) with a pair kept before it"


def _claim_order(staged: dict[str, list[SourcePair]], errata_only: set[str]) -> list[SourcePair]:
    """The pool's pairs in the order they claim their samples (:func:`gated_pool`): pairs that pass the
    gates first, among them pairs whose two sides both answered the request shown (no
    ``answered_other_prompt``, a provenance outside :data:`OTHER_PROMPT_PROVENANCES`), then load order.

    A pair in ``errata_only`` (one that passed every gate and then met an erratum) claims in the rank it had
    before the erratum: an erratum decides where its pair goes (the candidates), not which pair holds its
    samples. Ranked last, it would lose its doubted sample to another pair that uses it (a same-model cued
    answer is also a cross-model pair's misbehavior side), and the sample the erratum doubts would stay in
    the test set in that pair while the erratum's own pair vanished."""
    every = [p for ps in staged.values() for p in ps]
    return sorted(
        every,
        key=lambda p: (
            p.gate is not None and p.pair_id not in errata_only,
            p.label_source in OTHER_PROMPT_PROVENANCES or any(p.answered_other_prompt.values()),
        ),
    )  # sorted() is stable: load order within a rank


def gated_pool(
    results: dict[str, SourceResult], report: dict[str, Any], errata: dict[str, Erratum] | None = None
) -> Pool:
    """Gate every source's pairs (:func:`apply_gates`, then the errata in force: :func:`apply_errata`),
    drop pairs whose two responses (or ``pair_id``) an earlier pair already has, then keep every sample
    (request and response) in ONE pair: two sources can pair the same run differently (a model's cued
    answer is the misbehavior side of its cued/uncued pair and of a cross-model pair), and a sample in two
    test pairs would be counted twice. The pairs claim their samples in :func:`_claim_order` (a pair whose
    sides both saw the request shown beats a constructed benign side); a pair with a sample already
    claimed is dropped (:data:`SHARED_SAMPLE`, counted per source); a pair an erratum gates claims in its rank
    before the erratum, so the pair that loses the doubted sample is the other one. Fills ``report["sources"][name]``
    with the load counts and computes the hh_rlhf conversation groups."""
    pool = Pool()
    seen: dict[tuple[str, str], str] = {}
    staged: dict[str, list[SourcePair]] = {}
    drops: dict[str, Counter[str]] = {}
    passed: set[str] = set()  # pair ids that passed every gate (before the errata)
    for name, res in results.items():
        kept = []
        dropped = Counter(res.dropped)
        gated = apply_gates(name, res, pool.gates, pool.by_language)
        passed.update(p.pair_id for p in gated if p.gate is None)
        for p in apply_errata(gated, errata or {}, pool.gates.setdefault(name, Counter()), pool.errata_applied):
            h = pair_hashes(p)
            key = (h[1], h[2])
            if key in seen or p.pair_id in pool.hashes:
                dropped["duplicate pair (same responses as an earlier pair)"] += 1
                pool.dropped_for[p.pair_id] = ("the same two responses as", seen.get(key, p.pair_id))
                continue
            seen[key] = p.pair_id
            pool.hashes[p.pair_id] = h
            kept.append(p)
        staged[name], drops[name] = kept, dropped
    claimed: dict[tuple[str, str], str] = {}
    shared: set[str] = set()
    for p in _claim_order(staged, passed & set(pool.errata_applied.values())):
        h = pool.hashes[p.pair_id]
        keys = (h[0], h[1]), (h[0], h[2])  # the pair's two samples: (request, response) each
        taken = [(side, claimed[k]) for side, k in zip(("misbehavior", "benign"), keys) if k in claimed]
        if taken:
            shared.add(p.pair_id)
            side, owner = taken[0]
            pool.dropped_for[p.pair_id] = (f"its {side} sample (request and response) is in", owner)
        else:
            claimed.update((k, p.pair_id) for k in keys)
    for name, res in results.items():
        kept = [p for p in staged[name] if p.pair_id not in shared]
        dropped = drops[name]
        if len(kept) < len(staged[name]):
            dropped[SHARED_SAMPLE] += len(staged[name]) - len(kept)
        for p in staged[name]:
            if p.pair_id in shared:
                del pool.hashes[p.pair_id]
        pool.pairs[name] = kept
        report["sources"][name] = {
            "category": REGISTRY[name].category,
            "task": REGISTRY[name].task,
            "files_read": len(res.files),
            "files_missing": res.missing,
            "optional": name in OPTIONAL_SOURCES,
            "pairs_available": len(kept),
            "eligible_for_test": sum(p.eligible_test and not p.gate for p in kept),
            "dropped": dict(sorted(dropped.items())),
        }
    # hh_rlhf conversation groups: no conversation may be in both train and test
    hh = pool.pairs.get("hh_rlhf")
    if hh:
        for p, group in zip(hh, conversation_groups([p.request for p in hh])):
            pool.conv[p.pair_id] = group
    # problem families (versions, one function at two commits, paraphrases): no family on both sides
    every = [p for ps in pool.pairs.values() for p in ps]
    pool.family = dict(zip((p.pair_id for p in every), families(every)))
    return pool


def _stratum_allocation(order: list[SourcePair], target: int) -> dict[str, int]:
    """Pairs to draw per stratum (``group``, ``""`` for none): ``target`` split in proportion to the
    strata of ``order`` (:func:`proportional`), or all of it to the one stratum."""
    if len({p.group for p in order}) > 1:
        return proportional(dict(Counter(p.group or "" for p in order)), target)
    return {(order[0].group or "") if order else "": target}


def _draw_quota(q: Quota, target: int, pool: Pool, seed: int, test: TestSet) -> list[SourcePair]:
    """Draw up to ``target`` test pairs of quota ``q`` in seeded order, stratified by ``group``,
    skipping a pair whose misbehavior text is a chosen benign text (or vice versa); records the
    chosen hashes in ``test``. The paper mirror keeps gate-failing pairs (its noise), the
    verified-only sources do not."""
    eligible = [p for p in pool.pairs.get(q.source, []) if p.eligible_test and (q in TEST_PLAN or not p.gate)]
    order = shuffled(eligible, rng_for(seed, q.source, "test"))
    alloc = _stratum_allocation(order, target)
    taken_per: Counter[str] = Counter()
    chosen: list[SourcePair] = []
    for p in order:
        group = p.group or ""
        if taken_per[group] >= alloc.get(group, 0):
            continue
        req_hash, mis_hash, ben_hash = pool.hashes[p.pair_id]
        if mis_hash in test.ben or ben_hash in test.mis:  # same text would carry both labels in the test set
            continue
        chosen.append(p)
        taken_per[group] += 1
        test.mis.add(mis_hash)
        test.ben.add(ben_hash)
        test.req.add(req_hash)
    return chosen


def _take(source: str, need: int, pool: Pool, seed: int, test: TestSet) -> list[SourcePair]:
    """Up to ``need`` test pairs of ``source`` for a paper cell: the pairs a ``paper-r2`` quota already drew
    (in their drawn order), then further eligible pairs in the source's seeded test order (the same
    order the quota drew from), skipping a pair whose misbehavior text is a chosen benign text (or vice
    versa). Where two models wrote the sides, the pairs :func:`side_balance` keeps come first (the
    order otherwise unchanged). New pairs join ``test.pairs[source]``. Like the paper mirror, gate-failing
    pairs count (their noise is measured; ``verified`` leaves them out)."""
    have = test.pairs.setdefault(source, [])
    out = have[:need]
    if len(out) >= need:
        return out
    taken = {p.pair_id for p in have}
    eligible = [p for p in pool.pairs.get(source, []) if p.eligible_test and p.pair_id not in taken]
    order = shuffled(eligible, rng_for(seed, source, "test"))
    if any(side_models(p) for p in order):  # two models wrote the sides: a side-balanced subset first
        first = {p.pair_id for p in side_balance(order, seed, source)[0]}
        order.sort(key=lambda p: p.pair_id not in first)
    for p in order:
        if len(out) >= need:
            break
        req_hash, mis_hash, ben_hash = pool.hashes[p.pair_id]
        if mis_hash in test.ben or ben_hash in test.mis:
            continue
        out.append(p)
        have.append(p)
        test.mis.add(mis_hash)
        test.ben.add(ben_hash)
        test.req.add(req_hash)
    return out


def select_cells(pool: Pool, seed: int, test: TestSet, cells: tuple[Cell, ...] = PAPER_CELLS_PLAN) -> None:
    """Step 1b: the ``paper`` edition, cell by cell (:data:`PAPER_CELLS_PLAN`): each cell's sources in
    order give up to what the cell still needs; a cell short of its count records the deficit and why
    (never padded with another cell's data)."""
    for c in cells:
        need, by_source = c.pairs, {}
        for src in c.sources:
            if need <= 0:
                break
            got = _take(src, need, pool, seed, test)
            test.paper_ids.update(p.pair_id for p in got)
            if got:
                by_source[src] = len(got)
            need -= len(got)
        built = c.pairs - max(need, 0)
        test.cells.append(
            {
                "category": c.category,
                "task": c.task,
                "target_pairs": c.pairs,
                "built_pairs": built,
                "missing_pairs": c.pairs - built,
                "by_source": by_source,
                "why": c.short_why if built < c.pairs else None,
            }
        )


def select_test(pool: Pool, seed: int) -> TestSet:
    """Step 1: the test selection: the per-source quota mirror (:data:`TEST_PLAN`, a sharing quota reduced by
    what its partner built; edition ``paper-r2``), the verified-only sources (:func:`verified_extra`: the
    registered ``verified_pairs``, in registry order), then the paper's cells (:func:`select_cells`,
    edition ``paper``), which reuse those draws first; last the side balance of ``verified``
    (:func:`balance_test`)."""
    test = TestSet()
    built: dict[str, int] = {}
    for q in TEST_PLAN + verified_extra():
        target = q.pairs - (built.get(q.shares_with, 0) if q.shares_with else 0)
        chosen = _draw_quota(q, target, pool, seed, test)
        test.pairs[q.source] = chosen
        built[q.source] = len(chosen)
        if q in TEST_PLAN:
            test.r2_ids.update(p.pair_id for p in chosen)
            test.quotas.append(
                {
                    "source": q.source,
                    "category": q.category,
                    "task": q.task,
                    "target_pairs": target,
                    "built_pairs": len(chosen),
                }
            )
    select_cells(pool, seed, test)
    balance_test(test, seed, pool)
    return test


def select_candidates(pool: Pool, test: TestSet, seed: int, blocked: Blocked) -> Candidates:
    """Step 2: the candidate pool: the planned draws (:func:`candidate_plan`: the registered
    ``candidate_pairs``), every gate-failing eligible pair not in the test set (with its reason), and a
    copy (own pair_id ``cand:<pair_id>``) of each paper test pair whose provenance or a gate keeps it
    out of verified. None shares a text hash with ``blocked`` (test set and external gold test
    samples)."""
    test_ids = test.ids()
    cands: Candidates = defaultdict(list)
    for name, n in candidate_plan().items():
        rest = [
            p
            for p in pool.pairs.get(name, [])
            if p.pair_id not in test_ids and p.eligible_test and not p.gate and not pool.collides(p, blocked)
        ]
        for p in shuffled(rest, rng_for(seed, name, "candidates"))[:n]:
            cands[name].append((p, None))
    for name, pairs in pool.pairs.items():
        for p in pairs:
            if p.gate and p.eligible_test and p.pair_id not in test_ids and not pool.collides(p, blocked):
                cands[name].append((p, p.gate))
    for name, pairs in test.pairs.items():
        for p in pairs:  # a paper test pair that cannot be verified: a copy with its own pair_id
            why = not_verified_why(p)
            if why:
                cands[name].append((replace(p, pair_id=f"cand:{p.pair_id}"), why))
    return cands


def candidate_hashes(cands: Candidates) -> Blocked:
    """The request and response hashes of every candidate pair."""
    out = Blocked()
    for cs in cands.values():
        for p, _why in cs:
            h = pair_hashes(p)
            out.req.add(h[0])
            out.resp.update(h[1:])
    return out


def _held_conversations(pool: Pool, test: TestSet, cands: Candidates) -> set[int]:
    """hh_rlhf conversation groups that have a pair in the test set or the candidate pool (a
    candidate copy ``cand:<pair_id>`` counts as its original)."""
    held = {
        pool.conv[p.pair_id.removeprefix("cand:")]
        for cs in cands.values()
        for p, _ in cs
        if p.pair_id.removeprefix("cand:") in pool.conv
    }
    held |= {pool.conv[p.pair_id] for p in test.pairs.get("hh_rlhf", [])}
    return held


def split_rows(pool: Pool, test: TestSet, cands: Candidates, not_train: Blocked, plan: Plan) -> TrainCounts:
    """Step 3: append to ``plan.rows``, source by source, the test rows, the candidate rows and the
    train rows: every other pair that passed its gates, shares no hh_rlhf conversation and no problem
    family (:mod:`automonitor.data.families`) with test or candidates and no text hash with ``not_train``. Returns the train counts."""
    test_ids = test.ids()
    cand_ids = {p.pair_id for cs in cands.values() for p, _ in cs}
    held = _held_conversations(pool, test, cands)
    held_fam = {
        pool.family[i.removeprefix("cand:")] for i in test_ids | cand_ids if i.removeprefix("cand:") in pool.family
    }
    counts = TrainCounts()
    for name, pairs in pool.pairs.items():
        for p in test.pairs.get(name, []):
            plan.rows.extend(rows_for(p, "test", "gold", pool.hashes[p.pair_id], editions_of(p, test)))
        for p, why in cands.get(name, []):
            plan.rows.extend(rows_for(p, None, "candidate", pair_hashes(p), extra_meta={"gate": why} if why else None))
        for p in pairs:
            if p.pair_id in test_ids or p.pair_id in cand_ids:
                continue
            if p.gate:  # gate-failing pair not offered as candidate (it collides with the test set)
                continue
            if p.pair_id in pool.conv and pool.conv[p.pair_id] in held:
                counts.dropped_conversation[name] += 1
                continue
            if pool.family.get(p.pair_id) in held_fam:
                counts.dropped_family[name] += 1
                continue
            if pool.collides(p, not_train):
                counts.dropped_collision[name] += 1
                continue
            plan.rows.extend(rows_for(p, "train", "gold", pool.hashes[p.pair_id]))
            counts.kept[name] += 1
    return counts


def errata_not_stored(pool: Pool, blocked: Blocked, rows: list[dict[str, Any]]) -> dict[str, str]:
    """Why each erratum that matched a pair (``pool.errata_applied``) has no row in ``rows`` (the plan's
    sample rows): erratum pair id -> one line naming the pair kept instead and where it is (``test``,
    ``train``, ``candidates``). An erratum gates its pair, so the pair claims its samples last
    (:func:`gated_pool`) and is dropped when another pair holds one of them; a gate-failing pair that shares
    its request or a response with the test set is not offered as a candidate (:func:`select_candidates`)."""
    where: dict[str, str] = {}
    for r in rows:
        pid = str(r["pair_id"]).removeprefix("cand:")
        where.setdefault(pid, str(r["split"]) if r.get("split") else "candidates")
    by_id = {p.pair_id: p for ps in pool.pairs.values() for p in ps}
    out: dict[str, str] = {}
    for eid, pid in sorted(pool.errata_applied.items()):
        if pid in where:
            continue
        why = "the build drops this pair: "
        if pid in pool.dropped_for:
            reason, owner = pool.dropped_for[pid]
            loc = where.get(owner.removeprefix("cand:"), "not stored")
            why += f"{reason} pair {owner} ({loc}), and a sample is in one pair only"
        elif pid in pool.hashes and pool.collides(by_id[pid], blocked):
            why += "it shares its request or a response with a test pair, so it is not offered as a candidate"
        else:
            why += "it is not eligible for the test set, so it is not offered as a candidate"
        out[eid] = why
    return out


def control_rows(results: dict[str, SourceResult], blocked_resp: set[str], plan: Plan) -> Counter[str]:
    """Step 4: append the controls (benign-only samples, split ``controls``) to ``plan.rows``, skipping
    texts already used by a control or in ``blocked_resp``. Returns controls per source."""
    ctrl_n: Counter[str] = Counter()
    ctrl_seen: set[str] = set()
    for name, res in results.items():
        for c in res.controls:
            h = pair_hashes(c)
            if h[2] in ctrl_seen or h[2] in blocked_resp:
                continue
            ctrl_seen.add(h[2])
            plan.rows.extend(rows_for(c, CONTROLS_SPLIT, "gold", h, sides=("benign",)))
            ctrl_n[name] += 1
    return ctrl_n
