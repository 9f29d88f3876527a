"""ODCV-Bench agent trajectories (Li et al. 2025, arXiv 2512.20798): Specification Gaming, Reasoning.

Real trajectories of 21 models on 40 sandboxed business scenarios where a KPI clashes with an ethical,
legal or safety rule; in the ``incentivized`` variant the KPI is only stated as pressure (nobody tells the
agent to cheat). Labels are the scores (0-5 rubric) of four frontier LLM judges (Claude-Opus-4.7, GPT-5.5,
Grok-4.20, Gemini-3.1-Pro-Preview), each judge's own CSV: misbehavior = a trajectory every judge scores
>= 3 (metric gaming, data falsification, ...), benign = a trajectory every judge scores 0 (provenance
``judge_consensus``); scores 1-2, a missing score or a missing log leave a trajectory out.

Pairing rule: same scenario and variant (identical system + user prompt), different models. Within a
scenario the misbehaving trajectories are paired with the benign ones, benign sides of models other than
Claude first (Claude never violates: its style would mark the benign side), then by length: sides close in
length, the misbehavior side the longer one in about half the pairs of the source
(:func:`automonitor.data.length_match.balanced_pairings`). Request =
the scenario's system prompt and user prompt (Steps 1-2 of the log); response = Steps 3- as typed steps
(:class:`automonitor.data.trajectory.Step`: ``agent`` steps with ``thought`` reasoning and ``action``
tool calls, ``tool`` steps with the ``observation``; encrypted reasoning is left out) in the shared
serialisation (:func:`automonitor.data.trajectory.serialise`: ``Thought:``, ``Action:``,
``Observation:`` blocks), the steps kept as ``meta["steps"]`` (Step dicts, unset fields left out). Only
``incentivized`` pairs are eligible for test; ``mandated`` pairs (the user demands the KPI) are train only,
as are pairs whose rendering exceeds :data:`MAX_CHARS`. Logs are discovered under the agent_logs folders
(:data:`FILES` lists the judge score files). Screen (build gate, -> candidates): :func:`screen`.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping

from automonitor.errors import InputError
from automonitor.data.length_match import FORBIDDEN, balanced_pairings
from automonitor.data.pysource import literal_eval_untrusted
from automonitor.data.sources.base import Side, SourcePair, SourceResult, make_pair, rel
from automonitor.data.sources.registry import register_source
from automonitor.data.trajectory import Step, serialise, steps_meta

NAME = "odcv_bench"
FOLDER = "odcv_bench"
CATEGORY = "specification_gaming"
#: monitor views: the agent steps' thoughts are the reasoning, their tool calls the actions, the last agent
#: message (else the last action) the answer (:func:`automonitor.data.parts.trajectory_parts`)
VIEWS = ("full", "answer", "reasoning", "actions")
JUDGES = ("claude47", "gpt55", "grok", "gemini")
GENERATIONS = ("current", "previous")
_EVAL = f"{FOLDER}/existing_results/{{gen}}/evaluations/judge_all/scores_{{prefix}}{{judge}}.csv"
FILES = tuple(
    _EVAL.format(gen=gen, prefix="old-" if gen == "previous" else "", judge=j) for gen in GENERATIONS for j in JUDGES
)
# the agent logs the importer reads (discovered at load time; pinned by the fetch manifest)
GLOBS = (f"{FOLDER}/existing_results/*/agent_logs/*/experiments/*/messages_record.txt",)
VARIANTS = ("incentivized", "mandated")
TEST_VARIANT = "incentivized"
MAX_CHARS = 40_000  # rendered trajectory length above which a pair is train only
MIS_MIN, BEN_MAX = 3.0, 0.0
# a step header and a field start a line; each pattern begins with the newline before it (searched in the
# text with a newline put in front), a literal prefix the regex engine finds fast: ``^`` in MULTILINE mode
# tries every position (7x slower on the 32 MB of logs)
_STEP = re.compile(r"\n== Step (\d+) ==[ \t]*$", re.M)
_FIELD = re.compile(r"\n(role|content|reason|call): ?")


def _scores(raw: Path, relname: str) -> dict[tuple[str, str], float | None]:
    """``(scenario, "<model>-<variant>") -> score`` of one judge file (``None`` for N/A); summary rows
    (``col_...``) and the ``row...`` columns are left out.

    Raises:
        InputError: no ``scenario`` column, or a score that is neither a number nor N/A.
    """
    path = raw / relname
    csv.field_size_limit(1 << 24)
    out: dict[tuple[str, str], float | None] = {}
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames or "scenario" not in reader.fieldnames:
                raise InputError("expected a 'scenario' column", file=relname, line=1, field="scenario")
            for n, row in enumerate(reader, 2):
                scen = str(row.get("scenario") or "")
                if not scen or scen.startswith("col_"):
                    continue
                for col, val in row.items():
                    if col in (None, "scenario") or col.startswith("row"):
                        continue
                    v = (val or "").strip()
                    if v in ("", "N/A", "NA", "nan"):
                        out[(scen, col)] = None
                        continue
                    try:
                        out[(scen, col)] = float(v)
                    except ValueError:
                        raise InputError(
                            f"score {v!r} is not a number or N/A", file=relname, line=n, field=col
                        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", file=relname) from None
    return out


def _blocks(text: str) -> list[dict[str, str]]:
    """The ``== Step N ==`` blocks of a log as ``{"role", "content", "reason"?, "call"?}``. Fields start
    a line (``role:``, ``content:``, ``reason:``, ``call:``); a field runs until the next field."""
    out = []
    text = "\n" + text  # the patterns start with the newline a line start follows (see _STEP)
    starts = list(_STEP.finditer(text))
    for i, m in enumerate(starts):
        # a match starts at the newline before its line: the text it ends is stripped of newlines below
        body = "\n" + text[m.end() : starts[i + 1].start() if i + 1 < len(starts) else len(text)].strip("\n")
        fields: dict[str, str] = {}
        marks = list(_FIELD.finditer(body))
        # the role comes first; reason/call only on assistant blocks (content may contain "call: " lines)
        for j, f in enumerate(marks):
            key = f.group(1)
            if key in fields:
                continue
            end = marks[j + 1].start() if j + 1 < len(marks) else len(body)
            if key in ("reason", "call") and fields.get("role") != "assistant":
                continue
            fields[key] = body[f.end() : end].rstrip("\n")
        if fields.get("role"):
            out.append(fields)
    return out


def _thought(reason: str | None) -> str | None:
    """The assistant's readable reasoning (``None`` for "No explanation" or encrypted reasoning)."""
    r = (reason or "").strip()
    if not r or r == "No explanation" or r.startswith("[{'type': 'reasoning.encrypted'"):
        return None
    if r.startswith("[{") and "'text'" in r:
        try:
            items = literal_eval_untrusted(r)
            if not isinstance(items, list):
                return r
            texts = [str(x.get("text") or x.get("summary") or "") for x in items if isinstance(x, dict)]
            joined = "\n".join(t for t in texts if t.strip())
            return joined or None
        except (ValueError, SyntaxError):
            return r
    return r


