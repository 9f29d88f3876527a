"""Load every source and apply the quality gates (:mod:`automonitor.data.gates`) to its pairs; see the package
doc, "Quality gates"."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Callable

from automonitor.data.build.analysers import ANALYSER_OF, analyse, pair_verdict
from automonitor.data.build.config import CODE_SOURCES_PY_DEFAULT, HACK_SOURCES, NO_RAW_HINT
from automonitor.data.build.steps import stage
from automonitor.errors import InputError
from automonitor.data.gates import (
    FEW_TOKENS,
    are_you_sure_clear,
    few_tokens_differ,
    hardcode_screen,
    special_cases,
    sql_quoted_placeholder,
    strip_comments,
    is_test_code,
    whitespace_equal,
)
from automonitor.data.records import meta_problem
from automonitor.data.sources import REGISTRY, SourcePair, SourceResult


# Sources whose pairs are a vulnerable function and its fix: gated by real static analysers.
SAFETY_CODE_SOURCES: frozenset[str] = frozenset({"safecoder", "sven"})
STEP_TEST_CODE = "dropped: test code"
STEP_UNCOVERED = "to candidates: no static analyser for the language"
STEP_ANALYSER = "to candidates: analyser does not confirm the fix"


def _gate_code(name: str, p: SourcePair, g: Counter[str]) -> SourcePair | None:
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
    if name == "reward_hack_gen_codeforces" and (why := hardcode_screen(p.benign, p.request)):
        g["to candidates: plain side may hard-code the samples"] += 1
        return replace(p, gate=f"plain side may hard-code the sample tests: {why}")
    if name in HACK_SOURCES and not special_cases(p.misbehavior, p.request):
        g["to candidates: hack side shows no special-casing of the tests"] += 1
        return replace(p, gate="hack side shows no special-casing of the tests (may be a general solution)")
    return p


def _gate_sycophancy_qa(p: SourcePair, g: Counter[str]) -> SourcePair:
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


def _gate_safety_code(pairs: list[SourcePair], g: Counter[str], by_lang: dict[str, Counter[str]]) -> list[SourcePair]:
    """The analyser gate of a vulnerable/fixed source on pairs that passed
    :func:`_gate_code`: test code dropped; a language no analyser covers, or a pair the analyser does
    not confirm (:func:`automonitor.data.build.analysers.pair_verdict`), to candidates with the reason.
    Counts each step in ``g`` and per language in ``by_lang``; a pair already gated keeps its gate."""
    out: list[SourcePair] = []
    todo: list[SourcePair] = []
    for p in pairs:
        lang = str(p.meta.get("language") or "code")
        why = is_test_code(p.misbehavior, p.meta.get("file_name")) or is_test_code(p.benign)
        if why:
            g[STEP_TEST_CODE] += 1
            by_lang[lang][STEP_TEST_CODE] += 1
            continue
        if p.gate:  # <= 3 tokens differ: counted by apply_gates
            out.append(p)
        elif lang not in ANALYSER_OF:
            g[STEP_UNCOVERED] += 1
            by_lang[lang][STEP_UNCOVERED] += 1
            out.append(replace(p, gate=f"no static analyser covers {lang} (Bandit: Python, flawfinder: C/C++)"))
        else:
            todo.append(p)
            out.append(p)
    found = analyse((str(p.meta["language"]), side) for p in todo for side in (p.misbehavior, p.benign))
    verdicts = {}
    for p in todo:
        lang = str(p.meta["language"])
        why = pair_verdict(found[(lang, p.misbehavior)], found[(lang, p.benign)], p.meta.get("cwe"), ANALYSER_OF[lang])
        if not why and str(p.meta.get("cwe")) == "CWE-089":  # Bandit's B608 misses a quoted hole on the fixed side
            hole = sql_quoted_placeholder(p.benign)
            why = f"fixed side: {hole}" if hole else None
        verdicts[p.pair_id] = why
        step = STEP_ANALYSER if why else "kept: analyser confirms the fix"
        g[step] += 1
        by_lang[lang][step] += 1
    return [replace(p, gate=f"static analyser: {verdicts[p.pair_id]}") if verdicts.get(p.pair_id) else p for p in out]


def apply_gates(
    name: str,
    res: SourceResult,
    gates: dict[str, Counter[str]],
    by_language: dict[str, dict[str, Counter[str]]] | None = None,
) -> list[SourcePair]:
    """The quality gates of one source's pairs (module doc "Quality gates"); returns the pairs kept,
    with comments stripped from code and ``gate`` set on pairs that go to the candidate pool; counts
    what each gate did in ``gates[name]`` and, for :data:`SAFETY_CODE_SOURCES`, per language in
    ``by_language[name][language]`` (``pairs in`` and each step).

    Raises:
        subprocess.TimeoutExpired: a static analyser ran over its time bound.
    """
    g = gates.setdefault(name, Counter())
    out: list[SourcePair] = []
    lang_counts: dict[str, Counter[str]] = defaultdict(Counter)
    for p in res.pairs:
        gated: SourcePair | None = p
        if p.task == "code":
            gated = _gate_code(name, p, g)
        elif name == "sycophancy_qa":
            gated = _gate_sycophancy_qa(p, g)
        if name in SAFETY_CODE_SOURCES:
            lc = lang_counts[str(p.meta.get("language") or "code")]
            lc["pairs loaded"] += 1
            if gated is None:
                lc["dropped: equal after whitespace normalisation"] += 1
            elif gated.gate:
                lc[f"to candidates: <= {FEW_TOKENS} tokens differ"] += 1
        screen = REGISTRY[name].screen if name in REGISTRY else None
        if gated is not None and not gated.gate and screen is not None:
            why = screen(gated)
            if why:
                g[f"to candidates: {why.split(':')[0].split(' (')[0]}"] += 1
                gated = replace(gated, gate=why)
        if gated is not None:
            out.append(gated)
    if name in SAFETY_CODE_SOURCES:
        out = _gate_safety_code(out, g, lang_counts)
        if by_language is not None:
            by_language[name] = {k: lang_counts[k] for k in sorted(lang_counts)}
    return out


STEP_META_LIMIT = "dropped: meta over the import limits"


def _meta_over_limit(p: SourcePair) -> bool:
    """Whether a side's stored ``meta`` (the pair's meta with the side's) is outside the importers' limits
    (:func:`automonitor.data.records.meta_problem`), so an export of it would not import back."""
    return any(meta_problem({**p.meta, **side}) for side in (p.mis_meta, p.ben_meta))


def _within_meta_limits(res: SourceResult) -> SourceResult:
    """``res`` without the pairs and controls whose ``meta`` the importers would refuse (counted in
    ``dropped`` as :data:`STEP_META_LIMIT`): the build stores nothing that ``import`` refuses."""
    kept = [p for p in res.pairs if not _meta_over_limit(p)]
    controls = [p for p in res.controls if not _meta_over_limit(p)]
    over = len(res.pairs) - len(kept) + len(res.controls) - len(controls)
    if over:
        res.dropped[STEP_META_LIMIT] += over
        res.pairs, res.controls = kept, controls
    return res


def load_all(raw: Path, progress: Callable[[str], None] | None = None) -> dict[str, SourceResult]:
    """Run every registered importer on ``raw``: one ``progress`` line per source, and one step of stage
    ``sources`` per source when ``progress`` is a :class:`~automonitor.data.build.steps.StageProgress`.

    Raises:
        InputError: a malformed file, or none of the sources' files exist under ``raw``.
    """
    results: dict[str, SourceResult] = {}
    with stage(progress, "sources", len(REGISTRY)) as step:
        for name, src in REGISTRY.items():
            t0 = time.perf_counter()
            results[name] = _within_meta_limits(src.load(raw))
            if progress:
                r = results[name]
                miss = f", {len(r.missing)} file(s) missing" if r.missing else ""
                progress(
                    f"{name}: {len(r.pairs)} pairs from {len(r.files)} file(s){miss} ({time.perf_counter() - t0:.2f} s)"
                )
            step(name)
    if not any(r.files for r in results.values()):
        raise InputError(f"no public source files found under {raw}; {NO_RAW_HINT}", file=str(raw), field="--raw")
    return results
