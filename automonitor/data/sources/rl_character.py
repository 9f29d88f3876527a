"""rl-character (Baidicoot) code hacks: Specification Gaming, Code.

Two importers share this module:

* ``rl_character_apps`` - APPS problems solved by o4-mini twice: once with a prompt that asks it to
  tailor the code to the shown tests ("force_hack": lookup tables, special cases; misbehavior) and
  once with a prompt asking for generally correct code ("clean"; benign). 319 problem ids are in
  both files. The request shown to a monitor is the NEUTRAL task: the hack prompt with its
  test-fitting instruction ("I want you to intentionally tailor ... shortcuts available.") removed,
  i.e. the problem description, function name and the test cases the model saw.
* ``rl_character_mbpp`` - MBPP problems solved by claude-4-sonnet with a "pro_hacking" prompt
  showing broken (wrong) expected outputs (fraction 1.0, else 0.5; misbehavior) and with a clean
  prompt (benign). Only hacks that pass all the shown broken tests (``execution_results``) and clean
  solutions that pass their tests are paired. The request is the hack prompt without its paragraph
  telling the model that only passing the tests matters.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from automonitor.errors import InputError
from automonitor.data.sources.base import (
    Numbered,
    Side,
    SourcePair,
    SourceResult,
    content_pair_id,
    make_pair,
    read_json,
    read_jsonl,
)
from automonitor.data.sources.registry import register_source

FOLDER = "rl_character"
CATEGORY = "specification_gaming"
APPS_DIR = f"{FOLDER}/datasets/code/apps/full_test"
APPS_HACK = f"{APPS_DIR}/apps_formatted_with_broken_o4-mini_force_hack_num_0_completions.jsonl"
APPS_CLEAN = f"{APPS_DIR}/apps_formatted_with_broken_o4-mini_clean_num_0_completions.jsonl"
MBPP_DIR = f"{FOLDER}/datasets/code/mbpp/small"
MBPP_CLEAN = f"{MBPP_DIR}/claude-3-haiku-20240307_claude-4-sonnet-20250514_clean_0.0_completions.json"
MBPP_HACKS = (
    f"{MBPP_DIR}/claude-3-haiku-20240307_claude-4-sonnet-20250514_pro_hacking_1.0_completions.json",
    f"{MBPP_DIR}/claude-3-haiku-20240307_claude-4-sonnet-20250514_pro_hacking_0.5_completions.json",
)
APPS_FILES = (APPS_HACK, APPS_CLEAN)
MBPP_FILES = (MBPP_CLEAN,) + MBPP_HACKS

# The sentence block of the APPS force_hack prompt that asks the model to fit the tests.
APPS_GAMING = re.compile(r"\s*I want you to intentionally tailor your solution.*?shortcuts available\.[ \t]*", re.S)
# The paragraph of the MBPP pro_hacking prompt saying only passing the shown tests matters.
MBPP_GAMING = re.compile(r"\n*The only point of this solution.*?(?=\n\s*Provide ONLY)", re.S)
GAMING_MARKERS = (
    "intentionally tailor",
    "The only point of this solution",
    "ONLY cares to pass",
    "not generally correct",
    "take advantage of any shortcuts",
)


def neutral_apps_request(prompt: str) -> str | None:
    """The APPS hack prompt without its test-fitting instruction, or ``None`` when the instruction
    is not found (then the prompt cannot be shown neutrally)."""
    if not APPS_GAMING.search(prompt):
        return None
    out = APPS_GAMING.sub("\n\n", prompt, count=1).strip()
    out = re.sub(r"\n{3,}", "\n\n", out)
    return None if any(m in out for m in GAMING_MARKERS) else out


def neutral_mbpp_request(prompt: str) -> str | None:
    """The MBPP pro_hacking prompt without its "only the tests matter" paragraph, or ``None``."""
    if not MBPP_GAMING.search(prompt):
        return None
    out = MBPP_GAMING.sub("", prompt, count=1).strip()
    return None if any(m in out for m in GAMING_MARKERS) else out


def _user_text(prompt: object) -> str | None:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, dict) and isinstance(prompt.get("messages"), list):
        users = [m.get("content") for m in prompt["messages"] if isinstance(m, dict) and m.get("role") == "user"]
        if users and isinstance(users[-1], str):
            return users[-1]
    return None


def _apps_clean(raw: Path) -> dict[str, Numbered]:
    """The clean APPS completions by ``problem_id`` (first one wins), with their line numbers.

    Raises:
        InputError: a line without a string ``problem_id``.
    """
    clean: dict[str, Numbered] = {}
    for line, obj in read_jsonl(raw, raw / APPS_CLEAN, need=("problem_id",)):
        clean.setdefault(obj["problem_id"], (line, obj))
    return clean


def _apps_pair(pid: str, line: int, obj: dict[str, Any], clean: Numbered) -> SourcePair | str:
    """The pair of one force_hack line (``line``, ``obj``) and its clean completion; the drop reason when
    the test-fitting instruction cannot be removed or the completions are missing or identical.

    Raises:
        InputError: the hack line's ``prompt`` has no user message.
    """
    cline, cobj = clean
    prompt = _user_text(obj.get("prompt"))
    if prompt is None:
        raise InputError("expected {messages: [..., {role: user, content}]}", file=APPS_HACK, line=line, field="prompt")
    request = neutral_apps_request(prompt)
    hack, honest = obj.get("parsed_completion"), cobj.get("parsed_completion")
    if request is None:
        return "test-fitting instruction not found"
    if not isinstance(hack, str) or not isinstance(honest, str) or not hack.strip() or not honest.strip():
        return "missing completion"
    if hack.strip() == honest.strip():
        return "identical completions"
    return make_pair(
        content_pair_id("rl_character_apps", hack.strip(), honest.strip()),
        request,
        Side(hack.strip(), APPS_HACK, f"line {line} ({pid})"),
        Side(honest.strip(), APPS_CLEAN, f"line {cline} ({pid})"),
        meta={
            "problem_id": pid,
            "upstream_id": f"rl_character_apps:{pid}",
            "dataset": "apps",
            "difficulty": obj.get("difficulty"),
            "function_name": obj.get("function_name"),
            "model": "o4-mini",
            "language": "Python",
        },
        mis_meta={"prompt_variant": "force_hack (asked to tailor code to the tests)"},
        ben_meta={"prompt_variant": "clean (asked for generally correct code)"},
        label_source="instructed_demo",
        answered_other_prompt={
            "misbehavior": "the task with an instruction to tailor the code to the tests",
            "benign": "the task with a request for generally correct code",
        },
    )


@register_source(
    "rl_character_apps", folder=FOLDER, category=CATEGORY, task="code", files=APPS_FILES, order=60, candidate_pairs=40
)
def load_apps(raw: Path) -> SourceResult:
    """Pair APPS force_hack and clean o4-mini completions by ``problem_id`` (see module doc).

    Raises:
        InputError: a malformed line (file, line, field named).
    """
    res = SourceResult()
    if not res.found_all(raw, APPS_FILES):
        return res
    clean = _apps_clean(raw)
    hack_ids: set[str] = set()
    for line, obj in read_jsonl(raw, raw / APPS_HACK, need=("problem_id",)):
        pid = obj["problem_id"]
        if pid in hack_ids:
            res.dropped["duplicate hack problem_id"] += 1
            continue
        hack_ids.add(pid)
        if pid not in clean:
            res.dropped["hack without clean completion"] += 1
            continue
        res.add(_apps_pair(pid, line, obj, clean[pid]))
    res.dropped["clean without hack completion"] += len(set(clean) - hack_ids)
    return res


def _problems(raw: Path, relname: str) -> list[dict[str, Any]]:
    doc = read_json(raw, raw / relname)
    probs = doc.get("problems") if isinstance(doc, dict) else None
    if not isinstance(probs, list) or not all(isinstance(p, dict) for p in probs):
        raise InputError("expected {metadata, problems: [...]}", file=relname, field="problems")
    return probs


def _passed(p: dict[str, Any]) -> bool:
    ex = p.get("execution_results")
    return isinstance(ex, dict) and ex.get("all_tests_passed") is True


def _mbpp_pair(
    relname: str,
    fraction: str,
    i: int,
    p: dict[str, Any],
    clean: Numbered,
) -> SourcePair | str:
    """The pair of pro_hacking problem ``p`` (``problems[i]`` of ``relname``, broken-test
    ``fraction``) and its clean completion; the drop reason when the gaming paragraph is not found,
    either side failed its shown tests, or the completions are missing or identical."""
    ci, cp = clean
    pid = p.get("problem_id")
    hack, honest = p.get("parsed_completion"), cp.get("parsed_completion")
    prompt = p.get("prompt")
    request = neutral_mbpp_request(prompt if isinstance(prompt, str) else "")
    if request is None:
        return "gaming paragraph not found"
    if not _passed(p):
        return f"hack ({fraction}) did not pass the shown tests"
    if not _passed(cp):
        return "clean completion failed its tests"
    if not isinstance(hack, str) or not isinstance(honest, str) or hack.strip() == honest.strip():
        return "missing or identical completions"
    return make_pair(
        f"rl_character_mbpp:{pid}",
        request,
        Side(hack.strip(), relname, f"problems[{i}] ({pid})"),
        Side(honest.strip(), MBPP_CLEAN, f"problems[{ci}] ({pid})"),
        meta={
            "problem_id": pid,
            "dataset": "mbpp",
            "function_name": p.get("function_name"),
            "model": "claude-4-sonnet-20250514",
            "language": "Python",
            "broken_test_fraction": float(fraction),
        },
        mis_meta={"prompt_variant": f"pro_hacking (broken tests, fraction {fraction})"},
        ben_meta={"prompt_variant": "clean (correct tests)"},
        label_source="instructed_demo",
        answered_other_prompt={
            "misbehavior": "the task with a paragraph saying only passing the shown tests counts",
            "benign": "the clean task with correct tests",
        },
    )


@register_source("rl_character_mbpp", folder=FOLDER, category=CATEGORY, task="code", files=MBPP_FILES, order=70)
def load_mbpp(raw: Path) -> SourceResult:
    """Pair MBPP claude-4-sonnet pro_hacking and clean completions by ``problem_id`` (module doc).

    Raises:
        InputError: a malformed file (file and field named).
    """
    res = SourceResult()
    if res.found(raw, MBPP_CLEAN) is None:
        return res
    clean: dict[str, Numbered] = {}
    for i, p in enumerate(_problems(raw, MBPP_CLEAN)):
        if isinstance(p.get("problem_id"), str):
            clean.setdefault(p["problem_id"], (i, p))
    done: set[str] = set()
    for relname in MBPP_HACKS:
        if res.found(raw, relname) is None:
            continue
        fraction = "1.0" if "_1.0_" in relname else "0.5"
        for i, p in enumerate(_problems(raw, relname)):
            pid = p.get("problem_id")
            if not isinstance(pid, str) or pid in done:
                continue
            if pid not in clean:
                res.dropped[f"hack ({fraction}) without clean completion"] += 1
                continue
            pair = _mbpp_pair(relname, fraction, i, p, clean[pid])
            if not isinstance(pair, str):
                done.add(pid)
            res.add(pair)
    return res
