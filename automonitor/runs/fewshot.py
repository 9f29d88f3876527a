"""The few-shot examples a run was created with, read back from the store by sample id (the runner and the
batch path both build their prompts from them), and the train candidates of a run under a monitor view.

Under a view other than ``full`` a few-shot example is shown as the monitor sees the sample it judges: its
response is the example's rendering under that view (:func:`automonitor.runs.cache.view_text`), and a train
sample without the view is no candidate, so an ``answer`` run's prompt holds no reasoning anywhere."""

from __future__ import annotations

from sqlmodel import Session

from typing import Iterable

from automonitor.data.monitor_views import render, view_of_run
from automonitor.errors import InputError
from automonitor.runs.cache import view_text
from automonitor.runs.prompts import FewShotExample, Template, load_template
from automonitor.vocab import DEFAULT_VIEW
from store.models import Run
from store.queries import runs as q
from store.queries.rowtypes import Example

__all__ = ["load_examples", "run_prompt", "view_candidates"]


def view_candidates(rows: Iterable[Example], view: str = DEFAULT_VIEW) -> list[Example]:
    """Few-shot candidates (train rows with id, request, response, label, category, source, meta) as shown
    under ``view``: each response replaced by its rendering; rows without the view left out (``full``: all,
    unchanged)."""
    if view == DEFAULT_VIEW:
        return [r.copy() for r in rows]
    out: list[Example] = []
    for r in rows:
        shown = render(r["response"], view, source=r.get("source") or "", meta=r.get("meta"))
        if shown is not None:
            out.append({**r, "response": shown.text})
    return out


def load_examples(session: Session, ids: list[str], view: str = DEFAULT_VIEW) -> list[FewShotExample]:
    """The few-shot examples recorded for a run (sample ids, in their order), their responses as shown under
    the run's ``view``.

    Raises:
        InputError: a sample missing from the store, or without the view (changed since the run was created).
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
            response=view_text(rows[i], view)["response"],
            label=rows[i]["label"],
            category=rows[i]["category"],
        )
        for i in ids
    ]


def run_prompt(session: Session, run: Run) -> tuple[Template, list[FewShotExample]]:
    """The template and the few-shot examples ``run`` was created with (the examples under the run's view),
    from which its executor, the runner's or the batch path's, builds every prompt.

    Raises:
        InputError: an unknown template, a template whose sha256 differs from ``run.template_hash`` (the file
            changed since the run was created), or a few-shot sample missing (:func:`load_examples`).
    """
    tpl = load_template(run.template)
    if run.template_hash and tpl.sha256 != run.template_hash:
        raise InputError(
            f"template {run.template!r} changed since run {run.id} was created "
            f"(hash {tpl.sha256[:12]} != {run.template_hash[:12]}); start a new run",
            field="template",
        )
    params = run.params or {}
    return tpl, load_examples(session, list(params.get("fewshot") or []), view_of_run(params))
