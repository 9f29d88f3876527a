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

import random
import time
from dataclasses import replace
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from automonitor.errors import InputError
from automonitor.hashing import content_hash, make_sample_id, sha256_text
from automonitor.gates import conversation_groups
from automonitor.sources import OPTIONAL_SOURCES, REGISTRY, PairRecord, SourceResult
from automonitor.vocab import CATEGORIES, PAPER_QUOTAS
from store.queries import chunks as _chunks

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
    per_cat: Counter = Counter()
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
    import os

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


def apply_gates(name: str, res: SourceResult, gates: dict[str, Counter]) -> list[PairRecord]:
    """The quality gates of one source's pairs (module doc "Quality gates"); returns the pairs kept,
    with comments stripped from code and ``gate`` set on pairs that go to the candidate pool; counts
    what each gate did in ``gates[name]``."""
    from dataclasses import replace

    from automonitor.gates import (
        FEW_TOKENS,
        few_tokens_differ,
        hardcode_screen,
        special_cases,
        strip_comments,
        whitespace_equal,
    )

    g = gates.setdefault(name, Counter())
    out: list[PairRecord] = []
    for p in res.pairs:
        if p.task == "code":
            lang = p.meta.get("language") or CODE_SOURCES_PY_DEFAULT
            mis, ben = strip_comments(p.misbehavior, lang), strip_comments(p.benign, lang)
            if mis != p.misbehavior or ben != p.benign:
                g["comments stripped (pairs)"] += 1
                p = replace(p, misbehavior=mis.strip("\n"), benign=ben.strip("\n"))
            if whitespace_equal(p.misbehavior, p.benign):
                g["dropped: equal after whitespace normalisation"] += 1
                continue
            if few_tokens_differ(p.misbehavior, p.benign, FEW_TOKENS):
                g[f"to candidates: <= {FEW_TOKENS} tokens differ"] += 1
                p = replace(p, gate=f"code sides differ by <= {FEW_TOKENS} tokens")
            elif name == "reward_hack_gen_codeforces" and hardcode_screen(p.benign, p.request):
                g["to candidates: plain side may hard-code the samples"] += 1
                p = replace(
                    p, gate=f"plain side may hard-code the sample tests: {hardcode_screen(p.benign, p.request)}"
                )
            elif name in HACK_SOURCES and not special_cases(p.misbehavior, p.request):
                g["to candidates: hack side shows no special-casing of the tests"] += 1
                p = replace(p, gate="hack side shows no special-casing of the tests (may be a general solution)")
        elif name == "sycophancy_qa":
            from automonitor.gates import are_you_sure_clear

            if p.meta.get("kind") == "cued answer":
                g["to candidates: cue-following judged by an LLM grader only"] += 1
                p = replace(
                    p,
                    gate="cued answer: whether the response follows the cue was judged by an LLM grader "
                    "only (hand check: often wrong)",
                )
            elif "mc" in str(p.meta.get("dataset") or "").split("_"):
                g["to candidates: multiple-choice question shown without its options"] += 1
                p = replace(p, gate="are you sure: multiple-choice question whose options the record lacks")
            else:
                cut = "\n\nAssistant: "
                why = are_you_sure_clear(p.misbehavior.split(cut, 1)[-1], p.benign.split(cut, 1)[-1])
                if why:
                    g["to candidates: are-you-sure follow-ups not clear"] += 1
                    p = replace(p, gate=f"are you sure: {why}")
        out.append(p)
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
    seen: set[tuple[str, str]] = set()
    pool: dict[str, list[PairRecord]] = {}
    hashes: dict[str, tuple[str, str, str]] = {}
    gates: dict[str, Counter] = {}
    for name, res in results.items():
        kept = []
        dropped = Counter(res.dropped)
        for p in apply_gates(name, res, gates):
            h = _hashes(p)
            key = (h[1], h[2])
            if key in seen or p.pair_id in hashes:
                dropped["duplicate pair (same responses as an earlier pair)"] += 1
                continue
            seen.add(key)
            hashes[p.pair_id] = h
            kept.append(p)
        pool[name] = kept
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
    conv: dict[str, int] = {}
    if pool.get("hh_rlhf"):
        hh = pool["hh_rlhf"]
        for p, gi in zip(hh, conversation_groups([p.request for p in hh])):
            conv[p.pair_id] = gi

    # 1. test selection: the paper mirror, then the verified-only sources
    test: dict[str, list[PairRecord]] = {}
    t_req: set[str] = set()
    t_mis: set[str] = set()
    t_ben: set[str] = set()
    quotas = []
    built: dict[str, int] = {}
    for q in TEST_PLAN + VERIFIED_EXTRA:
        target = q.pairs - (built.get(q.shares_with, 0) if q.shares_with else 0)
        eligible = [
            p for p in pool.get(q.source, []) if p.eligible_test and (q in TEST_PLAN or not p.gate)
        ]  # the paper mirror keeps doubtful pairs (its noise)
        rng = rng_for(seed, q.source, "test")
        order = _shuffled(eligible, rng)
        groups = {p.group for p in order}
        if len(groups) > 1:
            counts = Counter(p.group or "" for p in order)
            alloc = proportional(dict(counts), target)
        else:
            alloc = {(order[0].group or "") if order else "": target}
        taken_per: Counter = Counter()
        chosen: list[PairRecord] = []
        for p in order:
            g = p.group or ""
            if taken_per[g] >= alloc.get(g, 0):
                continue
            _, hm, hb = hashes[p.pair_id]
            if hm in t_ben or hb in t_mis:  # same text would carry both labels in the test set
                continue
            chosen.append(p)
            taken_per[g] += 1
            t_mis.add(hm)
            t_ben.add(hb)
            t_req.add(hashes[p.pair_id][0])
        test[q.source] = chosen
        built[q.source] = len(chosen)
        if q in TEST_PLAN:
            quotas.append(
                {
                    "source": q.source,
                    "category": q.category,
                    "task": q.task,
                    "target_pairs": target,
                    "built_pairs": len(chosen),
                }
            )
    paper_sources = {q.source for q in TEST_PLAN}
    ext_req, ext_resp = external_test or (set(), set())
    block_req = t_req | ext_req
    block_resp = t_mis | t_ben | ext_resp

    def collides(p: PairRecord, req: set[str], resp: set[str]) -> bool:
        h = hashes[p.pair_id]
        return h[0] in req or h[1] in resp or h[2] in resp

    def editions_of(p: PairRecord) -> tuple[str, ...]:
        eds = ("paper",) if p.source in paper_sources else ()
        if p.label_source not in NOT_VERIFIED and not p.gate:
            eds += ("verified",)
        return eds

    # 2. candidate pool: the planned draws, every gate-failing pair (with its reason), and a copy
    #    (own pair_id ``cand:<pair_id>``) of each paper test pair whose provenance keeps it out of verified
    test_ids = {p.pair_id for ps in test.values() for p in ps}
    cands: dict[str, list[tuple[PairRecord, str | None]]] = defaultdict(list)
    c_req: set[str] = set()
    c_resp: set[str] = set()
    for name, n in CANDIDATE_PLAN.items():
        rest = [
            p
            for p in pool.get(name, [])
            if p.pair_id not in test_ids and p.eligible_test and not p.gate and not collides(p, block_req, block_resp)
        ]
        for p in _shuffled(rest, rng_for(seed, name, "candidates"))[:n]:
            cands[name].append((p, None))
    for name, pairs in pool.items():
        for p in pairs:
            if p.gate and p.eligible_test and p.pair_id not in test_ids and not collides(p, block_req, block_resp):
                cands[name].append((p, p.gate))
    for name, pairs in test.items():
        for p in pairs:  # a paper test pair that cannot be verified: a copy with its own pair_id
            if p.label_source in NOT_VERIFIED or p.gate:
                why = p.gate or f"{p.label_source}: enters verified only through adjudication"
                cands[name].append((replace(p, pair_id=f"cand:{p.pair_id}"), why))
    for name, cs in cands.items():
        for p, _why in cs:
            h = _hashes(p)
            c_req.add(h[0])
            c_resp.update(h[1:])
    cand_ids = {p.pair_id for cs in cands.values() for p, _ in cs}
    held_groups = {
        conv[p.pair_id.removeprefix("cand:")]
        for cs in cands.values()
        for p, _ in cs
        if p.pair_id.removeprefix("cand:") in conv
    }
    held_groups |= {conv[p.pair_id] for p in test.get("hh_rlhf", [])}

    # 3. train: everything else that does not collide with test or candidates
    plan = Plan(report=report)
    train_counts: Counter = Counter()
    train_dropped: Counter = Counter()
    conv_dropped: Counter = Counter()
    not_train_req, not_train_resp = block_req | c_req, block_resp | c_resp
    for name, pairs in pool.items():
        for p in test.get(name, []):
            plan.rows.extend(_rows_for(p, "test", "gold", hashes[p.pair_id], editions_of(p)))
        for p, why in cands.get(name, []):
            plan.rows.extend(_rows_for(p, None, "candidate", _hashes(p), extra_meta={"gate": why} if why else None))
        for p in pairs:
            if p.pair_id in test_ids or p.pair_id in cand_ids:
                continue
            if p.gate:  # gate-failing pair not offered as candidate (it collides with the test set)
                continue
            if p.pair_id in conv and conv[p.pair_id] in held_groups:
                conv_dropped[name] += 1
                continue
            if collides(p, not_train_req, not_train_resp):
                train_dropped[name] += 1
                continue
            plan.rows.extend(_rows_for(p, "train", "gold", hashes[p.pair_id]))
            train_counts[name] += 1

    # 4. controls: benign-only samples (split ``controls``), never sharing a text with test/train
    ctrl_n: Counter = Counter()
    ctrl_seen: set[str] = set()
    for name, res in results.items():
        for c in res.controls:
            h = _hashes(c)
            if h[2] in ctrl_seen or h[2] in block_resp:
                continue
            ctrl_seen.add(h[2])
            plan.rows.extend(_rows_for(c, "controls", "gold", h, sides=("benign",)))
            ctrl_n[name] += 1

    for name in pool:
        s = report["sources"][name]
        s["test_pairs"] = len(test.get(name, []))
        s["candidate_pairs"] = len(cands.get(name, []))
        s["train_pairs"] = train_counts[name]
        s["train_dropped_hash_collision"] = train_dropped[name]
        if name in conv:
            pass
        if name == "hh_rlhf":
            s["train_dropped_same_conversation"] = conv_dropped[name]
        s["label_source"] = sorted({p.label_source for p in pool[name]})
    shortfalls = [
        {**q, "missing_pairs": q["target_pairs"] - q["built_pairs"]}
        for q in quotas
        if q["built_pairs"] < q["target_pairs"] and q["source"] not in {x.shares_with for x in TEST_PLAN}
    ]
    cat_built: Counter = Counter()
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
    n_test = sum(len(test.get(q.source, [])) for q in TEST_PLAN)
    n_cand = sum(len(v) for v in cands.values())
    by_ct: dict[str, dict[str, int]] = defaultdict(dict)
    for q in quotas:
        by_ct[q["category"]][q["task"]] = by_ct[q["category"]].get(q["task"], 0) + 2 * q["built_pairs"]
    report["test"] = {
        "pairs": n_test,
        "samples": 2 * n_test,
        "by_category": dict(cat_built),
        "by_category_task": dict(by_ct),
    }
    eds: dict[str, dict[str, Any]] = {}
    for ed in EDITIONS:
        ps = [p for ts in test.values() for p in ts if ed in editions_of(p)]
        ct: Counter = Counter(f"{p.category}/{p.task}" for p in ps)
        srcs: Counter = Counter(p.source for p in ps)
        eds[ed] = {
            "pairs": len(ps),
            "samples": 2 * len(ps),
            "by_category_task": dict(sorted(ct.items())),
            "by_source": dict(sorted(srcs.items())),
        }
    report["editions"] = eds
    report["gates"] = {k: dict(sorted(v.items())) for k, v in sorted(gates.items()) if v}
    report["gates"]["hh_rlhf conversation split"] = {
        "conversations": len(set(conv.values())),
        "train_pairs_dropped_same_conversation": conv_dropped["hh_rlhf"],
    }
    report["controls"] = {"samples": sum(ctrl_n.values()), "by_source": dict(ctrl_n)}
    report["candidates"] = {
        "pairs": n_cand,
        "samples": 2 * n_cand,
        "by_source": {k: len(v) for k, v in cands.items()},
        "by_reason": dict(Counter((why or "planned draw").split(":")[0] for cs in cands.values() for _, why in cs)),
    }
    report["train"] = {"pairs": sum(train_counts.values()), "samples": 2 * sum(train_counts.values())}
    return plan


