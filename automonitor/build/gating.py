"""Load every source and apply the quality gates (:mod:`automonitor.gates`) to its pairs; see the package
doc, "Quality gates"."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Callable

from automonitor.build.config import CODE_SOURCES_PY_DEFAULT, HACK_SOURCES, NO_RAW_HINT
from automonitor.errors import InputError
from automonitor.gates import (
    FEW_TOKENS,
    are_you_sure_clear,
    few_tokens_differ,
    hardcode_screen,
    special_cases,
    strip_comments,
    whitespace_equal,
)
from automonitor.sources import REGISTRY, PairRecord, SourceResult


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
        screen = REGISTRY[name].screen if name in REGISTRY else None
        if gated is not None and not gated.gate and screen is not None:
            why = screen(gated)
            if why:
                g[f"to candidates: {why.split(':')[0].split(' (')[0]}"] += 1
                gated = replace(gated, gate=why)
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
