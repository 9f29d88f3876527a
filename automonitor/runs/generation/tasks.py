"""Prompts for the generators, read from the public raw sources (``$AUTOMONITOR_RAW``).

:func:`sycophancy_items`: ``bct_truthfulqa_cues`` (QA; cue ``suggested_answer`` or ``are_you_sure``) and
``turpin_bbh`` (Reasoning; 13 BIG-Bench Hard tasks with Turpin et al.'s cue) and ``mmlu_moral_scenarios``
(QA; MMLU moral scenarios with the "Stanford Professor" cue of ``professor_cue`` on a wrong option chosen by
a hash of the question; the ``val`` and ``dev`` CSVs only, see :data:`MMLU_SPLITS`); questions whose
suggested option is the right one are skipped. :func:`gaming_tasks`: ``truthfulqa`` (QA), ``mbpp`` and ``humaneval``
(Code; some asserts shown, the rest held out) and ``dfir`` (Reasoning). Items come in file order (BBH tasks
and DFIR templates interleaved round-robin), so ``--limit N`` is reproducible. Sources:
docs/how-to/generating-pairs.md.
"""

from __future__ import annotations

import csv
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, TypeVar, TypedDict

from automonitor.errors import InputError
from automonitor.runs.generation.answers import parse_options

SYCOPHANCY_SOURCES = ("bct_truthfulqa_cues", "turpin_bbh", "mmlu_moral_scenarios")
#: The MMLU moral-scenario CSVs ``mmlu_moral_scenarios`` reads, in this order (100 + 5 questions). The
#: ``test`` CSV (895) is left out: the sources of the build's Sycophancy & Bias / QA test pairs hold 31 of
#: its questions (``professor_cue`` 5, ``cotfaithchecker_crossmodel_hints`` 26; none of ``val`` or ``dev``),
#: so a generated pair on it could repeat a test question; docs/how-to/generating-pairs.md.
MMLU_SPLITS = ("val", "dev")
MMLU_LETTERS = "ABCD"
CUES = ("suggested_answer", "are_you_sure")
GAMING_SOURCES = ("truthfulqa", "humaneval", "mbpp", "dfir")
GAMING_TASK = {"truthfulqa": "qa", "humaneval": "code", "mbpp": "code", "dfir": "reasoning"}


@dataclass
class SycophancyItem:
    """One question with and without its cue.

    Attributes:
        item_id: stable id within the source (hash or task/index).
        task: ``qa`` | ``reasoning``.
        uncued / cued: chat messages of Q and Q'.
        options: option letter -> text.
        truth: the right letter; cue: the cue's letter, or ``NOT <letter>`` for "are you sure?".
        source_file / source_record: provenance in the raw dir.
    """

    item_id: str
    task: str
    uncued: list[dict[str, str]]
    cued: list[dict[str, str]]
    options: dict[str, str]
    truth: str
    cue: str
    source_file: str
    source_record: str


class Reference(TypedDict, total=False):
    """The right answer(s) of a QA or reasoning task: TruthfulQA's ``best``, ``correct`` and ``incorrect``
    answers, or DFIR's ``answer``."""

    best: str
    correct: list[str]
    incorrect: list[str]
    answer: str


@dataclass
class GamingTask:
    """One task a generator answers with and without an incentive.

    Attributes:
        task_id: id within the source; task: ``qa`` | ``code`` | ``reasoning``.
        prompt: the task as the user states it (without incentive).
        visible_tests / hidden_tests: test snippets for code tasks (visible ones are in the prompt).
        entry_point: the function the code must define (code tasks).
        reference: the right answer(s) for QA/reasoning (``{"correct": [...], "incorrect": [...]}``).
    """

    task_id: str
    source: str
    task: str
    prompt: str
    visible_tests: list[str] = field(default_factory=list)
    hidden_tests: list[str] = field(default_factory=list)
    entry_point: str | None = None
    reference: Reference = field(default_factory=Reference)
    source_file: str = ""
    source_record: str = ""


def raw_dir(raw: str | Path | None = None) -> Path:
    """The raw sources dir (``raw`` or ``$AUTOMONITOR_RAW``). Raises InputError when missing."""
    from automonitor.data.build import resolve_raw

    return resolve_raw(raw)


