"""Anthropic HH-RLHF harmless-base test split: Safety & Permission Violations, QA.

Each record holds two full transcripts (``chosen``, ``rejected``) that share every turn except the
last Assistant turn. Request = the dialogue up to and including the last Human turn; response = the
last Assistant turn. ``rejected`` is the misbehavior side and ``chosen`` the benign side, as in the
paper. Dropped: records whose two transcripts differ before the last Assistant turn, an empty final
turn, and pairs whose final responses are identical or nearly so (``difflib.SequenceMatcher`` ratio
over word and punctuation tokens >= ``NEAR_DUPLICATE_RATIO``), since the paper filters such mild
pairs. Each side keeps the whole chat as typed steps in ``meta["steps"]`` (:func:`dialogue_steps`: the
request's turns, then its own last Assistant turn); the texts are unchanged.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from automonitor.data.sources.base import Side, SourceResult, make_pair
from automonitor.data.sources.registry import register_source
from automonitor.data.trajectory import Step, steps_meta

NAME = "hh_rlhf"
FOLDER = "hh_rlhf"
CATEGORY = "safety_permission"
FILES = ("hh_rlhf/harmless-base/test.jsonl.gz",)
NEAR_DUPLICATE_RATIO = 0.8
_SEP = "\n\nAssistant:"
_TOKEN = re.compile(r"\w+|[^\w\s]")
_TURN = re.compile(r"(?:^|\n\n)(Human|Assistant):[ \t]?")


def dialogue_steps(dialogue: str, last: str) -> list[Step]:
    """The chat as typed steps (:class:`automonitor.data.trajectory.Step`): the ``Human:`` /
    ``Assistant:`` turns of ``dialogue`` (the request, text before its first turn label left out) as
    ``human`` / ``assistant`` steps, then ``last`` (the response) as the final ``assistant`` step."""
    marks = list(_TURN.finditer(dialogue))
    steps = [
        Step(
            role=m.group(1).lower(),
            content=dialogue[m.end() : marks[i + 1].start() if i + 1 < len(marks) else len(dialogue)].strip(),
        )
        for i, m in enumerate(marks)
    ]
    return [*steps, Step(role="assistant", content=last.strip())]


def split_last_turn(transcript: str) -> tuple[str, str] | None:
    """``(dialogue up to the last Human turn, last Assistant turn)``, both stripped, or ``None`` when
    the transcript has no Assistant turn."""
    i = transcript.rfind(_SEP)
    if i < 0:
        return None
    return transcript[:i].strip(), transcript[i + len(_SEP) :].strip()


def near_duplicate(a: str, b: str, threshold: float = NEAR_DUPLICATE_RATIO) -> bool:
    """True when ``a`` and ``b`` are identical or the ``difflib.SequenceMatcher`` ratio of their word
    and punctuation tokens is at least ``threshold`` (cheap upper bounds first, so most pairs cost
    little)."""
    if a == b:
        return True
    sm = difflib.SequenceMatcher(None, _TOKEN.findall(a), _TOKEN.findall(b), autojunk=False)
    if sm.real_quick_ratio() < threshold or sm.quick_ratio() < threshold:
        return False
    return sm.ratio() >= threshold


@register_source(NAME, folder=FOLDER, category=CATEGORY, task="qa", files=FILES, order=10)
def load(raw: Path) -> SourceResult:
    """Read ``hh_rlhf/harmless-base/test.jsonl.gz`` under ``raw`` into pairs (see module doc).

    Raises:
        InputError: a malformed line (file, line, field named).
    """
    res = SourceResult()
    for line, obj in res.jsonl(raw, FILES[0], need=("chosen", "rejected")):
        c, r = split_last_turn(obj["chosen"]), split_last_turn(obj["rejected"])
        if c is None or r is None:
            res.dropped["no assistant turn"] += 1
            continue
        if c[0] != r[0]:
            res.dropped["dialogues differ before the last turn"] += 1
            continue
        request, benign = c
        misbehavior = r[1]
        if not request or not benign or not misbehavior:
            res.dropped["empty request or response"] += 1
            continue
        if near_duplicate(misbehavior, benign):
            res.dropped["near-identical responses"] += 1
            continue
        res.pairs.append(
            make_pair(
                f"{NAME}:{line}",
                request,
                Side(misbehavior, FILES[0], f"line {line} rejected"),
                Side(benign, FILES[0], f"line {line} chosen"),
                meta={"turns": request.count("Human:")},
                mis_meta={"steps": steps_meta(dialogue_steps(request, misbehavior))},
                ben_meta={"steps": steps_meta(dialogue_steps(request, benign))},
                label_source="preference_pair",
            )
        )
    return res
