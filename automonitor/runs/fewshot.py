"""The few-shot examples a run was created with, read back from the store by sample id (the runner and the
batch path both build their prompts from them)."""

from __future__ import annotations

from sqlmodel import Session

from automonitor.errors import InputError
from automonitor.runs.prompts import FewShotExample
from store.queries import runs as q

__all__ = ["load_examples"]


def load_examples(session: Session, ids: list[str]) -> list[FewShotExample]:
    """The few-shot examples recorded for a run (sample ids, in their order).

    Raises:
        InputError: a sample missing from the store.
    """
    if not ids:
        return []
    rows = q.fewshot_samples(session, ids)
    missing = [i for i in ids if i not in rows]
    if missing:
        raise InputError(f"few-shot example samples missing from the store: {', '.join(missing[:3])}", field="template")
    return [
        FewShotExample(
            sample_id=i,
            request=rows[i]["request"],
            response=rows[i]["response"],
            label=rows[i]["label"],
            category=rows[i]["category"],
        )
        for i in ids
    ]
