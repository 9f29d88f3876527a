"""CoTFaithChecker cross-model hint runs on MMLU (DeepSeek-R1-Distill-Llama-8B vs -Qwen-14B): Sycophancy & Bias, QA.

Both models answered the *identical* cued MMLU prompt (question, options ``[ A ]``..``[ D ]``, the answer
instruction, then a hint naming an option: ``hints_<type>.json``, fixed per question and shared by both
runs), one chain of thought each. Cue types used: ``sycophancy`` (a person's suggestion: "I'm personally
leaning towards [ D ]") and ``unethical_information`` (leaked / restricted data naming an option): the
authority / opinion cues of the reference paper. ``induced_urgency`` (a pressure cue) is left out.

Pairing rule (cross-model, same cued request): for a question whose hint names a wrong option,
misbehavior = the response of the model whose answer is the hint option, benign = the other model's
response to the same question and cue type whose answer is the MMLU key. Both sides answered the prompt
the monitor sees (provenance ``by_construction``). ``meta.strict`` is true when the follower answered the
question correctly in its own no-hint run (``none/``): the cue flipped it; the build's side balance keeps
strict pairs first. ``meta.follower_uncued_answer`` is the follower's no-hint answer; when it is the cue's
option the cue is not shown to have changed anything and :func:`screen` sends the pair to the candidate
pool (a reading found those followers reason their way to the same wrong option, cue unmentioned). ``group`` = cue type / follower model.

Answers: Llama's from the repo's ``verification_with_500.json``; Qwen's the last ``[ X ]`` in the last 300
characters of its text after ``</think>`` (:func:`qwen_answer`; SOURCES.md's count also read the prompt's
hint there, which made a refusal a follower) (the Qwen completion exists only as sentence segments: :func:`qwen_text` joins
them, restoring the whitespace the segmenter dropped: one missing character is a space, more a blank
line). Request = the Llama prompt text (between ``<|begin_of_text|>user`` and ``assistant``).

Rendering, the same for both sides (the models format differently: Llama writes a long Markdown summary
after ``</think>``, Qwen a line): the reasoning before ``</think>`` with chat-template tokens removed and
whitespace normalised, then ``</think>`` and the parsed answer as ``Answer: [ X ]``; the text after
``</think>`` is left out (:func:`render`). A pair with a side that states only its answer (reasoning under
:data:`MIN_REASONING` characters) is left out: its length would tell the sides apart. Typed steps as the other chain-of-thought sources
(:func:`automonitor.data.sources.professor_cue.chain_steps`: reasoning = ``thought``, answer =
``content``) in ``meta["steps"]``; each side's model in its ``meta.model``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from automonitor.data.sources.base import (
    UNCUED_ANSWER,
    Numbered,
    Side,
    SourcePair,
    SourceResult,
    cue_not_shown,
    make_pair,
    read_json_list,
    rel,
)
from automonitor.data.sources.professor_cue import chain_steps
from automonitor.data.sources.registry import register_source
from automonitor.data.trajectory import steps_meta
from automonitor.errors import InputError

NAME = "cotfaithchecker_crossmodel_hints"
FOLDER = NAME
CATEGORY = "sycophancy_bias"
#: monitor views: the chain before ``</think>`` is the reasoning, ``Answer: [ X ]`` after it the answer
#: (:func:`render`; :func:`automonitor.data.parts.think_parts`)
VIEWS = ("full", "answer", "reasoning")
#: the cue types read (the authority / opinion cues); ``induced_urgency`` is not used
HINT_TYPES: tuple[str, ...] = ("sycophancy", "unethical_information")
LLAMA = "DeepSeek-R1-Distill-Llama-8B"
QWEN = "DeepSeek-R1-Distill-Qwen-14B"
MCQ = f"{FOLDER}/data/mmlu/input_mcq_data.json"
THINK_END = "</think>"
#: a side whose reasoning is shorter states only its answer: such a pair is left out (a length tell:
#: the other side reasons at length)
MIN_REASONING = 200
LLAMA_PREFIX = "<|begin_of_text|>user"
_ANSWER = re.compile(r"\[\s*([A-D])\s*\]")
# chat-template and special tokens of both families: <|...|>, <｜...｜>, <think>
_TEMPLATE_TOKEN = re.compile(r"<[|\uff5c][^<>]{0,60}?[|\uff5c]>|</?think>")


def hints_file(hint_type: str) -> str:
    """Path (relative to the raw dir) of the hints of one cue type."""
    return f"{FOLDER}/data/mmlu/hints_{hint_type}.json"


def llama_file(hint_type: str, kind: str = "completions") -> str:
    """Path of the Llama ``completions`` or ``verification`` file of one cue type (``none``: no hint)."""
    return f"{FOLDER}/data/mmlu/{LLAMA}/{hint_type}/{kind}_with_500.json"


def qwen_file(hint_type: str) -> str:
    """Path of the Qwen segmented completions of one cue type (``none``: no hint)."""
    return f"{FOLDER}/g_cot_cluster/outputs/mmlu/{QWEN}/unchecked_indices/segmented_completions_{hint_type}.json"


FILES: tuple[str, ...] = (
    MCQ,
    *(hints_file(t) for t in HINT_TYPES),
    *(llama_file(t, k) for t in HINT_TYPES for k in ("completions", "verification")),
    llama_file("none", "verification"),
    *(qwen_file(t) for t in (*HINT_TYPES, "none")),
)


def _where(raw: Path, path: Path, line: int, field: str) -> dict[str, Any]:
    return {"file": rel(raw, path), "line": line, "field": field}


def _need(obj: Any, key: str, kind: type | tuple[type, ...], raw: Path, path: Path, line: int) -> Any:
    """``obj[key]`` of the item at ``line`` when it has type ``kind``; else ``InputError`` naming file, line, field."""
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object", file=rel(raw, path), line=line)
    val = obj.get(key)
    if isinstance(val, bool) and kind is not bool or not isinstance(val, kind):
        raise InputError(f"missing or not {getattr(kind, '__name__', kind)}", **_where(raw, path, line, key))
    return val


def _by_qid(raw: Path, path: Path, fields: dict[str, type | tuple[type, ...]]) -> dict[int, Numbered]:
    """The items of a JSON-array file by ``question_id``: ``qid -> (line, item)``, each item checked to
    hold ``fields`` (name -> type).

    Raises:
        InputError: a malformed item or a repeated ``question_id`` (file, line, field).
    """
    out: dict[int, Numbered] = {}
    for line, obj in read_json_list(raw, path):
        qid = _need(obj, "question_id", int, raw, path, line)
        for key, kind in fields.items():
            _need(obj, key, kind, raw, path, line)
        if qid in out:
            raise InputError(
                f"question_id {qid} repeats (first at line {out[qid][0]})", **_where(raw, path, line, "question_id")
            )
        out[qid] = (line, obj)
    return out


def qwen_text(segments: list[dict[str, Any]]) -> str:
    """The Qwen completion from its contiguous sentence segments: each segment's text, then the whitespace
    the segmenter dropped (``end - start - len(text)`` characters: one is a space, more a blank line)."""
    parts = []
    for s in segments:
        parts.append(s["text"])
        gap = s["end"] - s["start"] - len(s["text"])
        if gap == 1:
            parts.append(" ")
        elif gap > 1:
            parts.append("\n\n")
    return "".join(parts)


def _check_segments(obj: dict[str, Any], raw: Path, path: Path, line: int) -> list[dict[str, Any]]:
    segs: list[dict[str, Any]] = _need(obj, "segments", list, raw, path, line)
    for k, s in enumerate(segs):
        for key, kind in (("text", str), ("start", int), ("end", int)):
            if not isinstance(s, dict) or not isinstance(s.get(key), kind) or isinstance(s.get(key), bool):
                raise InputError(f"missing or not {kind.__name__}", **_where(raw, path, line, f"segments[{k}].{key}"))
        if s["end"] < s["start"]:
            raise InputError("end before start", **_where(raw, path, line, f"segments[{k}].end"))
    return segs


def qwen_answer(text: str) -> str | None:
    """Qwen's answer: the last ``[ X ]`` in the last 300 characters of what it wrote after ``</think>``
    (the prompt left out: its hint and its "(eg [ A ], ... [ D ])" must not count), or ``None`` (no
    ``</think>``, or no letter there: e.g. a refusal)."""
    _head, sep, tail = qwen_reasoning(text).partition(THINK_END)
    hits = _ANSWER.findall(tail[-300:]) if sep else []
    return hits[-1] if hits else None


def clean_reasoning(text: str) -> str:
    """A chain of thought as shown: chat-template tokens removed, trailing spaces of lines and runs of
    blank lines folded, ends stripped (both models alike)."""
    text = _TEMPLATE_TOKEN.sub("", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def render(reasoning: str, answer: str) -> str:
    """The response shown for one side (module doc): reasoning, ``</think>``, ``Answer: [ X ]``."""
    return f"{clean_reasoning(reasoning)}\n{THINK_END}\n\nAnswer: [ {answer} ]"


def llama_split(completion: str, hint_text: str) -> tuple[str, str] | None:
    """``(request, response text)`` of a Llama completion: the prompt between ``<|begin_of_text|>user``
    and the ``assistant`` that follows the hint, and what follows it; ``None`` when the text is not laid
    out so (the hint must end the prompt)."""
    if not completion.startswith(LLAMA_PREFIX):
        return None
    at = completion.find(hint_text)
    end = at + len(hint_text)
    if at < 0 or not completion.startswith("assistant", end):
        return None
    return completion[len(LLAMA_PREFIX) : end].strip(), completion[end + len("assistant") :]


def qwen_reasoning(text: str) -> str:
    """The Qwen text without its prompt: files that include it (``User: ... Assistant:``) lose everything
    up to the ``Assistant:`` after the answer instruction."""
    if text.lstrip().startswith("User:"):
        at = text.find("Assistant:", text.find("Please answer with the letter"))
        if at >= 0:
            return text[at + len("Assistant:") :]
    return text


def _reasoning(text: str) -> str | None:
    head, sep, _tail = text.partition(THINK_END)
    return head if sep and head.strip() else None


def _no_hint_answers(raw: Path, res: SourceResult) -> tuple[dict[int, str], dict[int, str]] | None:
    """Each model's answer per question in its no-hint run (``None`` when a file is missing)."""
    lv, qn = res.found(raw, llama_file("none", "verification")), res.found(raw, qwen_file("none"))
    if lv is None or qn is None:
        return None
    llama = {q: o["verified_answer"] for q, (_l, o) in _by_qid(raw, lv, {"verified_answer": str}).items()}
    qwen = {}
    for q, (line, o) in _by_qid(raw, qn, {}).items():
        ans = qwen_answer(qwen_text(_check_segments(o, raw, qn, line)))
        if ans:
            qwen[q] = ans
    return llama, qwen


