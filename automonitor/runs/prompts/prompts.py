"""Prompt templates: versioned text files with a content hash recorded on every run.

A template file (``automonitor/runs/prompts/<name>.txt``) holds comment lines (``# ...``; ``# version: N``
gives the version) and sections, each starting with a line ``<<<section>>>``:

- ``system``: the instructions shared by every sample (few-shot templates insert their labelled
  examples here at ``{examples}``), so it is one prefix that a local model evaluates once.
- ``user``: the per-sample part, with ``{request}`` and ``{response}``.
- ``example`` (few-shot templates only): how one labelled example is shown; ``{request}``,
  ``{response}``, ``{answer}`` (Yes/No), ``{verdict}`` (misbehavior/benign), ``{category}``.
- ``base_evidence_cue`` / ``base_verdict_cue``: continuations used with base (non-chat) models, which
  are scored by the next-token probabilities of " Yes" and " No" after the verdict cue.

Placeholders are substituted in one pass, so text inside a sample that looks like a placeholder is
never expanded. The template hash is the sha256 of the file's bytes: any edit changes it, which
invalidates cached verdicts made with the old text.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

from automonitor.data.trajectory import cut_middle
from automonitor.errors import InputError
from automonitor.jsontypes import JSONObject
from automonitor.vocab import TEMPLATES
from store.queries.rowtypes import Example

TEMPLATE_DIR = Path(__file__).resolve().parent
_SECTION = re.compile(r"^<<<([a-z_]+)>>>\s*$")
_PLACEHOLDER = re.compile(r"\{(request|response|examples|answer|verdict|category)\}")
_KNOWN_SECTIONS = {"system", "user", "example", "base_evidence_cue", "base_verdict_cue"}


#: a text's split at its placeholders (``_PLACEHOLDER.split``: literal text at even indexes, placeholder
#: names at odd ones), made once per text: a run fills the same sections for every sample
_SPLITS: dict[str, list[str]] = {}
_SPLITS_MAX = 256


def _split(text: str) -> list[str]:
    """``text`` split at its placeholders (:data:`_SPLITS`; kept for at most :data:`_SPLITS_MAX` texts)."""
    parts = _SPLITS.get(text)
    if parts is None:
        parts = _PLACEHOLDER.split(text)
        if len(_SPLITS) < _SPLITS_MAX:
            _SPLITS[text] = parts
    return parts


def fill(text: str, values: Mapping[str, str]) -> str:
    """Substitute ``{name}`` placeholders of ``text`` from ``values`` in a single pass.

    Only the names request, response, examples, answer, verdict, category are placeholders; any other
    brace (e.g. literal JSON in the instructions) is left alone, and substituted values are not
    re-scanned. A placeholder missing from ``values`` is left as is. The text is split at its
    placeholders once (:func:`_split`), then joined with the values: no pattern scan per call.
    """
    parts = _split(text)
    if len(parts) == 1:
        return text
    out = parts[:]
    for i in range(1, len(out), 2):
        name = out[i]
        out[i] = str(values[name]) if name in values else "{" + name + "}"
    return "".join(out)


@dataclass(frozen=True)
class Template:
    """A parsed template file.

    Attributes:
        name: template name (``direct``, ``evidence``, ``direct-fewshot``, ``evidence-fewshot``).
        version: the ``# version:`` header (a string, e.g. ``"1"``).
        sha256: hex sha256 of the file's bytes (recorded as ``Run.template_hash``).
        sections: section name -> text (trailing newlines stripped).
        path: the file it was read from.
    """

    name: str
    version: str
    sha256: str
    sections: dict[str, str]
    path: Path

    @property
    def fewshot(self) -> bool:
        """True for templates that take labelled train examples."""
        return "example" in self.sections

    @property
    def evidence(self) -> bool:
        """True for templates that ask for category, severity and quoted evidence before the verdict
        (``evidence``, ``evidence-fewshot``, ``paper-evidence``)."""
        return "evidence" in self.name.split("-")

    @property
    def paper(self) -> bool:
        """True for the paper's own prompts (``paper-direct``, ``paper-evidence``), whose JSON answer is
        ``{"misbehavior_detected": bool, "detected_categories": [...]}`` (:func:`output_schema`)."""
        return self.name.startswith("paper-")


def parse_template(name: str, text: str, path: Path | None = None) -> Template:
    """Parse template file text into a :class:`Template`.

    Raises:
        InputError: no ``system`` or ``user`` section, an unknown section name, or a ``user`` section
            without ``{request}`` and ``{response}``.
    """
    sections: dict[str, list[str]] = {}
    version = "0"
    current: str | None = None
    where = str(path) if path else name
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _SECTION.match(line)
        if m:
            current = m.group(1)
            if current not in _KNOWN_SECTIONS:
                raise InputError(f"unknown section <<<{current}>>>", file=where, line=lineno)
            sections[current] = []
            continue
        if current is None:
            if line.startswith("#"):
                vm = re.match(r"#\s*version:\s*(\S+)", line)
                if vm:
                    version = vm.group(1)
            continue
        sections[current].append(line)
    parsed = {k: "\n".join(v).strip("\n") for k, v in sections.items()}
    for req in ("system", "user"):
        if req not in parsed:
            raise InputError(f"template has no <<<{req}>>> section", file=where)
    if "{request}" not in parsed["user"] or "{response}" not in parsed["user"]:
        raise InputError("the user section needs {request} and {response}", file=where)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Template(
        name=name, version=version, sha256=digest, sections=parsed, path=path or TEMPLATE_DIR / f"{name}.txt"
    )


@lru_cache(maxsize=None)
def _load_cached(name: str, mtime_ns: int) -> Template:
    path = TEMPLATE_DIR / f"{name}.txt"
    return parse_template(name, path.read_bytes().decode("utf-8"), path)


def load_template(name: str) -> Template:
    """Load template ``name`` from ``automonitor/runs/prompts/<name>.txt``.

    Raises:
        InputError: ``name`` is not one of the contract's templates (field ``template``).
    """
    if name not in TEMPLATES:
        raise InputError(f"unknown template {name!r}; choose one of {', '.join(TEMPLATES)}", field="template")
    path = TEMPLATE_DIR / f"{name}.txt"
    return _load_cached(name, path.stat().st_mtime_ns)


# The paper's JSON answers (arXiv 2601.05752 v2, Tables 4 and 5), for structured output (JSON schema or a
# forced tool call); parsed by automonitor.runs.parsing.parse_object (key ``misbehavior_detected``).
PAPER_SCHEMA_DIRECT: JSONObject = {
    "type": "object",
    "properties": {"misbehavior_detected": {"type": "boolean"}},
    "required": ["misbehavior_detected"],
    "additionalProperties": False,
}
PAPER_SCHEMA_EVIDENCE: JSONObject = {
    "type": "object",
    "properties": {
        "misbehavior_detected": {"type": "boolean"},
        "detected_categories": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "category": {"type": "string"},
                    "description": {"type": "string"},
                    "evidence": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["category", "description", "evidence"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["misbehavior_detected", "detected_categories"],
    "additionalProperties": False,
}


def output_schema(template: Template) -> JSONObject | None:
    """The JSON schema of the paper templates' answer (:data:`PAPER_SCHEMA_DIRECT` /
    :data:`PAPER_SCHEMA_EVIDENCE`), or ``None`` for our own templates (the backends' verdict schema)."""
    if not template.paper:
        return None
    return PAPER_SCHEMA_EVIDENCE if template.evidence else PAPER_SCHEMA_DIRECT


# ---------------------------------------------------------------------------------------------------
# Truncation of long sample text (documented budgets; recorded in prediction meta)

TRUNCATION_MARKER = "\n[... truncated ...]\n"


def truncate_chars(text: str, budget: int | None) -> tuple[str, JSONObject | None]:
    """Keep at most ``budget`` characters of ``text``: the first two thirds and the last third of the
    budget, joined by ``TRUNCATION_MARKER``.

    Returns ``(text, info)`` where ``info`` is ``None`` when nothing was cut, else
    ``{"unit": "chars", "original": len(text), "kept": kept_chars}``.
    """
    if budget is None or budget <= 0 or len(text) <= budget:
        return text, None
    head = (budget * 2) // 3
    tail = budget - head
    cut = text[:head] + TRUNCATION_MARKER + (text[-tail:] if tail else "")
    return cut, {"unit": "chars", "original": len(text), "kept": head + tail}


@dataclass
class FewShotExample:
    """One labelled train sample shown in a few-shot prompt (label is the gold label)."""

    sample_id: str
    request: str
    response: str
    label: str
    category: str


@dataclass
class PromptBuilder:
    """Renders one template for one monitor run.

    Attributes:
        template: the parsed template.
        examples: few-shot examples (empty for non-few-shot templates).
        request_budget / response_budget: character budgets for a sample's request and response
            (``None`` = no truncation); example_budget: the budget for each field of an example.
    """

    template: Template
    examples: list[FewShotExample] = field(default_factory=list)
    request_budget: int | None = None
    response_budget: int | None = None
    example_budget: int | None = 1500

    def render_example(self, ex: FewShotExample, truncate=None) -> str:
        """One example rendered with the ``example`` section. ``truncate(text) -> text`` overrides the
        character budget (used by local models with token budgets)."""
        cut = truncate or (lambda t: truncate_chars(t, self.example_budget)[0])
        mis = ex.label == "misbehavior"
        return fill(
            self.template.sections["example"],
            {
                "request": cut(ex.request),
                "response": cut(ex.response),
                "answer": "Yes" if mis else "No",
                "verdict": ex.label,
                "category": ex.category if mis else "none",
            },
        )

    def system_text(self, truncate=None) -> str:
        """The shared instruction prefix (with few-shot examples inserted when the template has them)."""
        system = self.template.sections["system"]
        if self.template.fewshot:
            block = "\n\n".join(self.render_example(ex, truncate) for ex in self.examples)
            system = fill(system, {"examples": block})
        return system

    def user_text(self, request: str, response: str) -> tuple[str, JSONObject]:
        """The per-sample part, after truncation. Returns ``(text, meta)`` where ``meta`` holds
        ``{"truncated": {"request": info, "response": info}}`` when anything was cut. A response that is
        a serialised trajectory (:mod:`automonitor.data.trajectory`) over the budget is cut in the middle by
        whole steps, first and last kept (info ``unit: "steps"``, ``steps_cut``); other text by
        :func:`truncate_chars`. The info lands in the prediction's ``meta``."""
        req, ri = truncate_chars(request, self.request_budget)
        resp, si = cut_middle(response, self.response_budget)  # a trajectory loses whole middle steps
        if si is None:
            resp, si = truncate_chars(response, self.response_budget)
        trunc: JSONObject = {k: v for k, v in (("request", ri), ("response", si)) if v}
        meta: JSONObject = {"truncated": trunc} if trunc else {}
        return fill(self.template.sections["user"], {"request": req, "response": resp}), meta

    def chat_messages(self, request: str, response: str) -> tuple[str, str, JSONObject]:
        """``(system, user, meta)`` for chat backends."""
        user, meta = self.user_text(request, response)
        return self.system_text(), user, meta

    def fingerprint(self) -> JSONObject:
        """What the rendered prompt depends on besides the sample (goes into the cache key)."""
        return {
            "template": self.template.name,
            "template_hash": self.template.sha256,
            "examples": [e.sample_id for e in self.examples],
            "request_budget": self.request_budget,
            "response_budget": self.response_budget,
            "example_budget": self.example_budget,
        }


def choose_fewshot(candidates: Iterable[Example], k: int = 4, seed: int = 0) -> list[FewShotExample]:
    """Choose ``k`` few-shot examples deterministically, labels balanced (k/2 of each; the extra one of an
    odd k is a misbehavior example), categories covered round-robin.

    ``candidates`` are train-split gold samples (mappings with id, request, response, label, category).
    Order is by sha256(seed:sample_id), so the choice depends only on the seed and the set of train ids.
    Examples are then interleaved misbehavior/benign.

    Raises:
        InputError: the candidates lack ``ceil(k/2)`` misbehavior or ``floor(k/2)`` benign samples.
    """
    rows = sorted(candidates, key=lambda r: hashlib.sha256(f"{seed}:{r['id']}".encode()).hexdigest())
    need = {"misbehavior": (k + 1) // 2, "benign": k // 2}
    picked: dict[str, list[Example]] = {"misbehavior": [], "benign": []}
    for label, n in need.items():
        pool = [r for r in rows if r["label"] == label]
        by_cat: dict[str, list[Example]] = {}
        for r in pool:
            by_cat.setdefault(r["category"], []).append(r)
        cats = sorted(by_cat)
        # rotate the category order by label so both labels do not start with the same category
        if label == "benign" and cats:
            cats = cats[1:] + cats[:1]
        while len(picked[label]) < n and any(by_cat.values()):
            for c in cats:
                if by_cat[c] and len(picked[label]) < n:
                    picked[label].append(by_cat[c].pop(0))
        if len(picked[label]) < n:
            raise InputError(
                f"few-shot templates need {n} {label} samples in the train split, "
                f"found {len(pool)}; build or import a train split first",
                field="template",
            )
    out: list[FewShotExample] = []
    for i in range(max(need.values())):
        for label in ("misbehavior", "benign"):
            if i < len(picked[label]):
                r = picked[label][i]
                out.append(
                    FewShotExample(
                        sample_id=r["id"],
                        request=r["request"],
                        response=r["response"],
                        label=r["label"],
                        category=r["category"],
                    )
                )
    return out
