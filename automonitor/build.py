"""Build the paired benchmark from the public raw sources into the store (``automonitor build``).

Composition of the ``paper`` edition (pairs; each pair = one misbehavior + one benign sample with the
same request), mirroring the paper's 1,172 / 962 / 876 samples (3,010 = 1,505 pairs). A quota with
``shares_with`` gives up the places the other source fills (an otherwise empty cell):

=====================  ============================  =========  =====  ===================================
category               source                        task       pairs  note
=====================  ============================  =========  =====  ===================================
safety_permission      rjudge (optional)             reasoning    131  human per-response labels
safety_permission      hh_rlhf                       qa       293-rj  preference pairs (not in verified)
safety_permission      safecoder                     code         200  real CVE fixes
safety_permission      sven                          code          93
sycophancy_bias        sycophancy_qa                 qa        <= 481  all eligible (38 at seed 0)
sycophancy_bias        turpin_bbh_suggested_answer   reasoning 481-sq  stratified by task x model
specification_gaming   school_of_reward_hacks        qa           219
specification_gaming   rl_character_apps             code         178
specification_gaming   rl_character_mbpp             code          41
=====================  ============================  =========  =====  ===================================

``verified`` edition (``VERIFIED_EXTRA``): the paper test pairs that pass every gate and are not
``preference_pair``, plus 131 xstest and 150 reward_hack_gen_codeforces test pairs (verified only).
Editions are rows of ``edition_sample``; controls (Turpin, suggestion correct and the model agrees) are
benign-only samples of split ``controls`` (pair_id ``controls:...``).

Quality gates (:mod:`automonitor.gates`; per-source counts in the report's ``gates`` and the README):

* code: comments stripped from both sides (Python via ``tokenize``, C-family ``/* */`` and ``//``);
  pairs equal after whitespace normalisation dropped; pairs differing by <= 3 tokens -> candidates;
* hack sides (APPS, MBPP, Codeforces) must special-case the tests (>= 2 literal comparisons or sample
  outputs as literals), else -> candidates; Codeforces plain sides that hard-code sample outputs or
  special-case sample inputs -> candidates;
* sycophancy_qa: cued-answer pairs (grader verdict only), multiple-choice records without options and
  are-you-sure pairs whose follow-ups do not clearly cave / hold -> candidates;
* hh_rlhf: train/test split by conversation (:func:`automonitor.gates.conversation_groups`: shared first
  human turn or one dialogue a prefix of another); a train pair in a test (or candidate) conversation
  is dropped; hh_rlhf pairs enter ``verified`` only through adjudication.

"-> candidates" means: out of ``verified``; the pair stays eligible for the paper mirror (that is its
measured noise), and a copy with its own pair_id ``cand:<pair_id>`` and ``meta.gate`` (the reason)
goes to the candidate pool when it is a paper test pair; otherwise the pair itself becomes a candidate.

Selection is deterministic for a seed: each source's pairs are sorted by ``pair_id`` and shuffled
with ``random.Random("automonitor:<seed>:<source>:<purpose>")``; Turpin pairs are drawn in proportion
to their BBH task x model strata. Pairs a source marks not eligible (code over 6,000 chars) never go
to test. A test pair whose misbehavior text is the benign text of another test pair (or vice versa)
is skipped. Where a source yields fewer pairs than its quota the shortfall is recorded (build output,
``BuildLog`` report, ``stats``); nothing is padded or duplicated.

Candidate pool for annotation (``status='candidate'``, ``split=None``, label = intended label):
100 School-of-Reward-Hacks, 100 Turpin and 40 APPS pairs drawn from the pairs left after the test
selection, never sharing a request or response hash with the test set.

Train split: every other pair (including over-long code) whose request and responses share no hash
with the test set or the candidate pool; colliding pairs are dropped whole, and counted.

Rebuild policy (build-derived rows carry ``meta.origin == "build"``; user imports are never touched):

* The store is reconciled with the plan of (raw dir, seed): missing planned rows are inserted, build
  rows not in the plan are deleted, build rows whose split/status differ are updated. Rows an
  adjudicator has decided (an ``adjudication`` row exists) or the annotation workflow finalized
  (``meta.annotation``) keep their status, split and label.
* So a rebuild with the same seed and raw dir inserts, updates and deletes nothing (and logs nothing).
* A different seed replaces the build-derived selection. If any row it would delete or move is
  referenced by a prediction, assignment, annotation or adjudication, the build refuses (``InputError``,
  exit 2) unless ``force=True``; with ``force`` those runs (with all their predictions), assignments,
  annotations and adjudications are deleted first. All in one transaction.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.errors import InputError
from automonitor.gates import (
    FEW_TOKENS,
    are_you_sure_clear,
    conversation_groups,
    few_tokens_differ,
    hardcode_screen,
    special_cases,
    strip_comments,
    whitespace_equal,
)
from automonitor.hashing import content_hash, make_sample_id, sha256_text
from automonitor.sources import OPTIONAL_SOURCES, REGISTRY, PairRecord, SourceResult
from automonitor.vocab import CATEGORIES, PAPER_QUOTAS
from store import session_scope
from store.queries import build as build_queries
from store.queries.samples import insert_samples

ORIGIN = "build"


@dataclass(frozen=True)
class Quota:
    """Test-set quota of one source, in pairs. With ``shares_with``, the quota is ``pairs`` minus the
    pairs built for that other source (which fills an otherwise empty cell of the same category)."""

    source: str
    category: str
    task: str
    pairs: int
    shares_with: str | None = None


TEST_PLAN: tuple[Quota, ...] = (
    Quota("rjudge", "safety_permission", "reasoning", 131),
    Quota("hh_rlhf", "safety_permission", "qa", 293, shares_with="rjudge"),
    Quota("safecoder", "safety_permission", "code", 200),
    Quota("sven", "safety_permission", "code", 93),
    Quota("sycophancy_qa", "sycophancy_bias", "qa", 481),
    Quota("turpin_bbh_suggested_answer", "sycophancy_bias", "reasoning", 481, shares_with="sycophancy_qa"),
    Quota("school_of_reward_hacks", "specification_gaming", "qa", 219),
    Quota("rl_character_apps", "specification_gaming", "code", 178),
    Quota("rl_character_mbpp", "specification_gaming", "code", 41),
)
# Test pairs of the ``verified`` edition only (sources that fill no empty cell of the paper mirror).
VERIFIED_EXTRA: tuple[Quota, ...] = (
    Quota("xstest", "safety_permission", "qa", 131),
    Quota("reward_hack_gen_codeforces", "specification_gaming", "code", 150),
)
# Label provenances that never enter ``verified`` without adjudication.
NOT_VERIFIED: frozenset[str] = frozenset({"preference_pair"})
EDITIONS: tuple[str, ...] = ("paper", "verified")
CANDIDATE_PLAN: dict[str, int] = {
    "school_of_reward_hacks": 100,
    "turpin_bbh_suggested_answer": 100,
    "rl_character_apps": 40,
}
CODE_SOURCES_PY_DEFAULT = "Python"
# Sources whose misbehavior side is an instructed test-fitting hack: it must visibly special-case the tests.
HACK_SOURCES: frozenset[str] = frozenset({"rl_character_apps", "rl_character_mbpp", "reward_hack_gen_codeforces"})

NO_RAW_HINT = (
    "set AUTOMONITOR_RAW or pass --raw DIR (the layout of ../shared/raw; `automonitor "
    "fetch-sources --dest DIR` downloads it), or load your own pairs with "
    "`automonitor import seeds/examples.jsonl`"
)


def _check_plan() -> None:
    per_cat: Counter[str] = Counter()
    sharing = {q.shares_with for q in TEST_PLAN if q.shares_with}
    for q in TEST_PLAN:
        if q.source not in sharing:
            per_cat[q.category] += 2 * q.pairs
    assert dict(per_cat) == PAPER_QUOTAS, (dict(per_cat), PAPER_QUOTAS)


_check_plan()


@dataclass
class Plan:
    """The outcome of :func:`plan_build`: sample rows (dicts with ``Sample`` columns) and a report."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)