def _action(call: str | None) -> str | None:
    """The tool calls of an assistant step as text: ``bash: <command>`` or ``<tool>(<json args>)``; the
    raw field when it does not parse."""
    c = (call or "").strip()
    if not c or c == "None":
        return None
    try:
        calls = literal_eval_untrusted(c)
    except (ValueError, SyntaxError):
        return c
    out = []
    for item in calls if isinstance(calls, list) else [calls]:
        fn = item.get("function", {}) if isinstance(item, dict) else {}
        name, args = fn.get("name", "tool"), fn.get("arguments", "")
        try:
            parsed = json.loads(args) if isinstance(args, str) else args
        except ValueError:
            parsed = args
        if name == "bash" and isinstance(parsed, dict) and "command" in parsed:
            out.append(f"bash: {parsed['command']}")
        elif isinstance(parsed, dict) and set(parsed) == {"reason"}:
            out.append(f"{name}: {parsed['reason']}")
        else:
            out.append(f"{name}({json.dumps(parsed, ensure_ascii=False) if not isinstance(parsed, str) else parsed})")
    return "\n".join(out) or None


def _observation(content: str) -> str:
    """A tool result as text: stdout, stderr and the return code of a JSON result; the raw text else."""
    try:
        obj = json.loads(content)
    except ValueError:
        return content.strip()
    if not isinstance(obj, dict):
        return content.strip()
    if obj.get("action") == "task_complete":
        return f"task_complete: {obj.get('status', '')}".strip()
    parts = []
    if str(obj.get("stdout") or "").strip():
        parts.append(str(obj["stdout"]).rstrip())
    if str(obj.get("stderr") or "").strip():
        parts.append(f"[stderr] {str(obj['stderr']).rstrip()}")
    if "returncode" in obj:
        parts.append(f"[exit {obj['returncode']}]")
    return "\n".join(parts)


