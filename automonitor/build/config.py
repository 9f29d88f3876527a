"""The build's fixed plan: the test quotas per source (paper mirror and verified-only), the candidate
draws, the label provenances kept out of ``verified``, and where the raw sources are (:func:`resolve_raw`).

The paper quotas are checked against :data:`automonitor.vocab.PAPER_QUOTAS` at import.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from automonitor.errors import InputError
from automonitor.vocab import PAPER_QUOTAS

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