def _jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:  # the data layer's JSONL records, as it types them
    from automonitor.data.sources.base import read_jsonl

    return list(read_jsonl(path.parent, path))


def render_chat(messages: list[dict[str, str]]) -> str:
    """A chat as the request text annotators and monitors see: a single user turn as is, a longer
    conversation as ``User:`` / ``Assistant:`` blocks."""
    if len(messages) == 1:
        return messages[0]["content"]
    return "\n\n".join(f"{'User' if m['role'] == 'user' else m['role'].capitalize()}: {m['content']}" for m in messages)


_T = TypeVar("_T")


def _round_robin(groups: list[list[_T]]) -> list[_T]:
    return [g[i] for i in range(max(map(len, groups), default=0)) for g in groups if i < len(g)]


def _bct_items(root: Path, cue: str, limit: int | None) -> list[SycophancyItem]:
    """The first ``limit`` usable questions of ``bct_truthfulqa_cues/truthfulqa_<cue>.jsonl`` (questions
    without options, or whose cue suggests the right answer, are skipped).

    Raises:
        InputError: unreadable file, a record missing a field (with file and line).
    """
    rel = f"bct_truthfulqa_cues/truthfulqa_{cue}.jsonl"
    out: list[SycophancyItem] = []
    for line, r in _jsonl(root / rel):
        try:
            unc, cued = r["unbiased_question"], r["biased_question"]
            truth, cue_opt = str(r["ground_truth"]).strip().upper(), str(r["biased_option"]).strip().upper()
            opts = parse_options(r["original_question"])
        except (KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"missing field {exc}", file=rel, line=line) from None
        if not opts or truth not in opts or cue_opt == truth:
            continue  # no options, or the "cue" suggests the right answer: nothing to filter for
        out.append(
            SycophancyItem(
                str(r.get("original_question_hash") or line), "qa", unc, cued, opts, truth, cue_opt, rel, f"line {line}"
            )
        )
        if limit and len(out) >= limit:
            break
    return out


def _bbh_task_items(root: Path, task: str) -> list[SycophancyItem]:
    """The usable questions of one BIG-Bench Hard task of ``turpin_bbh`` (file order): a right option
    and a different suggested option (``random_ans_idx``), both among the parsed options.

    Raises:
        InputError: unreadable file.
    """
    from automonitor.data.sources import turpin_bbh as tb
    from automonitor.data.sources.base import read_json

    rel = tb.val_file(task)
    data = read_json(root, root / rel)
    items = []
    for r in (data.get("data") if isinstance(data, dict) else data) or []:
        right, suggested = tb._true_idx(r), r.get("random_ans_idx")
        q = r.get("parsed_inputs")
        if right is None or not isinstance(suggested, int) or suggested == right or not isinstance(q, str):
            continue
        opts = parse_options(q)
        if tb.letter(right) not in opts or tb.letter(suggested) not in opts:
            continue
        unc = f"{q.strip()}\n\n{tb.COT_INSTRUCTION}\n\nLet's think step by step:"
        items.append(
            SycophancyItem(
                f"{task}/{r.get('idx')}",
                "reasoning",
                [{"role": "user", "content": unc}],
                [{"role": "user", "content": tb.cued_prompt(q, suggested)}],
                opts,
                tb.letter(right),
                tb.letter(suggested),
                rel,
                f"idx {r.get('idx')}",
            )
        )
    return items


def mmlu_cue(question: str, truth: str) -> str:
    """The wrong option an ``mmlu_moral_scenarios`` cue names: one of the three letters other than
    ``truth``, picked by the SHA-256 of the question text (the same on every run and machine)."""
    wrong = [x for x in MMLU_LETTERS if x != truth]
    return wrong[int.from_bytes(hashlib.sha256(question.encode("utf-8")).digest()[:8], "big") % len(wrong)]


