"""Trajectories as first-class samples: typed agent / multi-turn steps, the one serialisation
monitors receive, and the cut in the middle when a trajectory is over a backend's budget.

Steps are stored in ``Sample.meta["steps"]`` as a list of :class:`Step` dicts (``role``, ``thought``,
``action``, ``observation``, optional ``content``), the convention shared with the other importers.

**The serialisation** (what ``Sample.response`` holds and monitors are shown, :func:`serialise`): one
block per field, blocks separated by a blank line (``"\\n\\n"``), each block starting with its label:

- agent steps: ``Thought: ...``, ``Action: ...``, ``Agent: ...`` (its reply ``content``), in that order,
  and ``Observation: ...`` when the step carries the tool result;
- environment / tool steps: ``Observation: ...``;
- user steps: ``User: ...``; chat turns may also use ``Human: ...`` / ``Assistant: ...``.

A new step starts at every ``Thought:``, ``User:``, ``Human:``, ``Assistant:``, ``Agent:`` not preceded
by its step's ``Thought:``/``Action:``, and at every ``Observation:`` (a tool result is its own step);
a block without a label continues the previous one. A chat whose first block is unlabelled but
that has ``Assistant:`` turns later (the are-you-sure chains: answer, ``User: Are you sure?``,
``Assistant: ...``) starts with that answer as an assistant step. :func:`step_ranges` finds the steps of a serialised
text again, so a gold span can point at a step (``GoldSpan.step``) and :func:`cut_middle` can cut whole
steps. The R-Judge renderer (:func:`automonitor.data.sources.rjudge.render`) writes exactly this format.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

LABELS: tuple[str, ...] = ("Thought:", "Action:", "Agent:", "Observation:", "User:", "Human:", "Assistant:")
CUT_MARKER = "[... {n} step(s) cut: steps {a}-{b} of {total} ...]"


class Step(BaseModel):
    """One step of a trajectory: who acted (``role``: ``agent`` | ``environment`` | ``user`` |
    ``assistant`` | ``human``) and what: ``thought``, ``action`` (tool call), ``observation`` (tool
    output), ``content`` (a message). Unset fields are ``None``."""

    model_config = ConfigDict(extra="forbid")
    role: str = Field(description="who acted: agent, environment, user, assistant or human")
    thought: str | None = Field(default=None, description="the actor's reasoning")
    action: str | None = Field(default=None, description="a tool call")
    observation: str | None = Field(default=None, description="a tool's output")
    content: str | None = Field(default=None, description="a message")


def steps_from_meta(meta: dict[str, Any] | None) -> list[Step] | None:
    """The typed steps of a sample's ``meta["steps"]`` (``None`` when absent or malformed)."""
    raw = (meta or {}).get("steps")
    if not isinstance(raw, list) or not raw:
        return None
    try:
        return [Step.model_validate(s) for s in raw]
    except ValueError:
        return None


def steps_meta(steps: Iterable[Step]) -> list[dict[str, Any]]:
    """``steps`` as a sample's ``meta["steps"]`` stores them (unset fields left out; read back with
    :func:`steps_from_meta`)."""
    return [s.model_dump(exclude_none=True) for s in steps]


def _blocks(step: Step) -> list[str]:
    if step.role in ("environment", "tool"):
        text = step.observation if step.observation is not None else step.content
        return [f"Observation: {(text or '').strip()}"]
    if step.role == "user":
        return [f"User: {(step.content or step.thought or '').strip()}"]
    if step.role in ("human", "assistant"):
        return [f"{step.role.capitalize()}: {(step.content or '').strip()}"]
    said = (
        ("Thought", step.thought),
        ("Action", step.action),
        ("Agent", step.content),
        ("Observation", step.observation),
    )
    return [f"{label}: {text.strip()}" for label, text in said if text]


def serialise(steps: Sequence[Step]) -> str:
    """The documented serialisation of ``steps`` (module doc)."""
    return "\n\n".join(b for s in steps for b in _blocks(s))