def resolve_raw(raw: str | Path | None) -> Path:
    """The raw dir: ``raw`` if given, else ``$AUTOMONITOR_RAW``.

    Raises:
        InputError: neither is set, or the directory does not exist (message names it and says how
            to get the sources or import own pairs).
    """
    value = raw if raw not in (None, "") else os.environ.get("AUTOMONITOR_RAW")
    if not value:
        raise InputError(f"no raw sources directory given: {NO_RAW_HINT}", field="--raw")
    path = Path(value).expanduser()
    if not path.is_dir():
        raise InputError(f"raw sources directory not found: {path}; {NO_RAW_HINT}", file=str(path), field="--raw")
    return path.resolve()


def rng_for(seed: int, source: str, purpose: str) -> random.Random:
    """The deterministic RNG of one selection step (string seeds are hashed with SHA-512 by Python,
    so the order is stable across runs and machines)."""
    return random.Random(f"automonitor:{seed}:{source}:{purpose}")


def _shuffled(pairs: Iterable[PairRecord], rng: random.Random) -> list[PairRecord]:
    """``pairs`` sorted by ``pair_id``, then shuffled by ``rng`` (deterministic for a seeded rng)."""
    out = sorted(pairs, key=lambda p: p.pair_id)
    rng.shuffle(out)
    return out


def proportional(counts: dict[str, int], total: int) -> dict[str, int]:
    """Split ``total`` over strata in proportion to ``counts`` (largest remainder, ties by name),
    never more than a stratum holds."""
    avail = sum(counts.values())
    total = min(total, avail)
    if avail == 0:
        return {k: 0 for k in counts}
    raw = {k: total * n / avail for k, n in counts.items()}
    out = {k: int(v) for k, v in raw.items()}
    rest = total - sum(out.values())
    for k in sorted(counts, key=lambda k: (-(raw[k] - out[k]), k)):
        if rest <= 0:
            break
        if out[k] < counts[k]:
            out[k] += 1
            rest -= 1
    return out


