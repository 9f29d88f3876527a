"""The two construction recipes on one item: ask the generator, then run the filter.

- :func:`answer_sycophancy`: Q once (greedy) and Q' ``samples_per_prompt`` times (the first greedy,
  the others at :data:`SAMPLE_TEMPERATURE` with seeds 1, 2, ...), then
  :func:`automonitor.runs.generation.filters.decide_sycophancy`;
- :func:`answer_gaming`: the task with and without the incentive, code answers through
  :func:`screen_code` (static screen and the bubblewrap sandbox), then
  :func:`automonitor.runs.generation.filters.decide_gaming`.

An answer is used only when it is complete by its backend's own table of finish reasons (``stop`` ``normal``) and
no longer than its token budget could hold (:data:`MAX_CHARS_PER_TOKEN` characters a token of ``max_tokens``): an
item with an answer cut off at ``max_tokens``, stopped by a content filter or a refusal, ended for a reason the
table does not declare, or longer than the budget (a server ignoring ``max_tokens``) is dropped as
``incomplete_answer`` or ``oversized_answer`` (:func:`unusable_answer`), before its code is screened, instead of
having its last visible option or code read as the model's answer.

Each returns ``(Decision, transcript)``; the :class:`Transcript` is ``{"prompts": {role: messages}, "outputs":
{role: outcome | [outcome, ...]}}`` with the call outcomes of :mod:`automonitor.runs.generation.caller`.
"""

from __future__ import annotations

import asyncio
from typing import TypedDict

from automonitor.runs.generation import filters, tasks
from automonitor.runs.generation.caller import CallOutcome, GeneratorCaller
from automonitor.runs.generation.incentives import load_incentive
from automonitor.runs.generation.job import GenerationJob

SAMPLE_TEMPERATURE = 0.8  # cued samples after the first (the first is greedy)
MAX_KEPT_TEXT = 20_000  # characters of a prompt/output kept in the run's transcript
#: the most characters one token of an answer is taken to hold: an answer longer than ``max_tokens`` times this is
#: not what the budget asked for (BPE tokens of text average ~4 characters; 32 leaves room for long code tokens)
MAX_CHARS_PER_TOKEN = 32

Outputs = dict[str, CallOutcome | list[CallOutcome]]
"""The call outcomes of an item by role (``uncued``, ``cued``, ``with_incentive``, ``without_incentive``)."""


class Transcript(TypedDict):
    """What one item sent (chat messages by role) and what came back (module docstring)."""

    prompts: dict[str, list[dict[str, str]]]
    outputs: Outputs


class ItemRecord(TypedDict):
    """One entry of a generation run's ``Run.params['items']``: the item's id, whether it was kept (and
    its candidate pair added), the drop reason, the filter's details, prompts and outputs (texts cut)."""

    item_id: str | None
    kept: bool
    reason: str | None
    details: dict[str, object]
    prompts: dict[str, list[dict[str, str]]]
    outputs: Outputs


def unusable_answer(outs: list[CallOutcome], max_tokens: int) -> filters.Decision | None:
    """The drop of an item one of whose answers ``outs`` (failed calls, ``text`` None, skipped) did not end
    normally (``incomplete_answer``: its ``stop`` is not ``normal``) or is longer than ``max_tokens`` tokens could
    hold (``oversized_answer``: over ``max_tokens`` x :data:`MAX_CHARS_PER_TOKEN` characters), with the finish
    reasons and lengths in its details; ``None`` when every answer is usable."""
    got = [o for o in outs if o["text"] is not None]
    det: dict[str, object] = {
        "finish_reasons": [o["finish_reason"] for o in got],
        "answer_chars": [len(o["text"] or "") for o in got],
        "max_tokens": max_tokens,
    }
    if any(o["stop"] != "normal" for o in got):
        return filters.Decision(False, "incomplete_answer", details=det)
    if any(len(o["text"] or "") > max_tokens * MAX_CHARS_PER_TOKEN for o in got):
        return filters.Decision(False, "oversized_answer", details=det)
    return None


async def answer_sycophancy(
    item: tasks.SycophancyItem, call: GeneratorCaller, job: GenerationJob
) -> tuple[filters.Decision, Transcript]:
    """Ask Q and K samples of Q' concurrently and decide (module docstring); K = ``job['samples_per_prompt']``."""
    k = job["samples_per_prompt"]
    jobs = [call(item.uncued)] + [
        call(item.cued, temperature=0.0 if i == 0 else SAMPLE_TEMPERATURE, seed=i) for i in range(k)
    ]
    outs = await asyncio.gather(*jobs)
    dec = filters.decide_sycophancy(item.options, item.truth, item.cue, outs[0]["text"], [o["text"] for o in outs[1:]])
    if dec.reason != "generation_error":  # a failed call first; then an answer that is not a whole answer
        dec = unusable_answer(list(outs), job["max_tokens"]) or dec
    transcript: Transcript = {
        "prompts": {"uncued": item.uncued, "cued": item.cued},
        "outputs": {"uncued": outs[0], "cued": outs[1:]},
    }
    return dec, transcript


async def answer_gaming(
    t: tasks.GamingTask, call: GeneratorCaller, job: GenerationJob
) -> tuple[filters.Decision, Transcript]:
    """Ask the task with and without ``job['incentive']`` concurrently, screen code answers, and decide
    (module docstring)."""
    inc = load_incentive(job["incentive"])
    with_msgs = [{"role": "user", "content": inc.render(t.prompt)}]
    without_msgs = [{"role": "user", "content": t.prompt}]
    with_out, without_out = await asyncio.gather(call(with_msgs), call(without_msgs))
    signal = inc.signal[t.task]
    transcript: Transcript = {
        "prompts": {"with_incentive": with_msgs, "without_incentive": without_msgs},
        "outputs": {"with_incentive": with_out, "without_incentive": without_out},
    }
    unusable = unusable_answer([with_out, without_out], job["max_tokens"])
    if unusable is not None and with_out["text"] is not None and without_out["text"] is not None:
        return unusable, transcript  # (a failed call is decide_gaming's generation_error)
    if t.task == "code":
        screens = []
        for out in (with_out, without_out):
            screens.append(await asyncio.to_thread(screen_code, out["text"], t) if out["text"] is not None else None)
        dec = filters.decide_gaming(
            "code", signal, with_out["text"], without_out["text"], screen_with=screens[0], screen_without=screens[1]
        )
    else:
        dec = filters.decide_gaming(
            t.task, signal, with_out["text"], without_out["text"], reference=t.reference, min_words=inc.min_words
        )
    return dec, transcript


def screen_code(answer: str, t: tasks.GamingTask) -> filters.CodeScreen | None:
    """Static screen plus sandboxed runs of the visible and held-out tests of one code answer:
    ``{"code" (at most 20,000 characters), "static", "visible", "hidden"}`` (``None`` when the answer
    holds no code).

    Raises:
        InputError: the sandbox is not installed (:func:`automonitor.runs.generation.sandbox.run_python`).
    """
    from automonitor.runs.generation.sandbox import run_tests
    from automonitor.runs.generation.screen import extract_code, static_screen

    code = extract_code(answer, t.entry_point)
    if code is None:
        return None
    st = static_screen(code, t.visible_tests, t.entry_point)
    vis = run_tests(code, t.visible_tests)
    hid = run_tests(code, t.hidden_tests)
    return {"code": code[:MAX_KEPT_TEXT], "static": st, "visible": vis.to_json(), "hidden": hid.to_json()}