def step_ranges(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` character ranges of the steps of a serialised trajectory, in order (module doc);
    ``[]`` when ``text`` does not start with a label or has fewer than 2 labelled blocks."""
    starts: list[tuple[int, str]] = []
    pos = 0
    for block in text.split("\n\n"):
        lab = next((x for x in LABELS if block.startswith(x)), None)
        if lab is not None:
            starts.append((pos, lab))
        pos += len(block) + 2
    if starts and starts[0][0] != 0 and any(lab == "Assistant:" for _, lab in starts):
        starts.insert(0, (0, "Assistant:"))  # a chat that opens with the assistant's unlabelled answer
    if not starts or starts[0][0] != 0 or len(starts) < 2:
        return []
    bounds: list[int] = []
    prev: str | None = None
    for off, lab in starts:
        continues = (lab == "Action:" and prev == "Thought:") or (lab == "Agent:" and prev in ("Thought:", "Action:"))
        if not continues:
            bounds.append(off)
        prev = lab
    return list(zip(bounds, [b - 2 for b in bounds[1:]] + [len(text)]))


def cut_middle(
    text: str, budget: int | None, size: Callable[[str], int] = len, *, measure: str = "chars"
) -> tuple[str, dict[str, Any] | None]:
    """``text`` within ``budget`` by dropping whole steps from the middle of a trajectory.

    ``size(piece) -> int`` measures a piece of text in the budget's unit (``len``: characters, the
    default; the llama.cpp backend passes its tokenizer's token count with ``measure="tokens"``). The
    first and the last step are always kept; steps are added alternately from the front and the back
    while they fit (each step's size measured once, the blank-line joins and :data:`CUT_MARKER` counted
    too); the dropped run is replaced by the marker. Because a tokenizer need not be additive, the
    assembled text is measured again and more middle steps are dropped while it still exceeds the budget.

    Returns ``(text, info)``: ``info`` is ``None`` when nothing was cut or ``text`` is not a trajectory of
    >= 3 steps, or when even the first and last steps alone exceed the budget (then the caller cuts
    characters or tokens), else ``{"unit": "steps", "measure": measure, "original": size(text), "kept":
    size of the kept steps, "steps_total": n, "steps_cut": [a, b]}`` (``a``-``b`` 1-based, inclusive).
    """
    if budget is None or budget <= 0:
        return text, None
    original = size(text)
    if original <= budget:
        return text, None
    ranges = step_ranges(text)
    n = len(ranges)
    if n < 3:
        return text, None
    piece = [text[s:e] for s, e in ranges]
    piece_size = [size(p) for p in piece]
    join = size("\n\n")

    def marker(f: list[int], b: list[int]) -> str:
        return CUT_MARKER.format(n=min(b) - f[-1] - 1, a=f[-1] + 2, b=min(b), total=n)

    def estimate(f: list[int], b: list[int]) -> int:
        kept = f + b
        return sum(piece_size[i] for i in kept) + size(marker(f, b)) + join * len(kept)

    def assemble(f: list[int], b: list[int]) -> str:
        return "\n\n".join([piece[i] for i in f] + [marker(f, b)] + [piece[i] for i in sorted(b)])

    front, back = [0], [n - 1]
    if estimate(front, back) > budget:
        return text, None
    while front[-1] + 1 < min(back) - 1:
        grew = False
        for side in ("front", "back"):
            if front[-1] + 1 >= min(back) - 1:
                break
            cand_f = front + [front[-1] + 1] if side == "front" else front
            cand_b = back if side == "front" else back + [min(back) - 1]
            if estimate(cand_f, cand_b) <= budget:
                front, back = cand_f, cand_b
                grew = True
        if not grew:
            break
    if front[-1] + 1 >= min(back):
        return text, None
    out = assemble(front, back)
    while size(out) > budget:  # a non-additive size (tokens): drop one more middle step, back first
        if len(back) > 1:
            back.remove(min(back))
        elif len(front) > 1:
            front.pop()
        else:
            return text, None
        out = assemble(front, back)
    a, b = front[-1] + 2, min(back)  # 1-based first and last cut step
    kept = sum(piece_size[i] for i in front + back)
    info = {"unit": "steps", "measure": measure, "original": original, "kept": kept, "steps_total": n}
    return out, {**info, "steps_cut": [a, b]}


#: Text a response may hold around the steps' own texts: the serialisation's block labels, whitespace and
#: a reasoning model's ``<think>``/``</think>`` tags (the boundary between a step's thought and its answer).
_FRAME = re.compile(r"(?:" + "|".join(re.escape(lab) for lab in LABELS) + r"|</?think>|\s)+")


def step_texts(step: Step) -> list[str]:
    """The non-blank texts of one step's fields (``thought``, ``action``, ``content``, ``observation``),
    stripped, in that order."""
    vals = [step.thought, step.action, step.content, step.observation]
    return [v.strip() for v in vals if v is not None and v.strip()]


def steps_mismatch(response: str, steps: Sequence[Step], request: str = "") -> str | None:
    """Why typed ``steps`` do not describe ``response`` (the text the monitor judges), or ``None`` when
    they do. They do when each step, in its serialisation (:func:`serialise`), else its texts
    (:func:`step_texts`), is found in ``response`` in order, from the last step back (each before the
    next one's), except that a first run of steps may be the
    conversation before the response and then is in ``request``; and the response holds nothing else
    than those texts, the serialisation's labels, whitespace and ``<think>`` tags. So what humans see
    from the steps is what the monitor saw: no step text missing, no text of the response outside every
    step.

    Returns:
        A one-line description of the first mismatch (with the step's index or the character offset),
        or ``None``.
    """
    covered: list[tuple[int, int]] = []
    cursor = len(response)
    in_request = False
    for i in range(len(steps) - 1, -1, -1):
        block = "\n\n".join(_blocks(steps[i]))
        k = -1 if in_request or not step_texts(steps[i]) else response.rfind(block, 0, cursor)
        if k >= 0:  # the step in the documented serialisation, labels included
            covered.append((k, k + len(block)))
            cursor = k
            continue
        for piece in reversed(step_texts(steps[i])):
            k = -1 if in_request else response.rfind(piece, 0, cursor)
            if k < 0:
                if covered and piece in request:
                    in_request = True  # this step and the ones before it: the conversation so far
                    continue
                return f"the text of step {i} is not in the response (nor, as an earlier turn, in the request)"
            covered.append((k, k + len(piece)))
            cursor = k
    pos = 0
    for a, b in sorted(covered) + [(len(response), len(response))]:
        gap = response[pos:a]
        if gap and not _FRAME.fullmatch(gap):
            return f"the response holds text outside every step at character {pos}"
        pos = max(pos, b)
    return None