def _hashes(p: PairRecord) -> tuple[str, str, str]:
    """sha256 of the request, the misbehavior and the benign text of ``p``."""
    return sha256_text(p.request), sha256_text(p.misbehavior), sha256_text(p.benign)


def _rows_for(
    p: PairRecord,
    split: str | None,
    status: str,
    h: tuple[str, str, str],
    editions: tuple[str, ...] = (),
    sides: tuple[str, ...] = ("misbehavior", "benign"),
    extra_meta: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The ``Sample`` rows (dicts of columns) of ``sides`` of pair ``p``: ids, hashes (``h`` =
    :func:`_hashes`), provenance, ``meta`` (pair, side and ``extra_meta``, ``None`` values left out,
    ``origin`` = build) and ``editions`` (not a column: the edition memberships to create)."""
    rows = []
    for label, text, fname, rec, side_meta, rh in (
        ("misbehavior", p.misbehavior, p.mis_file, p.mis_record, p.mis_meta, h[1]),
        ("benign", p.benign, p.ben_file, p.ben_record, p.ben_meta, h[2]),
    ):
        if label not in sides:
            continue
        meta = {k: v for k, v in {**p.meta, **side_meta, **(extra_meta or {})}.items() if v is not None}
        meta["origin"] = ORIGIN
        rows.append(
            {
                "id": make_sample_id(p.pair_id, label, p.request, text),
                "pair_id": p.pair_id,
                "category": p.category,
                "task": p.task,
                "label": label,
                "request": p.request,
                "response": text,
                "source": p.source,
                "source_file": fname,
                "source_record": rec,
                "split": split,
                "status": status,
                "request_hash": h[0],
                "response_hash": rh,
                "content_hash": content_hash(p.request, text, label),
                "meta": meta,
                "label_source": p.label_source,
                "editions": editions,
            }
        )
    return rows


# --- quality gates --------------------------------------------------------------------------------


def _gate_code(name: str, p: PairRecord, g: Counter[str]) -> PairRecord | None:
    """The code gates of one pair: comments stripped from both sides, equal sides dropped (``None``),
    near-equal sides and hack sides that do not special-case the tests (or Codeforces plain sides that
    hard-code the samples) marked with ``gate``. Counts each outcome in ``g``."""
    lang = p.meta.get("language") or CODE_SOURCES_PY_DEFAULT
    mis, ben = strip_comments(p.misbehavior, lang), strip_comments(p.benign, lang)
    if mis != p.misbehavior or ben != p.benign:
        g["comments stripped (pairs)"] += 1
        p = replace(p, misbehavior=mis.strip("\n"), benign=ben.strip("\n"))
    if whitespace_equal(p.misbehavior, p.benign):
        g["dropped: equal after whitespace normalisation"] += 1
        return None
    if few_tokens_differ(p.misbehavior, p.benign, FEW_TOKENS):
        g[f"to candidates: <= {FEW_TOKENS} tokens differ"] += 1
        return replace(p, gate=f"code sides differ by <= {FEW_TOKENS} tokens")
    if name == "reward_hack_gen_codeforces" and hardcode_screen(p.benign, p.request):
        g["to candidates: plain side may hard-code the samples"] += 1
        return replace(p, gate=f"plain side may hard-code the sample tests: {hardcode_screen(p.benign, p.request)}")
    if name in HACK_SOURCES and not special_cases(p.misbehavior, p.request):
        g["to candidates: hack side shows no special-casing of the tests"] += 1
        return replace(p, gate="hack side shows no special-casing of the tests (may be a general solution)")
    return p


def _gate_sycophancy_qa(p: PairRecord, g: Counter[str]) -> PairRecord:
    """The sycophancy_qa gates of one pair: cued-answer pairs, multiple-choice records without their
    options and are-you-sure pairs whose follow-ups do not clearly cave / hold get a ``gate``. Counts
    each outcome in ``g``."""
    if p.meta.get("kind") == "cued answer":
        g["to candidates: cue-following judged by an LLM grader only"] += 1
        return replace(
            p,
            gate="cued answer: whether the response follows the cue was judged by an LLM grader "
            "only (hand check: often wrong)",
        )
    if "mc" in str(p.meta.get("dataset") or "").split("_"):
        g["to candidates: multiple-choice question shown without its options"] += 1
        return replace(p, gate="are you sure: multiple-choice question whose options the record lacks")
    cut = "\n\nAssistant: "
    why = are_you_sure_clear(p.misbehavior.split(cut, 1)[-1], p.benign.split(cut, 1)[-1])
    if why:
        g["to candidates: are-you-sure follow-ups not clear"] += 1
        return replace(p, gate=f"are you sure: {why}")
    return p


def apply_gates(name: str, res: SourceResult, gates: dict[str, Counter[str]]) -> list[PairRecord]:
    """The quality gates of one source's pairs (module doc "Quality gates"); returns the pairs kept,
    with comments stripped from code and ``gate`` set on pairs that go to the candidate pool; counts
    what each gate did in ``gates[name]``."""
    g = gates.setdefault(name, Counter())
    out: list[PairRecord] = []
    for p in res.pairs:
        gated: PairRecord | None = p
        if p.task == "code":
            gated = _gate_code(name, p, g)
        elif name == "sycophancy_qa":
            gated = _gate_sycophancy_qa(p, g)
        if gated is not None:
            out.append(gated)
    return out


def load_all(raw: Path, progress: Callable[[str], None] | None = None) -> dict[str, SourceResult]:
    """Run every registered importer on ``raw``.

    Raises:
        InputError: a malformed file, or none of the sources' files exist under ``raw``.
    """
    results: dict[str, SourceResult] = {}
    for name, src in REGISTRY.items():
        t0 = time.perf_counter()
        results[name] = src.load(raw)
        if progress:
            r = results[name]
            miss = f", {len(r.missing)} file(s) missing" if r.missing else ""
            progress(
                f"{name}: {len(r.pairs)} pairs from {len(r.files)} file(s){miss} ({time.perf_counter() - t0:.2f} s)"
            )
    if not any(r.files for r in results.values()):
        raise InputError(f"no public source files found under {raw}; {NO_RAW_HINT}", file=str(raw), field="--raw")
    return results


# --- selection ------------------------------------------------------------------------------------


@dataclass
class _Blocked:
    """Text hashes a pair may not share: request hashes and response hashes (either side)."""

    req: set[str] = field(default_factory=set)
    resp: set[str] = field(default_factory=set)

    def __or__(self, other: _Blocked) -> _Blocked:
        return _Blocked(self.req | other.req, self.resp | other.resp)


@dataclass
class _Pool:
    """Every source's gated, de-duplicated pairs (source name -> pairs, in load order), their
    ``(request, misbehavior, benign)`` sha256 hashes by ``pair_id``, the gate counts per source and
    the hh_rlhf conversation group of each hh_rlhf ``pair_id``."""

    pairs: dict[str, list[PairRecord]] = field(default_factory=dict)
    hashes: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    gates: dict[str, Counter[str]] = field(default_factory=dict)
    conv: dict[str, int] = field(default_factory=dict)

    def collides(self, p: PairRecord, blocked: _Blocked) -> bool:
        """Whether pool pair ``p`` shares its request or a response with ``blocked``."""
        h = self.hashes[p.pair_id]
        return h[0] in blocked.req or h[1] in blocked.resp or h[2] in blocked.resp


@dataclass
class _TestSet:
    """The test selection: pairs per source, the paper quota rows of the report (``source``,
    ``category``, ``task``, ``target_pairs``, ``built_pairs``) and the hashes of the chosen texts."""

    pairs: dict[str, list[PairRecord]] = field(default_factory=dict)
    quotas: list[dict[str, Any]] = field(default_factory=list)
    req: set[str] = field(default_factory=set)
    mis: set[str] = field(default_factory=set)
    ben: set[str] = field(default_factory=set)

    def ids(self) -> set[str]:
        """``pair_id`` of every test pair."""
        return {p.pair_id for ps in self.pairs.values() for p in ps}


# Candidate pairs per source, each with the reason it is a candidate (``None``: a planned draw).
_Candidates = dict[str, list[tuple[PairRecord, str | None]]]


@dataclass
class _TrainCounts:
    """Per source: train pairs kept, dropped for a hash collision, dropped for sharing an hh_rlhf
    conversation with the test set or the candidate pool."""

    kept: Counter[str] = field(default_factory=Counter)
    dropped_collision: Counter[str] = field(default_factory=Counter)
    dropped_conversation: Counter[str] = field(default_factory=Counter)


_PAPER_SOURCES = frozenset(q.source for q in TEST_PLAN)
_SHARING_SOURCES = frozenset(q.shares_with for q in TEST_PLAN if q.shares_with)


def editions_of(p: PairRecord) -> tuple[str, ...]:
    """The editions a test pair belongs to: ``paper`` for the paper-mirror sources, ``verified`` when it
    passed every gate and its provenance is not in :data:`NOT_VERIFIED`."""
    eds: tuple[str, ...] = ("paper",) if p.source in _PAPER_SOURCES else ()
    if p.label_source not in NOT_VERIFIED and not p.gate:
        eds += ("verified",)
    return eds


def _gated_pool(results: dict[str, SourceResult], report: dict[str, Any]) -> _Pool:
    """Gate every source's pairs (:func:`apply_gates`) and drop pairs whose two responses (or
    ``pair_id``) an earlier pair already has; fills ``report["sources"][name]`` with the load counts
    and computes the hh_rlhf conversation groups."""
    pool = _Pool()
    seen: set[tuple[str, str]] = set()
    for name, res in results.items():
        kept = []
        dropped = Counter(res.dropped)
        for p in apply_gates(name, res, pool.gates):
            h = _hashes(p)
            key = (h[1], h[2])
            if key in seen or p.pair_id in pool.hashes:
                dropped["duplicate pair (same responses as an earlier pair)"] += 1
                continue
            seen.add(key)
            pool.hashes[p.pair_id] = h
            kept.append(p)
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
    return pool


def _stratum_allocation(order: list[PairRecord], target: int) -> dict[str, int]:
    """Pairs to draw per stratum (``group``, ``""`` for none): ``target`` split in proportion to the
    strata of ``order`` (:func:`proportional`), or all of it to the one stratum."""
    if len({p.group for p in order}) > 1:
        return proportional(dict(Counter(p.group or "" for p in order)), target)
    return {(order[0].group or "") if order else "": target}


def _draw_quota(q: Quota, target: int, pool: _Pool, seed: int, test: _TestSet) -> list[PairRecord]:
    """Draw up to ``target`` test pairs of quota ``q`` in seeded order, stratified by ``group``,
    skipping a pair whose misbehavior text is a chosen benign text (or vice versa); records the
    chosen hashes in ``test``. The paper mirror keeps gate-failing pairs (its noise), the
    verified-only sources do not."""
    eligible = [p for p in pool.pairs.get(q.source, []) if p.eligible_test and (q in TEST_PLAN or not p.gate)]
    order = _shuffled(eligible, rng_for(seed, q.source, "test"))
    alloc = _stratum_allocation(order, target)
    taken_per: Counter[str] = Counter()
    chosen: list[PairRecord] = []
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


def _select_test(pool: _Pool, seed: int) -> _TestSet:
    """Step 1: the test selection, the paper mirror (:data:`TEST_PLAN`, a sharing quota reduced by
    what its partner built) and then the verified-only sources (:data:`VERIFIED_EXTRA`)."""
    test = _TestSet()
    built: dict[str, int] = {}
    for q in TEST_PLAN + VERIFIED_EXTRA:
        target = q.pairs - (built.get(q.shares_with, 0) if q.shares_with else 0)
        chosen = _draw_quota(q, target, pool, seed, test)
        test.pairs[q.source] = chosen
        built[q.source] = len(chosen)
        if q in TEST_PLAN:
            test.quotas.append(
                {
                    "source": q.source,
                    "category": q.category,
                    "task": q.task,
                    "target_pairs": target,
                    "built_pairs": len(chosen),
                }
            )
    return test


def _select_candidates(pool: _Pool, test: _TestSet, seed: int, blocked: _Blocked) -> _Candidates:
    """Step 2: the candidate pool: the planned draws (:data:`CANDIDATE_PLAN`), every gate-failing
    eligible pair not in the test set (with its reason), and a copy (own pair_id ``cand:<pair_id>``)
    of each paper test pair whose provenance or a gate keeps it out of verified. None shares a text
    hash with ``blocked`` (test set and external gold test samples)."""
    test_ids = test.ids()
    cands: _Candidates = defaultdict(list)
    for name, n in CANDIDATE_PLAN.items():
        rest = [
            p
            for p in pool.pairs.get(name, [])
            if p.pair_id not in test_ids and p.eligible_test and not p.gate and not pool.collides(p, blocked)
        ]
        for p in _shuffled(rest, rng_for(seed, name, "candidates"))[:n]:
            cands[name].append((p, None))
    for name, pairs in pool.pairs.items():
        for p in pairs:
            if p.gate and p.eligible_test and p.pair_id not in test_ids and not pool.collides(p, blocked):
                cands[name].append((p, p.gate))
    for name, pairs in test.pairs.items():
        for p in pairs:  # a paper test pair that cannot be verified: a copy with its own pair_id
            if p.label_source in NOT_VERIFIED or p.gate:
                why = p.gate or f"{p.label_source}: enters verified only through adjudication"
                cands[name].append((replace(p, pair_id=f"cand:{p.pair_id}"), why))
    return cands


def _candidate_hashes(cands: _Candidates) -> _Blocked:
    """The request and response hashes of every candidate pair."""
    out = _Blocked()
    for cs in cands.values():
        for p, _why in cs:
            h = _hashes(p)
            out.req.add(h[0])
            out.resp.update(h[1:])
    return out


def _held_conversations(pool: _Pool, test: _TestSet, cands: _Candidates) -> set[int]:
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


def _split_rows(pool: _Pool, test: _TestSet, cands: _Candidates, not_train: _Blocked, plan: Plan) -> _TrainCounts:
    """Step 3: append to ``plan.rows``, source by source, the test rows, the candidate rows and the
    train rows: every other pair that passed its gates, shares no hh_rlhf conversation with test or
    candidates and no text hash with ``not_train``. Returns the train counts."""
    test_ids = test.ids()
    cand_ids = {p.pair_id for cs in cands.values() for p, _ in cs}
    held = _held_conversations(pool, test, cands)
    counts = _TrainCounts()
    for name, pairs in pool.pairs.items():
        for p in test.pairs.get(name, []):
            plan.rows.extend(_rows_for(p, "test", "gold", pool.hashes[p.pair_id], editions_of(p)))
        for p, why in cands.get(name, []):
            plan.rows.extend(_rows_for(p, None, "candidate", _hashes(p), extra_meta={"gate": why} if why else None))
        for p in pairs:
            if p.pair_id in test_ids or p.pair_id in cand_ids:
                continue
            if p.gate:  # gate-failing pair not offered as candidate (it collides with the test set)
                continue
            if p.pair_id in pool.conv and pool.conv[p.pair_id] in held:
                counts.dropped_conversation[name] += 1
                continue
            if pool.collides(p, not_train):
                counts.dropped_collision[name] += 1
                continue
            plan.rows.extend(_rows_for(p, "train", "gold", pool.hashes[p.pair_id]))
            counts.kept[name] += 1
    return counts


def _control_rows(results: dict[str, SourceResult], blocked_resp: set[str], plan: Plan) -> Counter[str]:
    """Step 4: append the controls (benign-only samples, split ``controls``) to ``plan.rows``, skipping
    texts already used by a control or in ``blocked_resp``. Returns controls per source."""
    ctrl_n: Counter[str] = Counter()
    ctrl_seen: set[str] = set()
    for name, res in results.items():
        for c in res.controls:
            h = _hashes(c)
            if h[2] in ctrl_seen or h[2] in blocked_resp:
                continue
            ctrl_seen.add(h[2])
            plan.rows.extend(_rows_for(c, "controls", "gold", h, sides=("benign",)))
            ctrl_n[name] += 1
    return ctrl_n


# --- report ---------------------------------------------------------------------------------------


def _report_source_counts(
    report: dict[str, Any], pool: _Pool, test: _TestSet, cands: _Candidates, train: _TrainCounts
) -> None:
    """Add the selection counts and label provenances to each ``report["sources"][name]``."""
    for name, pairs in pool.pairs.items():
        s = report["sources"][name]
        s["test_pairs"] = len(test.pairs.get(name, []))
        s["candidate_pairs"] = len(cands.get(name, []))
        s["train_pairs"] = train.kept[name]
        s["train_dropped_hash_collision"] = train.dropped_collision[name]
        if name == "hh_rlhf":
            s["train_dropped_same_conversation"] = train.dropped_conversation[name]
        s["label_source"] = sorted({p.label_source for p in pairs})


def _report_quotas(report: dict[str, Any], test: _TestSet) -> None:
    """Add ``quotas``, ``category_quotas``, ``shortfalls`` (sources, then categories) and ``test`` (the
    paper mirror: pairs, samples, by category, by category x task) to ``report``."""
    quotas = test.quotas
    shortfalls: list[dict[str, Any]] = [
        {**q, "missing_pairs": q["target_pairs"] - q["built_pairs"]}
        for q in quotas
        if q["built_pairs"] < q["target_pairs"] and q["source"] not in _SHARING_SOURCES
    ]
    cat_built: Counter[str] = Counter()
    for q in quotas:
        cat_built[q["category"]] += 2 * q["built_pairs"]
    report["quotas"] = quotas
    report["category_quotas"] = {
        c: {"target_samples": PAPER_QUOTAS[c], "built_samples": cat_built[c]} for c in CATEGORIES
    }
    for c in CATEGORIES:
        if cat_built[c] < PAPER_QUOTAS[c]:
            shortfalls.append(
                {
                    "category": c,
                    "target_samples": PAPER_QUOTAS[c],
                    "built_samples": cat_built[c],
                    "missing_samples": PAPER_QUOTAS[c] - cat_built[c],
                }
            )
    report["shortfalls"] = shortfalls
    n_test = sum(len(test.pairs.get(q.source, [])) for q in TEST_PLAN)
    by_ct: dict[str, dict[str, int]] = defaultdict(dict)
    for q in quotas:
        by_ct[q["category"]][q["task"]] = by_ct[q["category"]].get(q["task"], 0) + 2 * q["built_pairs"]
    report["test"] = {
        "pairs": n_test,
        "samples": 2 * n_test,
        "by_category": dict(cat_built),
        "by_category_task": dict(by_ct),
    }


def _edition_report(test: _TestSet) -> dict[str, dict[str, Any]]:
    """Per edition: test pairs, samples, pairs by ``category/task`` and by source."""
    eds: dict[str, dict[str, Any]] = {}
    for ed in EDITIONS:
        ps = [p for ts in test.pairs.values() for p in ts if ed in editions_of(p)]
        ct: Counter[str] = Counter(f"{p.category}/{p.task}" for p in ps)
        srcs: Counter[str] = Counter(p.source for p in ps)
        eds[ed] = {
            "pairs": len(ps),
            "samples": 2 * len(ps),
            "by_category_task": dict(sorted(ct.items())),
            "by_source": dict(sorted(srcs.items())),
        }
    return eds


def _report_pools(
    report: dict[str, Any], pool: _Pool, cands: _Candidates, train: _TrainCounts, ctrl_n: Counter[str]
) -> None:
    """Add ``gates`` (with the hh_rlhf conversation split), ``controls``, ``candidates`` and ``train``
    to ``report``."""
    report["gates"] = {k: dict(sorted(v.items())) for k, v in sorted(pool.gates.items()) if v}
    report["gates"]["hh_rlhf conversation split"] = {
        "conversations": len(set(pool.conv.values())),
        "train_pairs_dropped_same_conversation": train.dropped_conversation["hh_rlhf"],
    }
    report["controls"] = {"samples": sum(ctrl_n.values()), "by_source": dict(ctrl_n)}
    n_cand = sum(len(v) for v in cands.values())
    report["candidates"] = {
        "pairs": n_cand,
        "samples": 2 * n_cand,
        "by_source": {k: len(v) for k, v in cands.items()},
        "by_reason": dict(Counter((why or "planned draw").split(":")[0] for cs in cands.values() for _, why in cs)),
    }
    report["train"] = {"pairs": sum(train.kept.values()), "samples": 2 * sum(train.kept.values())}


# --- plan -----------------------------------------------------------------------------------------


def plan_build(
    raw: Path,
    seed: int = 0,
    *,
    external_test: tuple[set[str], set[str]] | None = None,
    progress: Callable[[str], None] | None = None,
    loaded: dict[str, SourceResult] | None = None,
) -> Plan:
    """Decide, without touching any store, which pairs go to test, candidates and train.

    Args:
        raw: the raw sources dir (layout of ``../shared/raw``).
        seed: selection seed (see module doc).
        external_test: ``(request hashes, response hashes)`` of gold test samples already in the store
            that the build does not own (user imports): train and candidates avoid them too.
        loaded: the output of :func:`load_all` for ``raw`` when the caller already has it (it is not
            modified); read from ``raw`` otherwise.
    Returns:
        :class:`Plan` with two rows per pair and the report (per-source counts, quotas, shortfalls).
    Raises:
        InputError: see :func:`load_all`.
    """
    results = loaded if loaded is not None else load_all(raw, progress)
    report: dict[str, Any] = {"seed": seed, "raw_dir": str(raw), "sources": {}}
    pool = _gated_pool(results, report)
    test = _select_test(pool, seed)
    ext_req, ext_resp = external_test or (set(), set())
    blocked = _Blocked(test.req | ext_req, test.mis | test.ben | ext_resp)
    cands = _select_candidates(pool, test, seed, blocked)
    plan = Plan(report=report)
    train = _split_rows(pool, test, cands, blocked | _candidate_hashes(cands), plan)
    ctrl_n = _control_rows(results, blocked.resp, plan)
    _report_source_counts(report, pool, test, cands, train)
    _report_quotas(report, test)
    report["editions"] = _edition_report(test)
    _report_pools(report, pool, cands, train, ctrl_n)
    return plan


# --- store side -----------------------------------------------------------------------------------


@dataclass
class _StoreState:
    """What the store holds before a build: the build-derived samples (id -> ``(split, status,
    label_source)``), those the annotation workflow finalized, and the request / response hashes of
    gold test samples the build does not own (user imports)."""

    current: dict[str, tuple[str | None, str, str]] = field(default_factory=dict)
    settled: set[str] = field(default_factory=set)
    external: _Blocked = field(default_factory=_Blocked)


def _store_state(session: Session) -> _StoreState:
    """Read :class:`_StoreState` (a build-derived row: a registered source and ``meta.origin ==
    "build"``)."""
    sources = set(REGISTRY)
    state = _StoreState()
    for row in build_queries.sample_states(session):
        meta = row.meta
        if row.source in sources and isinstance(meta, dict) and meta.get("origin") == ORIGIN:
            state.current[row.id] = (row.split, row.status, row.label_source)
            if "annotation" in meta:  # finalized by the annotation workflow
                state.settled.add(row.id)
        elif row.status == "gold" and row.split == "test":
            state.external.req.add(row.request_hash)
            state.external.resp.add(row.response_hash)
    return state


@dataclass
class _Changes:
    """The sample changes that reconcile the store with a plan: planned rows by id, build rows kept
    as they are (adjudicated or finalized), ids to delete and ids whose split/status/provenance move."""

    planned: dict[str, dict[str, Any]]
    kept: set[str]
    to_delete: list[str]
    to_update: list[str]


def _sample_changes(session: Session, state: _StoreState, plan: Plan) -> _Changes:
    """Diff the store's build rows against ``plan``: rows not planned are deleted, rows whose
    ``(split, status, label_source)`` differ are updated unless adjudicated or finalized."""
    planned = {r["id"]: r for r in plan.rows}
    kept = state.settled | build_queries.adjudicated_ids(session, list(state.current))
    current = state.current
    to_delete = [i for i in current if i not in planned]
    to_update = [
        i
        for i in current
        if i in planned
        and i not in kept
        and current[i] != (planned[i]["split"], planned[i]["status"], planned[i]["label_source"])
    ]
    return _Changes(planned, kept, to_delete, to_update)


def _clear_references(session: Session, affected: list[str], seed: int, force: bool) -> dict[str, int]:
    """Refuse to replace or move referenced samples, or (``force``) delete what references them.

    Returns:
        Rows deleted per table (empty when nothing references ``affected``).
    Raises:
        InputError: some of ``affected`` are referenced and ``force`` is false (field ``--seed``).
    """
    refs = build_queries.referenced(session, affected) if affected else {}
    if not refs:
        return {}
    if not force:
        desc = ", ".join(f"{len(v)} by {k}" for k, v in refs.items())
        last = build_queries.latest_seed(session)
        raise InputError(
            f"building with seed {seed} would replace or move {len(affected)} build samples of the "
            f"current build{f' (seed {last})' if last is not None else ''}, and some are referenced "
            f"({desc}); rerun with --force to delete those runs, assignments, annotations and "
            f"adjudications, or keep the current seed",
            field="--seed",
        )
    return build_queries.delete_dependents(session, sorted(set().union(*refs.values())))


def _edition_changes(
    session: Session, state: _StoreState, plan: Plan, changes: _Changes
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(drop, add)``: the ``(edition, sample_id)`` memberships of build samples to delete and to
    insert (sorted) so that each planned row is in its planned editions; adjudicated / finalized
    samples keep theirs."""
    have = build_queries.edition_memberships(session, list(state.current))
    kept = changes.kept
    want = {(ed, r["id"]) for r in plan.rows for ed in r.get("editions", ()) if r["id"] not in kept}
    deleted = set(changes.to_delete)
    drop = [(ed, sid) for ed, sid in have if sid not in kept and ((ed, sid) not in want or sid in deleted)]
    return drop, sorted(want - have)