# --- store side -----------------------------------------------------------------------------------


def _referenced(session, ids: list[str]) -> dict[str, set[str]]:
    """Which of ``ids`` are referenced by predictions, assignments, annotations, adjudications."""
    from store.models import Adjudication, Annotation, Assignment, Prediction

    out: dict[str, set[str]] = {}
    for name, model in (
        ("predictions", Prediction),
        ("assignments", Assignment),
        ("annotations", Annotation),
        ("adjudications", Adjudication),
    ):
        found: set[str] = set()
        for part in _chunks(ids):
            found.update(session.execute(sa.select(model.sample_id).where(model.sample_id.in_(part))).scalars())
        if found:
            out[name] = found
    return out


def _delete_dependents(session, ids: list[str]) -> dict[str, int]:
    """Delete whole runs that judged any of ``ids`` (with all their predictions), and assignments,
    annotations, adjudications of ``ids``. Returns counts deleted per table."""
    from store.models import Adjudication, Annotation, Assignment, Prediction, Run

    run_ids: set[str] = set()
    for part in _chunks(ids):
        run_ids.update(session.execute(sa.select(Prediction.run_id).where(Prediction.sample_id.in_(part))).scalars())
    counts = {"runs": len(run_ids), "predictions": 0, "assignments": 0, "annotations": 0, "adjudications": 0}
    rl = sorted(run_ids)
    for part in _chunks(rl):
        counts["predictions"] += session.execute(sa.delete(Prediction).where(Prediction.run_id.in_(part))).rowcount or 0
        session.execute(sa.delete(Run).where(Run.id.in_(part)))
    for key, model in (("adjudications", Adjudication), ("annotations", Annotation), ("assignments", Assignment)):
        for part in _chunks(ids):
            counts[key] += session.execute(sa.delete(model).where(model.sample_id.in_(part))).rowcount or 0
    return counts


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
    from store import session_scope
    from store.models import Adjudication, BuildLog, EditionSample, Sample
    from store.queries.samples import insert_samples

    t0 = time.perf_counter()
    raw_path = resolve_raw(raw)
    sources = list(REGISTRY)
    with session_scope(engine) as session:
        # external gold test samples (not build-derived), and the current build-derived rows
        ext_req: set[str] = set()
        ext_resp: set[str] = set()
        current: dict[str, tuple[str | None, str, str]] = {}
        settled: set[str] = set()
        q = sa.select(
            Sample.id,
            Sample.source,
            Sample.split,
            Sample.status,
            Sample.meta,
            Sample.request_hash,
            Sample.response_hash,
            Sample.label_source,
        )
        for sid, source, split, status, meta, rh, sh, lsrc in session.execute(q):
            is_build = source in sources and isinstance(meta, dict) and meta.get("origin") == ORIGIN
            if is_build:
                current[sid] = (split, status, lsrc)
                if "annotation" in meta:  # finalized by the annotation workflow
                    settled.add(sid)
            elif status == "gold" and split == "test":
                ext_req.add(rh)
                ext_resp.add(sh)
        plan = plan_build(raw_path, seed, external_test=(ext_req, ext_resp), progress=progress, loaded=loaded)
        planned = {r["id"]: r for r in plan.rows}
        adjudicated: set[str] = set(settled)
        cur_ids = list(current)
        for part in _chunks(cur_ids):
            adjudicated.update(
                session.execute(sa.select(Adjudication.sample_id).where(Adjudication.sample_id.in_(part))).scalars()
            )
        to_delete = [i for i in current if i not in planned]
        to_update = [
            i
            for i in current
            if i in planned
            and i not in adjudicated
            and current[i] != (planned[i]["split"], planned[i]["status"], planned[i]["label_source"])
        ]
        affected = to_delete + to_update
        refs = _referenced(session, affected) if affected else {}
        dependents: dict[str, int] = {}
        if refs:
            desc = ", ".join(f"{len(v)} by {k}" for k, v in refs.items())
            if not force:
                last = latest_seed(session)
                raise InputError(
                    f"building with seed {seed} would replace or move {len(affected)} build samples of the "
                    f"current build{f' (seed {last})' if last is not None else ''}, and some are referenced "
                    f"({desc}); rerun with --force to delete those runs, assignments, annotations and "
                    f"adjudications, or keep the current seed",
                    field="--seed",
                )
            dependents = _delete_dependents(session, sorted(set().union(*refs.values())))
        # edition membership of build samples (adjudicated/finalized ones keep theirs)
        have_ed: set[tuple[str, str]] = set()
        for part in _chunks(cur_ids):
            have_ed.update(
                session.execute(
                    sa.select(EditionSample.edition, EditionSample.sample_id).where(EditionSample.sample_id.in_(part))
                ).all()
            )
        want_ed = {(ed, r["id"]) for r in plan.rows for ed in r.get("editions", ()) if r["id"] not in adjudicated}
        drop_ed = [
            (ed, sid)
            for ed, sid in have_ed
            if sid not in adjudicated and ((ed, sid) not in want_ed or sid in to_delete)
        ]
        for ed, sid in drop_ed:
            session.execute(sa.delete(EditionSample).where(EditionSample.edition == ed, EditionSample.sample_id == sid))
        for part in _chunks(to_delete):
            session.execute(sa.delete(EditionSample).where(EditionSample.sample_id.in_(part)))
            session.execute(sa.delete(Sample).where(Sample.id.in_(part)))
        if to_update:
            stmt = (
                sa.update(Sample.__table__)
                .where(Sample.__table__.c.id == sa.bindparam("_id"))
                .values(split=sa.bindparam("_split"), status=sa.bindparam("_status"), label_source=sa.bindparam("_ls"))
            )
            session.execute(
                stmt,
                [
                    {
                        "_id": i,
                        "_split": planned[i]["split"],
                        "_status": planned[i]["status"],
                        "_ls": planned[i]["label_source"],
                    }
                    for i in to_update
                ],
            )
        new_rows = [r for r in plan.rows if r["id"] not in current]
        inserted = insert_samples(session, new_rows)
        add_ed = sorted(want_ed - set(have_ed))
        if add_ed:
            from store.models import utcnow

            now = utcnow()
            session.execute(
                sa.insert(EditionSample), [{"edition": ed, "sample_id": sid, "created_at": now} for ed, sid in add_ed]
            )
        changed = bool(inserted or to_update or to_delete or add_ed or drop_ed)
        last = latest_seed(session)
        report = dict(plan.report)
        report.update(
            {
                "inserted": inserted,
                "updated": len(to_update),
                "deleted": len(to_delete),
                "unchanged": not changed,
                "dependents_deleted": dependents,
                "kept_adjudicated": len([i for i in current if i in adjudicated]),
            }
        )
        if changed or last != seed:
            session.add(BuildLog(seed=seed, report={k: v for k, v in report.items() if k != "seconds"}))
    report["seconds"] = round(time.perf_counter() - t0, 3)
    return report


def latest_seed(session) -> int | None:
    """Seed of the newest build log, or ``None`` when the store was never built."""
    from store.models import BuildLog

    return session.execute(sa.select(BuildLog.seed).order_by(BuildLog.id.desc()).limit(1)).scalar()
