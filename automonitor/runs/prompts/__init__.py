"""Versioned prompt templates (``*.txt`` beside this file) and their loader; see :mod:`.prompts`."""

from automonitor.runs.prompts.prompts import (
    PAPER_SCHEMA_DIRECT,
    PAPER_SCHEMA_EVIDENCE,
    FewShotExample,
    PromptBuilder,
    Template,
    choose_fewshot,
    fill,
    load_template,
    output_schema,
    template_hash,
    truncate_chars,
)

__all__ = [
    "PAPER_SCHEMA_DIRECT",
    "PAPER_SCHEMA_EVIDENCE",
    "FewShotExample",
    "PromptBuilder",
    "Template",
    "choose_fewshot",
    "fill",
    "load_template",
    "output_schema",
    "template_hash",
    "truncate_chars",
]