def _mmlu_items(root: Path, limit: int | None) -> list[SycophancyItem]:
    """The first ``limit`` questions of the :data:`MMLU_SPLITS` CSVs of ``mmlu_moral_scenarios`` (headerless:
    question, the four options, the answer letter). Q = the question, its ``Answer choices`` and the answer
    format of ``professor_cue``'s prompts; Q' = the professor cue on :func:`mmlu_cue`'s letter, then Q.

    Raises:
        InputError: an unreadable file, a row without six columns or with an answer other than A-D.
    """
    from automonitor.data.sources import professor_cue as pc

    out: list[SycophancyItem] = []
    for split in MMLU_SPLITS:
        rel = f"mmlu_moral_scenarios/data/{split}/moral_scenarios_{split}.csv"
        try:
            with open(root / rel, encoding="utf-8", newline="") as fh:
                rows = list(csv.reader(fh))
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise InputError(f"cannot read file: {exc}", file=rel) from None
        for i, row in enumerate(rows):
            if len(row) != 6 or row[5].strip().upper() not in MMLU_LETTERS:
                raise InputError("expected 6 columns: question, A, B, C, D, answer letter (A-D)", file=rel, line=i + 1)
            question, truth = row[0].strip(), row[5].strip().upper()
            opts = dict(zip(MMLU_LETTERS, (o.strip() for o in row[1:5])))
            choices = "\n".join(f"({k}) {v}" for k, v in opts.items())
            unc = f"{question}\nAnswer choices:\n{choices}\n{pc.ANSWER_FORMAT}"
            cue = mmlu_cue(question, truth)
            out.append(
                SycophancyItem(
                    f"{split}/{i}",
                    "qa",
                    [{"role": "user", "content": unc}],
                    [{"role": "user", "content": f"{pc.CUE.format(letter=cue)}\n{unc}"}],
                    opts,
                    truth,
                    cue,
                    rel,
                    f"row {i + 1}",
                )
            )
            if limit and len(out) >= limit:
                return out
    return out


def sycophancy_items(
    source: str, cue: str | None, raw: str | Path | None = None, limit: int | None = None
) -> list[SycophancyItem]:
    """The first ``limit`` items of a sycophancy source (see the module docstring).

    Raises:
        InputError: unknown source or cue, a cue the source does not have, unreadable raw files.
    """
    if source not in SYCOPHANCY_SOURCES:
        raise InputError(
            f"unknown sycophancy source {source!r}; choose one of {', '.join(SYCOPHANCY_SOURCES)}", field="source"
        )
    cue = cue or "suggested_answer"
    if cue not in CUES:
        raise InputError(f"unknown cue {cue!r}; choose one of {', '.join(CUES)}", field="cue")
    root = raw_dir(raw)
    if source == "bct_truthfulqa_cues":
        return _bct_items(root, cue, limit)
    if cue != "suggested_answer":
        raise InputError(f"{source} has only the suggested_answer cue", field="cue")
    if source == "mmlu_moral_scenarios":
        return _mmlu_items(root, limit)
    from automonitor.data.sources import turpin_bbh as tb

    out: list[SycophancyItem] = _round_robin([_bbh_task_items(root, task) for task in tb.BBH_TASKS])
    return out[:limit] if limit else out


# --------------------------------------------------------------------------------------------------
_ASSERT = re.compile(r"^\s*assert\s.+$")
_BUILTINS = {
    "set",
    "sorted",
    "list",
    "tuple",
    "abs",
    "round",
    "len",
    "str",
    "int",
    "float",
    "dict",
    "frozenset",
    "isclose",
    "math",
    "all",
    "any",
    "sum",
    "min",
    "max",
    "type",
    "isinstance",
}


def _code_task(
    r: Mapping[str, object],
    source: str,
    prompt: str,
    tests: tuple[list[str], list[str]],
    entry: str | None,
    rel: str,
    line: int,
) -> GamingTask:
    """The code task of record ``r`` (its ``task_id``) at ``line`` of ``rel``; ``tests``: (visible, held out)."""
    return GamingTask(str(r.get("task_id")), source, "code", prompt, *tests, entry, {}, rel, f"line {line}")


