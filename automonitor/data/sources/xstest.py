"""XSTest (Röttger et al., NAACL 2024) v2 completions: Safety & Permission Violations, QA.

Five model completion files (gpt4, llama2new, llama2orig, mistralguard, mistralinstruct) over the same
450 prompts, each completion with a human ``final_label`` (``1_full_compliance``, ``2_full_refusal``,
``3_partial_refusal``). Only the 200 unsafe prompts (``type`` starting with ``contrast_``) are used, and
never partial refusals. For an unsafe prompt with at least one full compliance and one full refusal,
one pair: misbehavior = the first full compliance (model order below), benign = a full refusal of a
*different* model, close to it in length, chosen so that the compliance is the longer side in about half the
pairs (:func:`automonitor.data.length_match.balanced_pairings`). Labels are human per response (``human_per_response``). Caveat: almost all
compliant answers come from Mistral-7B-Instruct (``mistralinstruct``), so a monitor could learn that
model's style.
"""

from __future__ import annotations

import csv
from pathlib import Path

from automonitor.errors import InputError
from automonitor.data.length_match import balanced_pairings
from automonitor.data.sources.base import Numbered, Side, SourceResult, make_pair
from automonitor.data.sources.registry import register_source

NAME = "xstest"
FOLDER = "xstest"
CATEGORY = "safety_permission"
MODELS = ("mistralinstruct", "mistralguard", "gpt4", "llama2new", "llama2orig")
FILES = tuple(f"{FOLDER}/model_completions/xstest_v2_completions_{m}.csv" for m in MODELS)
_NEED = ("id", "type", "prompt", "completion", "final_label")


def _read(raw: Path, relname: str) -> list[Numbered]:
    try:
        with open(raw / relname, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in _NEED if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError("missing column", file=relname, line=1, field=missing[0])
            return [(n, row) for n, row in enumerate(reader, 2)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read file: {exc}", file=relname) from None


#: one prompt's rows by model: (line in the file, the row)
_Rows = dict[str, Numbered]


def _sides(rows: _Rows, res: SourceResult) -> tuple[str, list[str]] | None:
    """``(complying model, refusing models)`` of one unsafe prompt: the first model with a non-empty full
    compliance and the other models with a non-empty full refusal (model order); ``None`` (counted in
    ``res``) when there is none."""

    def answered(label: str) -> list[str]:
        return [
            m for m in MODELS if m in rows and rows[m][1]["final_label"] == label and rows[m][1]["completion"].strip()
        ]

    comply, refuse = answered("1_full_compliance"), answered("2_full_refusal")
    if not comply or not refuse:
        res.dropped["unsafe prompt without both a full compliance and a full refusal"] += 1
        return None
    mm = comply[0]
    others = [m for m in refuse if m != mm]
    if not others:
        res.dropped["no refusal from another model"] += 1
        return None
    return mm, others


@register_source(NAME, folder=FOLDER, category=CATEGORY, task="qa", files=FILES, order=80, verified_pairs=131)
def load(raw: Path) -> SourceResult:
    """Pair full compliance vs full refusal on XSTest's unsafe prompts (see module doc).

    Raises:
        InputError: a file without the needed columns or unreadable (file, line, field named).
    """
    res = SourceResult()
    per_model: dict[str, _Rows] = {}
    for m, relname in zip(MODELS, FILES):
        if res.found(raw, relname) is None:
            continue
        per_model[m] = {row["id"]: (n, row) for n, row in _read(raw, relname)}
    if not per_model:
        return res
    ids = sorted({i for rows in per_model.values() for i in rows}, key=lambda s: (len(s), s))
    found: list[tuple[str, _Rows, str, list[str]]] = []
    for pid in ids:
        rows = {m: per_model[m][pid] for m in MODELS if m in per_model and pid in per_model[m]}
        any_row = next(iter(rows.values()))[1]
        if not any_row["type"].startswith("contrast_"):
            continue  # safe prompt: refusing it is over-refusal, not this benchmark's misbehavior
        sides = _sides(rows, res)
        if sides is not None:
            found.append((pid, rows, *sides))
    # the refusal of each prompt: close in length to the compliance, and the compliance the longer side in
    # about half the pairs (a refusal is short: the first refusal in model order let length tell the sides
    # apart); candidates are (model, completion)
    chosen = balanced_pairings(
        [
            ([(mm, rows[mm][1]["completion"].strip())], [(m, rows[m][1]["completion"].strip()) for m in others])
            for _, rows, mm, others in found
        ],
        lambda c: len(c[1]),
    )
    for (pid, rows, mm, _), (((_, _), (bm, _)),) in zip(found, chosen):
        (ml, mrow), (bl, brow) = rows[mm], rows[bm]
        res.pairs.append(
            make_pair(
                f"{NAME}:{pid}",
                mrow["prompt"].strip(),
                Side(mrow["completion"].strip(), FILES[MODELS.index(mm)], f"line {ml} ({pid})"),
                Side(brow["completion"].strip(), FILES[MODELS.index(bm)], f"line {bl} ({pid})"),
                meta={"xstest_id": pid, "xstest_type": mrow["type"]},
                mis_meta={
                    "model": mm,
                    "human_label": "1_full_compliance",
                    "annotator_agreement": mrow.get("agreement"),
                },
                ben_meta={"model": bm, "human_label": "2_full_refusal", "annotator_agreement": brow.get("agreement")},
                label_source="human_per_response",
            )
        )
    return res
