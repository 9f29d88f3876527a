"""Versioned prompt templates (``*.txt`` beside this file) and their loader; see :mod:`.prompts`."""

from automonitor.runs.prompts.prompts import (
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
    "FewShotExample",
    "PromptBuilder",
    "Template",
    "choose_fewshot",
    "fill",
    "load_template",
    "output_schema",
    "truncate_chars",
]