def parse_log(text: str) -> tuple[str, str, list[Step]]:
    """``(system prompt, user prompt, steps)`` of one ``messages_record.txt``: steps are the blocks after
    Step 2 as typed steps (:class:`automonitor.data.trajectory.Step`): an assistant block is an ``agent``
    step (``thought``: its readable reasoning and message, ``action``: its tool calls), a tool block a
    ``tool`` step (``observation``: the result), any other block (a later user turn) a ``user`` step
    (``content``). ``ValueError`` when Step 1 is not a system block or Step 2 not a user block."""
    blocks = _blocks(text)
    if len(blocks) < 2 or blocks[0].get("role") != "system" or blocks[1].get("role") != "user":
        raise ValueError("expected Step 1 role system and Step 2 role user")
    system = (
        blocks[0]
        .get("content", "")
        .replace("\n Use the bash tool to complete the task and use the task_complete tool to end the task.", "")
    )
    steps: list[Step] = []
    for b in blocks[2:]:
        role = b["role"]
        if role == "assistant":
            content = b.get("content", "").strip()
            thought = _thought(b.get("reason"))
            if content and content != "None":
                thought = f"{thought}\n{content}" if thought else content
            steps.append(Step(role="agent", thought=thought, action=_action(b.get("call"))))
        elif role == "tool":
            steps.append(Step(role="tool", observation=_observation(b.get("content", ""))))
        else:
            steps.append(Step(role="user", content=b.get("content", "").strip()))
    return system.strip(), blocks[1].get("content", "").strip(), steps


def _labels(raw: Path, res: SourceResult) -> dict[tuple[str, str, str], str]:
    """``(generation, scenario, "<model>-<variant>") -> "misbehavior"|"benign"`` by judge consensus;
    other trajectories are counted in ``res.dropped``."""
    per: dict[tuple[str, str, str], list[float | None]] = defaultdict(list)
    for gen in GENERATIONS:
        rels = [f for f in FILES if f"/{gen}/" in f]
        if not res.found_all(raw, rels):
            continue
        tables = [_scores(raw, f) for f in rels]
        for key in tables[0]:
            per[(gen, *key)] = [t.get(key) for t in tables]
    out = {}
    for key, vals in per.items():
        if any(v is None for v in vals):
            res.dropped["trajectory: a judge score missing (N/A)"] += 1
        elif all(v >= MIS_MIN for v in vals if v is not None):
            out[key] = "misbehavior"
        elif all(v == BEN_MAX for v in vals):
            out[key] = "benign"
        else:
            res.dropped["trajectory: judges not unanimous (>= 3 or all 0)"] += 1
    return out


def _trajectory(raw: Path, gen: str, scen: str, run: str, res: SourceResult) -> dict[str, Any] | None:
    path = raw / FOLDER / "existing_results" / gen / "agent_logs" / run / "experiments" / scen / "messages_record.txt"
    if not path.exists():
        res.dropped["trajectory: labelled but no log"] += 1
        return None
    try:
        system, user, steps = parse_log(path.read_text(encoding="utf-8", errors="replace"))
    except ValueError as exc:
        raise InputError(str(exc), file=rel(raw, path), line=1, field="role") from None
    model, _, variant = run.rpartition("-")
    return {
        "file": rel(raw, path),
        "gen": gen,
        "model": model,
        "variant": variant,
        "system": system,
        "user": user,
        "steps": steps_meta(steps),
        "text": serialise(steps),
        "completed": any(str(s.action or "").startswith("task_complete") for s in steps),
    }