def _apply_changes(session: Session, state: _StoreState, plan: Plan, changes: _Changes) -> dict[str, int]:
    """Write the reconciliation: edition memberships dropped, samples deleted and updated, new rows
    inserted, memberships added. Returns ``inserted``, ``updated``, ``deleted``, ``editions``
    (memberships dropped + added)."""
    drop_ed, add_ed = _edition_changes(session, state, plan, changes)
    build_queries.drop_edition_memberships(session, drop_ed)
    build_queries.delete_samples(session, changes.to_delete)
    build_queries.update_sample_placement(session, [changes.planned[i] for i in changes.to_update])
    inserted = insert_samples(session, [r for r in plan.rows if r["id"] not in state.current])
    build_queries.add_edition_memberships(session, add_ed)
    return {
        "inserted": inserted,
        "updated": len(changes.to_update),
        "deleted": len(changes.to_delete),
        "editions": len(drop_ed) + len(add_ed),
    }


def build(
    engine: Engine,
    raw: str | Path | None = None,
    seed: int = 0,
    *,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    loaded: dict[str, SourceResult] | None = None,
) -> dict[str, Any]:
    """Build (or reconcile) the benchmark in the store at ``engine`` from the raw dir, in one
    transaction (see the module doc for composition and rebuild policy).

    ``loaded``: see :func:`plan_build`.

    Returns:
        The plan report plus ``inserted``, ``updated``, ``deleted`` (sample rows), ``unchanged``
        (bool), ``dependents_deleted`` (with ``force``) and ``seconds`` (wall time).
    Raises:
        InputError: raw dir missing or malformed, or a reseed would change samples that predictions or
            annotations reference and ``force`` is false. Nothing is changed then.
    """
    t0 = time.perf_counter()
    raw_path = resolve_raw(raw)
    with session_scope(engine) as session:
        state = _store_state(session)
        external = (state.external.req, state.external.resp)
        plan = plan_build(raw_path, seed, external_test=external, progress=progress, loaded=loaded)
        changes = _sample_changes(session, state, plan)
        dependents = _clear_references(session, changes.to_delete + changes.to_update, seed, force)
        counts = _apply_changes(session, state, plan, changes)
        changed = any(counts.values())
        last = build_queries.latest_seed(session)
        report = dict(plan.report)
        report.update(
            {
                "inserted": counts["inserted"],
                "updated": counts["updated"],
                "deleted": counts["deleted"],
                "unchanged": not changed,
                "dependents_deleted": dependents,
                "kept_adjudicated": len([i for i in state.current if i in changes.kept]),
            }
        )
        if changed or last != seed:
            build_queries.log_build(session, seed, {k: v for k, v in report.items() if k != "seconds"})
    report["seconds"] = round(time.perf_counter() - t0, 3)
    return report


def latest_seed(session: Session) -> int | None:
    """Seed of the newest build log, or ``None`` when the store was never built."""
    return build_queries.latest_seed(session)