def _load_type(
    raw: Path,
    hint_type: str,
    mcq: dict[int, Numbered],
    none: tuple[dict[int, str], dict[int, str]],
    res: SourceResult,
) -> None:
    files = (hints_file(hint_type), llama_file(hint_type), llama_file(hint_type, "verification"), qwen_file(hint_type))
    hp, lc, lv, qs = (res.found(raw, f) for f in files)
    if hp is None or lc is None or lv is None or qs is None:
        return
    hints = _by_qid(raw, hp, {"hint_option": str, "is_correct_option": bool, "hint_text": str})
    comps = _by_qid(raw, lc, {"completion": str})
    verified = {q: o["verified_answer"] for q, (_l, o) in _by_qid(raw, lv, {"verified_answer": str}).items()}
    qwen = _by_qid(raw, qs, {})
    for qid in sorted(set(comps) | set(qwen)):
        if qid not in hints or qid not in mcq:
            res.dropped["question without its hint or MMLU item"] += 1
            continue
        hline, hint = hints[qid]
        if hint["is_correct_option"]:
            res.dropped["hint names the correct option"] += 1
            continue
        correct, cue = mcq[qid][1]["correct"], hint["hint_option"]
        if cue == correct:
            raise InputError(
                f"hint option {cue} is the MMLU key but is_correct_option is false",
                **_where(raw, hp, hline, "hint_option"),
            )
        if qid not in comps or qid not in qwen:
            res.dropped["a model has no completion for the question"] += 1
            continue
        cline, comp = comps[qid]
        split = llama_split(comp["completion"], hint["hint_text"])
        if split is None:
            raise InputError(
                "expected '<|begin_of_text|>user' + prompt ending in the hint text + 'assistant'",
                **_where(raw, lc, cline, "completion"),
            )
        request, llama_out = split
        qline, qobj = qwen[qid]
        qwen_full = qwen_text(_check_segments(qobj, raw, qs, qline))
        answers = {LLAMA: verified.get(qid), QWEN: qwen_answer(qwen_full)}
        texts = {LLAMA: (llama_out, lc, cline), QWEN: (qwen_reasoning(qwen_full), qs, qline)}
        follower = next((m for m, a in answers.items() if a == cue), None)
        other = QWEN if follower == LLAMA else LLAMA
        if follower is None or answers[other] != correct:
            res.dropped["not one model on the hint and the other on the key"] += 1
            continue
        mis_r, ben_r = _reasoning(texts[follower][0]), _reasoning(texts[other][0])
        if mis_r is None or ben_r is None:
            res.dropped["a side has no reasoning ending in </think>"] += 1
            continue
        if min(len(clean_reasoning(mis_r)), len(clean_reasoning(ben_r))) < MIN_REASONING:
            res.dropped[f"a side states only its answer (reasoning under {MIN_REASONING} characters)"] += 1
            continue
        mis, ben = render(mis_r, cue), render(ben_r, correct)
        uncued = none[0 if follower == LLAMA else 1].get(qid)
        strict = uncued == correct
        res.pairs.append(
            make_pair(
                f"{NAME}:{hint_type}:{qid}",
                request,
                Side(mis, rel(raw, texts[follower][1]), f"line {texts[follower][2]} question_id {qid}"),
                Side(ben, rel(raw, texts[other][1]), f"line {texts[other][2]} question_id {qid}"),
                meta={
                    "question_id": qid,
                    "cue_type": hint_type,
                    "cue": hint["hint_text"],
                    "cue_answer": cue,
                    "gt_answer": correct,
                    "dataset": "MMLU",
                    "models": [LLAMA, QWEN],
                    "follower_model": follower,
                    "strict": strict,
                    UNCUED_ANSWER: uncued,
                    "rendering": "reasoning before </think> (template tokens removed), then 'Answer: [ X ]' "
                    "with the parsed answer; each model's text after </think> left out (both sides alike)",
                    "licence": "MMLU MIT; CoTFaithChecker none stated (research use)",
                },
                mis_meta={"model": follower, "answer": cue, "steps": steps_meta(chain_steps(mis))},
                ben_meta={"model": other, "answer": correct, "steps": steps_meta(chain_steps(ben))},
                group=f"{hint_type}/{follower}",
                label_source="by_construction",
            )
        )


def screen(p: SourcePair) -> str | None:
    """The source's static screen (a reason sends the pair to the candidate pool): the follower gives the
    cue's option in its own no-hint run too (:func:`~automonitor.data.sources.base.cue_not_shown`)."""
    return cue_not_shown(p, "cue_answer")


@register_source(NAME, folder=FOLDER, category=CATEGORY, task="qa", files=FILES, order=170, screen=screen, views=VIEWS)
def load(raw: Path) -> SourceResult:
    """Cross-model pairs on the identical cued MMLU prompt, cue types :data:`HINT_TYPES` (module doc).

    Raises:
        InputError: a malformed file (file, line of the item, field named): not a JSON array, an item
            without its fields, a repeated ``question_id``, a Llama completion not laid out as
            ``<|begin_of_text|>user`` + prompt + hint + ``assistant``, a wrong hint flagged as correct.
    """
    res = SourceResult()
    mpath = res.found(raw, MCQ)
    none = _no_hint_answers(raw, res)
    if mpath is None or none is None:
        return res
    mcq = _by_qid(raw, mpath, {"correct": str, "question": str})
    for hint_type in HINT_TYPES:
        _load_type(raw, hint_type, mcq, none, res)
    return res
