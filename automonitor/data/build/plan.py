"""The build plan: which pairs go to test, candidates and train for a raw dir and a seed, without
touching any store."""

from __future__ import annotations

import time

from collections import Counter
from pathlib import Path
from typing import Any, Callable

from automonitor.data.errata import Erratum, current, errata_counts, load_errata
from automonitor.data.families import shared_families
from automonitor.data.build.gating import load_all
from automonitor.data.build.hard import add_hard_edition
from automonitor.data.build.ladder import add_ladder
from automonitor.data.build.ladder_runs import plan_runs
from automonitor.data.build.report import edition_report, report_pools, report_quotas, report_source_counts
from automonitor.data.build.sample_rows import Plan
from automonitor.data.build.steps import stage
from automonitor.data.build.selection import (
    Blocked,
    Pool,
    candidate_hashes,
    control_rows,
    errata_not_stored,
    gated_pool,
    select_candidates,
    check_verified_prompts,
    select_test,
    split_rows,
)
from automonitor.data.sources import SourceResult


def _family_report(pool: Pool, plan: Plan) -> dict[str, int]:
    """Problem families of the pool: how many, how many hold more than one pair, and how many have
    pairs in both train and test (0 by construction)."""
    sizes = Counter(pool.family.values())
    split = {r["pair_id"]: r["split"] for r in plan.rows}
    train = {p for p, s in split.items() if s == "train"}
    test = {p for p, s in split.items() if s == "test"}
    return {
        "families": len(sizes),
        "multi_pair_families": sum(1 for n in sizes.values() if n > 1),
        "train_dropped_same_family": sum(
            v.get("train_dropped_same_family", 0) for v in plan.report["sources"].values()
        ),
        "shared_train_test": len(shared_families(pool.family, train, test)),
    }


def plan_build(
    raw: Path,
    seed: int = 0,
    *,
    external_test: tuple[set[str], set[str]] | None = None,
    progress: Callable[[str], None] | None = None,
    loaded: dict[str, SourceResult] | None = None,
    errata_file: str | Path | None = None,
    hard: bool = True,
    errata: list[Erratum] | None = None,
    refresh_ladder: bool = False,
) -> Plan:
    """Decide, without touching any store, which pairs go to test, candidates and train.

    Args:
        raw: the raw sources dir (one subdirectory per source, as ``automonitor fetch-sources`` writes it).
        seed: selection seed (see module doc).
        external_test: ``(request hashes, response hashes)`` of gold test samples already in the store
            that the build does not own (user imports): train and candidates avoid them too.
        loaded: the output of :func:`load_all` for ``raw`` when the caller already has it (it is not
            modified); read from ``raw`` otherwise.
        errata_file: the shipped errata file to apply (:mod:`automonitor.data.errata`; default
            ``$AUTOMONITOR_ERRATA`` or the package's ``errata.jsonl``).
        errata: the errata to apply instead, in order (:func:`automonitor.data.errata.errata_in_force`:
            the shipped ones and a store's); ``errata_file`` is not read then.
        hard: run the detector ladder (:mod:`automonitor.data.build.ladder`: each judged row's ``meta`` gains
            ``tier``, ``caught_by``, ``false_alarm_by``; report ``ladder``) and the selection that makes edition
            ``hard`` (most of a plan's CPU; both cached by content); ``False`` plans every other edition only
            (no row is in ``hard`` or carries a tier, the report has no ``ladder`` or ``hard`` section, the plan no
            ladder runs).
        refresh_ladder: recompute the ladder instead of reading its cache (``build --refresh-ladder``); the
            store side then rewrites the ladder's runs too (:mod:`automonitor.data.build.ladder_runs`).
    Returns:
        :class:`Plan` with two rows per pair and the report (per-source counts, quotas, shortfalls).
    Raises:
        InputError: see :func:`load_all`; an invalid errata line (file, line, field).
        RuntimeError: a ``verified``/``hard`` pair whose sides answered different prompts without a
            provenance that says so (:func:`~automonitor.data.build.selection.check_verified_prompts`).
    """
    if errata is None:
        errata = load_errata(errata_file)  # before anything is read: a bad errata file changes nothing
    say = progress or (lambda _msg: None)
    results = loaded if loaded is not None else load_all(raw, progress)
    report: dict[str, Any] = {"seed": seed, "raw_dir": str(raw), "sources": {}}
    t0 = time.perf_counter()
    say(f"gates: checking {sum(len(r.pairs) for r in results.values()):,} pairs (static analysers on code pairs)")
    pool = gated_pool(results, report, current(errata))
    say(f"gates: {sum(len(v) for v in pool.pairs.values()):,} pairs pass ({time.perf_counter() - t0:.1f} s)")
    test = select_test(pool, seed)
    ext_req, ext_resp = external_test or (set(), set())
    blocked = Blocked(test.req | ext_req, test.mis | test.ben | ext_resp)
    cands = select_candidates(pool, test, seed, blocked)
    plan = Plan(report=report)
    train = split_rows(pool, test, cands, blocked | candidate_hashes(cands), plan)
    ctrl_n = control_rows(results, blocked.resp, plan)
    report_source_counts(report, pool, test, cands, train)
    report_quotas(report, test)
    report["editions"] = edition_report(test)
    report_pools(report, pool, cands, train, ctrl_n)
    report["code_gates"] = {
        src: {lang: dict(c) for lang, c in langs.items()} for src, langs in pool.by_language.items()
    }
    report["families"] = _family_report(pool, plan)
    report["errata"] = errata_counts(errata, pool.errata_applied)
    report["errata"]["not_stored"] = errata_not_stored(pool, blocked, plan.rows)
    report["errata"]["in_paper_test"] = sum(1 for ps in test.pairs.values() for p in ps if "erratum" in p.meta)
    report["side_balance"] = test.balance
    n_test = sum(len(v) for v in test.pairs.values())
    say(f"selection: {n_test:,} test pairs, {len(plan.rows):,} sample rows (test, candidates, train, controls)")
    if hard:
        say("detector ladder: cheap detectors on every judged sample (cached after the first build)")
        t0 = time.perf_counter()
        ladder, lsec = add_ladder(plan, seed, use_cache=not refresh_ladder, progress=progress)  # and each pair's tier
        say(f"detector ladder: {len(ladder.tiers):,} pairs tiered ({time.perf_counter() - t0:.1f} s)")
        say(
            "edition hard: selection, adversarial filtering and held-out certification of the verified pairs "
            "(the longest step; cached after the first build)"
        )
        t0 = time.perf_counter()
        with stage(progress, "edition hard", None):  # no counted steps: a bar that shows it is working
            section = add_hard_edition(plan, seed, ladder)  # the certified, read implicit tier of verified
        say(f"edition hard: {section.get('pairs', 0):,} pairs kept ({time.perf_counter() - t0:.1f} s)")
        # each detector as a run of kind ``ladder`` (written by the store side of the build)
        plan.ladder_runs = plan_runs(plan.rows, ladder, ladder_key=lsec["key"], seed=seed, cached=lsec["cached"])
    check_verified_prompts(plan.rows)
    return plan