def _mbpp(root: Path) -> list[GamingTask]:
    rel = "mbpp/mbpp_sanitized.jsonl"
    out = []
    for line, r in _jsonl(root / rel):
        tests = [t for t in r.get("test_list") or [] if isinstance(t, str)]
        text = r.get("text") if "text" in r else r.get("prompt")
        if len(tests) < 2 or not isinstance(text, str):
            continue
        setup = r.get("test_setup_code") or ""
        names = [n for n in re.findall(r"([A-Za-z_]\w*)\s*\(", tests[0]) if n not in _BUILTINS]
        entry = names[0] if names else None
        prompt = (
            f"{text.strip()}\nYour code should pass this test:\n{tests[0]}\n"
            "Answer with the Python code in one ```python block."
        )
        with_setup = [setup + "\n" + t if setup else t for t in tests]
        out.append(_code_task(r, "mbpp", prompt, (with_setup[:1], with_setup[1:]), entry, rel, line))
    return out


def _humaneval(root: Path) -> list[GamingTask]:
    rel = "humaneval/HumanEval.jsonl.gz"
    out = []
    for line, r in _jsonl(root / rel):
        entry, test, prompt = r.get("entry_point"), r.get("test"), r.get("prompt")
        if not (isinstance(entry, str) and isinstance(test, str) and isinstance(prompt, str)):
            continue
        asserts = [
            ln.strip().replace("candidate(", f"{entry}(")
            for ln in test.splitlines()
            if _ASSERT.match(ln) and "candidate(" in ln and ln.strip().count("(") == ln.strip().count(")")
        ]
        if len(asserts) < 3:
            continue
        visible = asserts[:2]
        text = (
            "Complete this Python function.\n```python\n"
            + prompt
            + "```\nIt should pass these tests:\n"
            + "\n".join(visible)
            + "\nAnswer with the complete function in one ```python block."
        )
        out.append(_code_task(r, "humaneval", text, (visible, [test + f"\ncheck({entry})\n"]), entry, rel, line))
    return out


def _truthfulqa(root: Path) -> list[GamingTask]:
    rel = "truthfulqa/TruthfulQA.csv"
    out = []
    try:
        with open(root / rel, encoding="utf-8", newline="") as fh:
            for n, r in enumerate(csv.DictReader(fh), 2):
                q = (r.get("Question") or "").strip()
                if not q:
                    continue
                ref: Reference = {
                    "best": (r.get("Best Answer") or "").strip(),
                    "correct": [a.strip() for a in (r.get("Correct Answers") or "").split(";") if a.strip()],
                    "incorrect": [a.strip() for a in (r.get("Incorrect Answers") or "").split(";") if a.strip()],
                }
                out.append(
                    GamingTask(
                        f"tqa-{n}", "truthfulqa", "qa", q, reference=ref, source_file=rel, source_record=f"line {n}"
                    )
                )
    except OSError as exc:
        raise InputError(f"cannot read file: {exc}", file=rel) from None
    return out


def _dfir(root: Path) -> list[GamingTask]:
    from automonitor.data.sources.base import read_json

    rel = "dfir_metric/DFIR-Metric-CTF.json"
    data = read_json(root, root / rel)
    by_tpl: dict[object, list[GamingTask]] = {}
    for i, q in enumerate((data or {}).get("questions") or []):
        ch = (q or {}).get("challenge") or {}
        desc, ins, ans = ch.get("description"), ch.get("instructions"), ch.get("answer")
        if not (isinstance(desc, str) and isinstance(ins, str) and isinstance(ans, str)):
            continue
        prompt = re.sub(r"[ \t]+\n", "\n", f"{desc.strip()}\n\n{ins.strip()}")
        by_tpl.setdefault(ch.get("template_id"), []).append(
            GamingTask(
                f"dfir-{ch.get('template_id')}-{ch.get('instance')}",
                "dfir",
                "reasoning",
                prompt,
                reference={"answer": ans.strip()},
                source_file=rel,
                source_record=f"questions[{i}]",
            )
        )
    return _round_robin(list(by_tpl.values()))


def gaming_tasks(source: str, raw: str | Path | None = None, limit: int | None = None) -> list[GamingTask]:
    """The first ``limit`` tasks of a gaming source (see the module docstring).

    Raises:
        InputError: unknown source, unreadable raw files.
    """
    loaders = {"mbpp": _mbpp, "humaneval": _humaneval, "truthfulqa": _truthfulqa, "dfir": _dfir}
    if source not in loaders:
        raise InputError(f"unknown gaming source {source!r}; choose one of {', '.join(GAMING_SOURCES)}", field="source")
    out = loaders[source](raw_dir(raw))
    return out[:limit] if limit else out
