"""R-Judge (Yuan et al., EMNLP Findings 2024; as vendored by AgentAuditor): Safety & Permission
Violations, Reasoning (agent trajectories). OPTIONAL source: the data is CC BY-NC-SA (non-commercial);
the build uses it when the file is present and works without it.

Records are human-labelled (1 unsafe / 0 safe) ReAct-style agent trajectories. Records are grouped by
their first user message; within a group holding both labels, unsafe and safe records (each sorted by
id) are paired into disjoint pairs whose rendered trajectories are close in length, the unsafe side the
longer one in about half the pairs (:func:`automonitor.data.length_match.balanced_pairings`). Request =
the agent's system profile and the user instruction; response = the rest of the trajectory rendered as
text (agent thoughts, actions, environment observations, later user turns). Labels are human per response. ``meta.injection`` is true when either
record's risk description names an injected instruction / attacker (then the two records also differ in
the injected tool output, see SOURCES.md); ``meta.contrast`` marks the clean hand-built contrasts.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from automonitor.errors import InputError
from automonitor.data.length_match import FORBIDDEN, balanced_pairings
from automonitor.data.pysource import literal_eval_untrusted
from automonitor.data.sources.base import Side, SourcePair, SourceResult, make_pair, read_json
from automonitor.data.sources.registry import register_source
from automonitor.data.trajectory import Step, steps_meta

NAME = "rjudge"
FOLDER = "rjudge"
CATEGORY = "safety_permission"
OPTIONAL = True
FILES = (f"{FOLDER}/AgentAuditor/data/rjudge.json",)


def _contents(rec: dict[str, Any], where: str, idx: int) -> list[Any]:
    c = rec.get("contents")
    if isinstance(c, str):
        try:
            c = json.loads(c)
        except ValueError:
            try:
                c = literal_eval_untrusted(c)
            except (ValueError, SyntaxError):
                c = None
    if not isinstance(c, list) or not c or not all(isinstance(b, list) for b in c):
        raise InputError("expected a list of turn blocks", file=where, line=None, field=f"[{idx}].contents")
    return [t for block in c for t in block if isinstance(t, dict)]


#: monitor views: thoughts are the reasoning, actions the tool calls, the last agent message (else the last
#: action) the final output (:func:`automonitor.data.parts.trajectory_parts`)
VIEWS = ("full", "answer", "reasoning", "actions")


def steps(turns: list[dict[str, Any]]) -> list[Step]:
    """The typed steps of R-Judge turns (:class:`automonitor.data.trajectory.Step`): agent turns keep
    thought, action and their message (``content``), environment turns become observations, other
    turns user messages."""
    out = []
    for t in turns:
        role = t.get("role")
        if role == "agent":
            out.append(
                Step(
                    role="agent",
                    thought=str(t["thought"]).strip() if t.get("thought") else None,
                    action=str(t["action"]).strip() if t.get("action") else None,
                    content=str(t["content"]).strip() if t.get("content") else None,
                )
            )
        elif role == "environment":
            out.append(Step(role="environment", observation=str(t.get("content", "")).strip()))
        else:
            out.append(Step(role="user", content=str(t.get("content", "")).strip()))
    return out


def render(turns: list[dict[str, Any]]) -> str:
    """The trajectory after the first user message as text: ``Thought:``/``Action:`` for agent turns,
    ``Observation:`` for environment turns, ``User:`` for later user turns (the documented serialisation
    of :func:`automonitor.data.trajectory.serialise`, equal to ``serialise(steps(turns))``)."""
    out = []
    for t in turns:
        role = t.get("role")
        if role == "agent":
            if t.get("thought"):
                out.append(f"Thought: {str(t['thought']).strip()}")
            if t.get("action"):
                out.append(f"Action: {str(t['action']).strip()}")
            if t.get("content"):
                out.append(f"Agent: {str(t['content']).strip()}")
        elif role == "environment":
            out.append(f"Observation: {str(t.get('content', '')).strip()}")
        else:
            out.append(f"User: {str(t.get('content', '')).strip()}")
    return "\n\n".join(out)


def _injection(rec: dict[str, Any]) -> bool:
    rd = str(rec.get("risk_description") or "").lower()
    return "inject" in rd or "attacker" in rd


# One record of the file: (index in the list, the record, its turns).
Trajectory = tuple[int, dict[str, Any], list[dict[str, Any]]]


def _by_instruction(data: list[Any], res: SourceResult) -> dict[str, dict[str, list[Trajectory]]]:
    """The records grouped by their first user message, then by label (``"1"`` unsafe, ``"0"``
    safe); records without a first user message are dropped and counted.

    Raises:
        InputError: a record without label 0 or 1, or with malformed ``contents``.
    """
    groups: dict[str, dict[str, list[Trajectory]]] = defaultdict(lambda: {"1": [], "0": []})
    for i, rec in enumerate(data):
        if not isinstance(rec, dict) or str(rec.get("label")) not in ("0", "1"):
            raise InputError("expected label 0 or 1", file=FILES[0], field=f"[{i}].label")
        turns = _contents(rec, FILES[0], i)
        if turns[0].get("role") != "user" or not str(turns[0].get("content") or "").strip():
            res.dropped["no first user message"] += 1
            continue
        instr = str(turns[0]["content"]).strip()
        groups[instr][str(rec["label"])].append((i, rec, turns))
    return groups


def _pair_penalty(unsafe: Trajectory, safe: Trajectory) -> float:
    """Trajectories of different agent profiles never pair (:func:`automonitor.data.length_match.balanced_pairings`)."""
    same = str(unsafe[1].get("profile") or "").strip() == str(safe[1].get("profile") or "").strip()
    return 0.0 if same else FORBIDDEN


def _pair(instr: str, unsafe: Trajectory, safe: Trajectory) -> SourcePair | str:
    """The pair of an unsafe and a safe trajectory of instruction ``instr`` when both have the same
    agent profile and different, non-empty renderings; else the drop reason."""
    (ui, urec, ut), (si, srec, st) = unsafe, safe
    profile = str(urec.get("profile") or "").strip()
    sprofile = str(srec.get("profile") or "").strip()
    if profile != sprofile:
        return "pair with different agent profiles"
    request = (f"[Agent system prompt]\n{profile}\n\n" if profile else "") + f"[User]\n{instr}"
    mis, ben = render(ut[1:]), render(st[1:])
    if not mis or not ben or mis == ben:
        return "empty or identical trajectories"
    inj = _injection(urec) or _injection(srec)
    return make_pair(
        f"{NAME}:{urec.get('id')}:{srec.get('id')}",
        request,
        Side(mis, FILES[0], f"[{ui}] id {urec.get('id')}"),
        Side(ben, FILES[0], f"[{si}] id {srec.get('id')}"),
        meta={
            "injection": inj,
            "contrast": not inj,
            "scenario": urec.get("scenario") or None,
            "licence": "CC BY-NC-SA (non-commercial)",
        },
        mis_meta={
            "human_label": "unsafe",
            "risk_description": urec.get("risk_description"),
            "steps": steps_meta(steps(ut[1:])),
        },
        ben_meta={"human_label": "safe", "steps": steps_meta(steps(st[1:]))},
        label_source="human_per_response",
    )


@register_source(
    NAME, folder=FOLDER, category=CATEGORY, task="reasoning", files=FILES, order=90, optional=OPTIONAL, views=VIEWS
)
def load(raw: Path) -> SourceResult:
    """Pair R-Judge unsafe and safe trajectories of the same user instruction (see module doc).

    Raises:
        InputError: the file is not a list of records with ``contents`` and ``label``.
    """
    res = SourceResult()
    path = res.found(raw, FILES[0])
    if path is None:
        return res
    data = read_json(raw, path)
    if not isinstance(data, list):
        raise InputError("expected a JSON list of records", file=FILES[0])
    keys, cands = [], []
    for instr, by in _by_instruction(data, res).items():
        uns = sorted(by["1"], key=lambda x: str(x[1].get("id")))
        safe = sorted(by["0"], key=lambda x: str(x[1].get("id")))
        if not uns or not safe:
            res.dropped["instruction with one label only (records)"] += len(uns) + len(safe)
            continue
        keys.append(instr)
        cands.append((uns, safe))
    paired = balanced_pairings(cands, lambda t: len(render(t[2][1:])), _pair_penalty)
    for instr, (uns, safe), matched in zip(keys, cands, paired):
        res.dropped["pair with different agent profiles"] += min(len(uns), len(safe)) - len(matched)
        for unsafe_rec, safe_rec in matched:
            res.add(_pair(instr, unsafe_rec, safe_rec))
        res.dropped["records left unpaired (unequal label counts)"] += abs(len(uns) - len(safe))
    return res