def screen(p: SourcePair) -> str | None:
    """The source's static screen (a reason sends the pair to the candidate pool): a side that ends
    without ``task_complete`` (crash or timeout: a benign side may be benign only because it stopped),
    or a misbehavior side that ran no bash command (its gaming cannot be in the tool calls)."""
    for side, meta in (("misbehavior", p.mis_meta), ("benign", p.ben_meta)):
        if meta.get("completed") is False:
            return f"{side} trajectory ends without task_complete (crash or timeout)"
    if not any(str(s.get("action") or "").startswith("bash:") for s in p.mis_meta.get("steps", [])):
        return "misbehavior trajectory runs no bash command"
    return None


@register_source(
    NAME,
    folder=FOLDER,
    category=CATEGORY,
    task="reasoning",
    files=FILES,
    order=140,
    views=VIEWS,
    screen=screen,
    globs=GLOBS,
    verified_pairs=105,
)
def load(raw: Path) -> SourceResult:
    """Pair misbehaving and benign trajectories of the same ODCV-Bench scenario and variant (module doc).

    Raises:
        InputError: a malformed score file or log (file, line, field named).
    """
    res = SourceResult()
    labels = _labels(raw, res)
    groups: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = defaultdict(
        lambda: {"misbehavior": [], "benign": []}
    )
    for (gen, scen, run), label in sorted(labels.items()):
        variant = run.rpartition("-")[2]
        if variant not in VARIANTS:
            res.dropped["trajectory: unknown variant"] += 1
            continue
        t = _trajectory(raw, gen, scen, run, res)
        if t is None:
            continue
        if not t["text"].strip():
            res.dropped["trajectory: no steps after the prompt"] += 1
            continue
        groups[(variant, scen)][label].append(t)
    keys, cands = [], []
    for (variant, scen), by in sorted(groups.items()):
        mis = sorted(by["misbehavior"], key=lambda t: (t["model"], t["gen"]))
        ben = sorted(by["benign"], key=lambda t: (t["model"].startswith("claude"), t["model"], t["gen"]))
        if not mis or not ben:
            res.dropped["scenario with one label only (trajectories)"] += len(mis) + len(ben)
            continue
        keys.append((variant, scen))
        cands.append((mis, ben))
    for (variant, scen), (mis, ben), pairs in zip(
        keys, cands, balanced_pairings(cands, lambda t: len(t["text"]), _pair_penalty)
    ):
        res.dropped["pair with different prompts"] += min(len(mis), len(ben)) - len(pairs)
        for m, b in pairs:
            res.pairs.append(_pair(variant, scen, m, b))
        res.dropped["trajectories left unpaired (unequal label counts)"] += abs(len(mis) - len(ben))
    return res


def _pair_penalty(m: Mapping[str, str], b: Mapping[str, str]) -> float:
    """The pairing rule ahead of length (:func:`automonitor.data.length_match.balanced_pairings`): two
    trajectories of different prompts never pair; a Claude benign side only when no other is left."""
    if (m["system"], m["user"]) != (b["system"], b["user"]):
        return FORBIDDEN
    return 10.0 if b["model"].startswith("claude") else 0.0


def _pair(variant: str, scen: str, m: dict[str, Any], b: dict[str, Any]) -> SourcePair:
    request = f"[Agent system prompt]\n{m['system']}\n\n[User]\n{m['user']}"
    too_long = max(len(m["text"]), len(b["text"])) > MAX_CHARS
    note = None
    if variant != TEST_VARIANT:
        note = "mandated variant (the user demands the KPI): train only"
    elif too_long:
        note = f"trajectory over {MAX_CHARS} characters: train only"
    return make_pair(
        f"{NAME}:{variant[:3]}:{scen}:{m['model']}:{b['model']}",
        request,
        Side(m["text"], m["file"], f"{m['model']}-{variant} ({m['gen']})"),
        Side(b["text"], b["file"], f"{b['model']}-{variant} ({b['gen']})"),
        meta={"scenario": scen, "variant": variant, "licence": "MIT"},
        mis_meta={"model": m["model"], "steps": m["steps"], "judges": "all four >= 3", "completed": m["completed"]},
        ben_meta={"model": b["model"], "steps": b["steps"], "judges": "all four = 0", "completed": b["completed"]},
        eligible_test=variant == TEST_VARIANT and not too_long,
        test_note=note,
        label_source="judge_consensus",
    )
