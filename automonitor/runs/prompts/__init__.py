"""Versioned prompt templates (``*.txt`` beside this file) and their loader; see :mod:`.prompts`."""

from automonitor.runs.prompts.prompts import (
    PAPER_SCHEMA_DIRECT,
    FewShotExample,
    PromptBuilder,
    Template,
    choose_fewshot,
    fill,
    load_template,
    output_schema,
    truncate_chars,
)

__all__ = [
    "PAPER_SCHEMA_DIRECT",
    "FewShotExample",
    "PromptBuilder",
    "Template",
    "choose_fewshot",
    "fill",
    "load_template",
    "output_schema",
    "truncate_chars",
]
