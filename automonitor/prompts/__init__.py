"""Versioned prompt templates (``*.txt`` beside this file) and their loader; see :mod:`.prompts`."""

from automonitor.prompts.prompts import (  # noqa: F401
    FewShotExample,
    PromptBuilder,
    Template,
    choose_fewshot,
    fill,
    list_templates,
    load_template,
    template_hash,
    truncate_chars,
)
