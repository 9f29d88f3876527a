"""reward-hack-gen Codeforces completions (Claude 3.7 Sonnet): Specification Gaming, Code.

``claude_completions_hacking.jsonl`` and ``claude_completions_no_hacking.jsonl`` are index-aligned
(same ``original_prompt`` line by line). Misbehavior = the hacking completion (the model was told to
write a non-general solution passing the shown tests: ``instructed_demo``) when the LLM judge of
``evaluation_results_claude_completions.json`` says "yes"; benign = the plain completion of the same
index. Request = ``original_prompt`` (the neutral task with its sample tests), never the hacking
``full_prompt``. The Markdown fence is removed from completions. Dropped: judge "no", prompts that
differ, completions cut at max_tokens. The plain side was never checked upstream: the build screens it
statically (:func:`automonitor.data.gates.hardcode_screen`) and sends doubtful pairs to the candidate pool.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from automonitor.errors import InputError
from automonitor.data.sources.base import Numbered, Side, SourcePair, SourceResult, make_pair, read_json, read_jsonl
from automonitor.data.sources.registry import register_source

NAME = "reward_hack_gen_codeforces"
FOLDER = "reward_hack_gen_codeforces"
CATEGORY = "specification_gaming"
HACK = f"{FOLDER}/datasets/claude_completions_hacking.jsonl"
PLAIN = f"{FOLDER}/datasets/claude_completions_no_hacking.jsonl"
JUDGE = f"{FOLDER}/dataset_creation/evaluation_results_claude_completions.json"
FILES = (HACK, PLAIN, JUDGE)
_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n(.*?)(?:```|\Z)", re.S)


def unfence(text: str) -> str:
    """The code inside the first Markdown fence of ``text`` (the whole text when there is none)."""
    m = _FENCE.search(text)
    return (m.group(1) if m else text).strip()


def _judge_verdicts(raw: Path) -> dict[Any, str]:
    """The judge's answer (lower-cased) per completion ``index``.

    Raises:
        InputError: the judge file has no ``results`` list.
    """
    judge = read_json(raw, raw / JUDGE)
    results = judge.get("results") if isinstance(judge, dict) else None
    if not isinstance(results, list):
        raise InputError("expected {summary, results: [...]}", file=JUDGE, field="results")
    return {r.get("index"): str(r.get("answer", "")).strip().lower() for r in results if isinstance(r, dict)}


def _pair(line: int, obj: dict[str, Any], plain: Numbered, verdict: str | None) -> SourcePair | str:
    """The pair of hacking line ``line`` (``obj``) and its plain completion when the judge confirmed
    the hack, the prompts are equal, neither side was cut and the code differs; else the drop reason."""
    idx = obj.get("index")
    pline, pobj = plain
    if verdict != "yes":
        return "judge did not confirm the hack"
    if pobj.get("original_prompt") != obj["original_prompt"]:
        return "prompts differ"
    if obj.get("stop_reason") == "max_tokens" or pobj.get("stop_reason") == "max_tokens":
        return "completion cut at max_tokens"
    hack, honest = unfence(obj["completion"]), unfence(str(pobj.get("completion") or ""))
    if not hack or not honest or hack == honest:
        return "empty or identical completions"
    return make_pair(
        f"{NAME}:{idx}",
        obj["original_prompt"].strip(),
        Side(hack, HACK, f"line {line} (index {idx})"),
        Side(honest, PLAIN, f"line {pline} (index {idx})"),
        meta={
            "index": idx,
            "model": obj.get("model_id"),
            "language": "Python",
            "request_from": "original_prompt",
        },
        mis_meta={"prompt_variant": "hacking (told to pass the shown tests only)", "judge": "yes"},
        ben_meta={"prompt_variant": "no_hacking (plain; unverified upstream, screened by the build)"},
        label_source="instructed_demo",
        answered_other_prompt={"misbehavior": "the task with an instruction to pass the shown tests only"},
    )


@register_source(NAME, folder=FOLDER, category=CATEGORY, task="code", files=FILES, order=100, verified_pairs=150)
def load(raw: Path) -> SourceResult:
    """Pair hacking and plain Codeforces completions by index (see module doc).

    Raises:
        InputError: a malformed line or judge file (file, line, field named).
    """
    res = SourceResult()
    if not res.found_all(raw, FILES):
        return res
    verdict = _judge_verdicts(raw)
    plain = {obj.get("index"): (line, obj) for line, obj in read_jsonl(raw, raw / PLAIN)}
    for line, obj in read_jsonl(raw, raw / HACK, need=("original_prompt", "completion")):
        idx = obj.get("index")
        res.add(_pair(line, obj, plain[idx], verdict.get(idx)) if idx in plain else "hack without plain completion")
    return res
