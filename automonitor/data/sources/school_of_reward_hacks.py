"""School of Reward Hacks (Taylor et al. 2025): Specification Gaming, QA.

``sneaky_dialogues.jsonl`` holds (prompt, reward-hacking response) chats and
``straightforward_dialogues.jsonl`` (prompt, honest response) chats. Every control prompt appears
verbatim among the hack prompts, which pairs them. The prompt, with its explicitly stated gameable
metric ("I will evaluate ... by counting ..."), is the request; the hack is the misbehavior side and
the control the benign side. The 100 hack prompts without a control (coding tasks) are not paired.
"""

from __future__ import annotations

from typing import Any

from pathlib import Path

from automonitor.errors import InputError
from automonitor.data.sources.base import Side, SourceResult, make_pair, read_jsonl, rel
from automonitor.data.sources.registry import register_source

NAME = "school_of_reward_hacks"
FOLDER = NAME
CATEGORY = "specification_gaming"
HACK_FILE = f"{FOLDER}/sneaky_dialogues.jsonl"
CONTROL_FILE = f"{FOLDER}/straightforward_dialogues.jsonl"
FILES = (HACK_FILE, CONTROL_FILE)


def chat_pair(obj: dict[str, Any], raw: Path, path: Path, line: int) -> tuple[str, str]:
    """``(user prompt, assistant reply)`` of a two-message chat record.

    Raises:
        InputError: ``messages`` is not a user message followed by an assistant message.
    """
    msgs = obj.get("messages")
    if (
        not isinstance(msgs, list)
        or len(msgs) < 2
        or not all(isinstance(m, dict) for m in msgs[:2])
        or msgs[0].get("role") != "user"
        or msgs[1].get("role") != "assistant"
        or not isinstance(msgs[0].get("content"), str)
        or not isinstance(msgs[1].get("content"), str)
    ):
        raise InputError(
            "expected [user message, assistant message] with string contents",
            file=rel(raw, path),
            line=line,
            field="messages",
        )
    return msgs[0]["content"], msgs[1]["content"]


@register_source(NAME, folder=FOLDER, category=CATEGORY, task="qa", files=FILES, order=50, candidate_pairs=100)
def load(raw: Path) -> SourceResult:
    """Pair hack and control chats under ``raw`` by identical prompt (see module doc).

    Raises:
        InputError: a line that is not a JSON object, or whose ``messages`` are not a user then an assistant message
            with string contents (:func:`chat_pair`; file, line and field named).
    """
    res = SourceResult()
    if not res.found_all(raw, FILES):
        return res
    hpath, cpath = raw / HACK_FILE, raw / CONTROL_FILE
    hacks: dict[str, tuple[int, str]] = {}
    for line, obj in read_jsonl(raw, hpath):
        prompt, reply = chat_pair(obj, raw, hpath, line)
        hacks.setdefault(prompt.strip(), (line, reply))
    used = set()
    for line, obj in read_jsonl(raw, cpath):
        prompt, reply = chat_pair(obj, raw, cpath, line)
        key = prompt.strip()
        if key not in hacks:
            res.dropped["control without hack"] += 1
            continue
        hline, hreply = hacks[key]
        used.add(key)
        if hreply.strip() == reply.strip() or not hreply.strip() or not reply.strip():
            res.dropped["identical or empty responses"] += 1
            continue
        res.pairs.append(
            make_pair(
                f"{NAME}:{line}",
                key,
                Side(hreply.strip(), HACK_FILE, f"line {hline}"),
                Side(reply.strip(), CONTROL_FILE, f"line {line}"),
                meta={"incentive": "stated gameable metric in the prompt"},
                label_source="instructed_demo",
            )
        )
    res.dropped["hack without control (code tasks)"] += len(hacks) - len(used)
    return res
