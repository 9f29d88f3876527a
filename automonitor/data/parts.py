"""The parts of a response: which characters of ``Sample.response`` are reasoning, tool calls, tool
output, the final answer or other context; what the monitor views (:mod:`automonitor.data.monitor_views`)
are cut from.

A :class:`Part` is a half-open range ``[start, end)`` of character offsets into the stored response with
a kind (listed in its docstring). Parts never overlap and are in text order; text between parts (blank lines,
tags such as ``<thinking>``) belongs to no part. Three splitters cover every source:

- :func:`trajectory_parts`: a response in the shared step serialisation
  (:mod:`automonitor.data.trajectory`): each ``"\\n\\n"`` block by its label: ``Thought:`` -> ``reasoning``,
  ``Action:`` -> ``action``, ``Observation:`` -> ``observation``, ``User:``/``Human:`` -> ``context``,
  ``Agent:``/``Assistant:`` (and the unlabelled opening answer of a chat) -> ``message``; an unlabelled
  block continues the previous one. The final output (kind ``answer``) is the *last* ``Agent:`` /
  ``Assistant:`` message when there is one, else the last ``Action:`` (the call that ends the episode,
  e.g. ODCV-Bench's ``task_complete``); earlier messages stay ``message``.
- :func:`think_parts`: reasoning in tags: each ``<think>...</think>`` / ``<thinking>...</thinking>``
  block's inside is ``reasoning`` (a block the text never closes runs to the end), and a text with a
  closing tag but no opening one (a chain of thought cut before ``</think>``) has everything before it as
  reasoning; the rest of the text, stripped, is the ``answer``.
- :func:`final_sentence_parts`: a chain of thought ending in a final-answer sentence (``The best answer
  is: (X)``, Turpin et al.): the text before the last such sentence is ``reasoning``, that sentence to the
  end the ``answer``; no such sentence: the whole text is ``answer``-less (no parts).

:func:`generic_parts` picks one: a trajectory (>= 2 labelled steps), else tags, else the whole stripped
response as the ``answer`` (a plain response is its own final output). A source may register its own
splitter (:class:`automonitor.data.sources.registry.Source.parts`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from automonitor.data.intervals import trimmed
from automonitor.data.trajectory import step_ranges

_KIND_OF_LABEL = {
    "Thought:": "reasoning",
    "Action:": "action",
    "Observation:": "observation",
    "User:": "context",
    "Human:": "context",
    "Agent:": "message",
    "Assistant:": "message",
}
_OPEN = re.compile(r"<(think|thinking)>")
_CLOSE = re.compile(r"</(think|thinking)>")
_FINAL = re.compile(r"(?:the )?best answer is:?\s*\(?[A-Z]\)?", re.I)


@dataclass(frozen=True)
class Part:
    """``response[start:end]`` is of kind ``kind``: ``reasoning`` (chain of thought, agent thoughts), ``action``
    (a tool call), ``observation`` (a tool's output), ``message`` (a message of the agent that is not its final
    one), ``answer`` (the final output: code, chosen option, final report) or ``context`` (user turns)."""

    kind: str
    start: int
    end: int


PartsFn = Callable[[str, dict[str, Any]], list[Part]]


def _part(text: str, kind: str, a: int, b: int) -> list[Part]:
    a, b = trimmed(text, a, b)
    return [Part(kind, a, b)] if b > a else []


def trajectory_parts(text: str) -> list[Part]:
    """The parts of a serialised trajectory (module doc); ``[]`` when ``text`` is not one."""
    if not step_ranges(text):
        return []
    blocks: list[list[Any]] = []  # [kind, start, end]
    pos = 0
    for block in text.split("\n\n"):
        label = next((lab for lab in _KIND_OF_LABEL if block.startswith(lab)), None)
        end = pos + len(block)
        if label is not None:
            blocks.append([_KIND_OF_LABEL[label], pos, end])
        elif blocks:
            blocks[-1][2] = end  # an unlabelled block continues the previous one
        else:
            blocks.append(["message", pos, end])  # a chat's unlabelled opening answer
        pos = end + 2
    last = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i][0] == "message"), None)
    if last is None:
        last = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i][0] == "action"), None)
    if last is not None:
        blocks[last][0] = "answer"
    return [p for k, a, b in blocks for p in _part(text, k, a, b)]


def think_parts(text: str) -> list[Part]:
    """The parts of a response with its reasoning in ``<think>``/``<thinking>`` tags (module doc);
    ``[]`` when it has no tag."""
    reasoning: list[tuple[int, int]] = []  # inside offsets
    outside: list[tuple[int, int]] = []
    first_close = _CLOSE.search(text)
    first_open = _OPEN.search(text)
    if first_open is None and first_close is None:
        return []
    pos = 0
    if first_close is not None and (first_open is None or first_close.start() < first_open.start()):
        reasoning.append((0, first_close.start()))  # the chain opens without its tag
        pos = first_close.end()
    while (m := _OPEN.search(text, pos)) is not None:
        outside.append((pos, m.start()))
        c = _CLOSE.search(text, m.end())
        reasoning.append((m.end(), len(text) if c is None else c.start()))
        pos = len(text) if c is None else c.end()
    outside.append((pos, len(text)))
    parts = [p for a, b in reasoning for p in _part(text, "reasoning", a, b)]
    parts += [p for a, b in outside for p in _part(text, "answer", a, b)]
    return sorted(parts, key=lambda p: p.start)


def final_sentence_parts(text: str) -> list[Part]:
    """Reasoning then a final ``best answer is (X)`` sentence (module doc); ``[]`` without one."""
    hits = list(_FINAL.finditer(text))
    if not hits:
        return []
    cut = hits[-1].start()
    # the answer starts at the beginning of the sentence holding the last hit
    sent = max(text.rfind(". ", 0, cut), text.rfind("\n", 0, cut))
    start = sent + 1 if sent >= 0 else 0
    return _part(text, "reasoning", 0, start) + _part(text, "answer", start, len(text))


def generic_parts(text: str, meta: dict[str, Any] | None = None) -> list[Part]:
    """The parts of any response (module doc): trajectory, else tags, else the whole response as answer."""
    return trajectory_parts(text) or think_parts(text) or _part(text, "answer", 0, len(text))


__all__ = [
    "Part",
    "PartsFn",
    "final_sentence_parts",
    "generic_parts",
    "think_parts",
    "trajectory_parts",
]
