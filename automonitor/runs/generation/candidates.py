"""A kept item becomes two candidate samples (status ``candidate``, no split, pair id
``gen:<run>:<item>`` cut to 128 characters, ``label_source='by_construction'``) with full provenance in
``meta['generation']``: generator, base URL, generation id, source file and record, prompts, raw outputs,
filter details, the benign side's origin (and the incentive's spec for gaming)."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from automonitor.runs.generation import tasks
from automonitor.runs.generation.filters import Decision
from automonitor.runs.generation.incentives import load_incentive
from automonitor.runs.generation.job import PROMPT_VERSION, GenerationJob
from automonitor.runs.generation.recipes import Transcript
from automonitor.hashing import content_hash, make_sample_id, sha256_text
from store import session_scope
from store.models import utcnow

Item = tasks.SycophancyItem | tasks.GamingTask


def request_of(job: GenerationJob, item: Item) -> tuple[str, str, str, str]:
    """``(request text, category, task, item id)`` of an item: the cued chat rendered (sycophancy) or
    the task with the incentive (gaming)."""
    if isinstance(item, tasks.SycophancyItem):
        return tasks.render_chat(item.cued), "sycophancy_bias", item.task, item.item_id
    inc = load_incentive(job["incentive"])
    return inc.render(item.prompt), "specification_gaming", item.task, item.task_id


def provenance(
    run_id: str, job: GenerationJob, item: Item, item_id: str, dec: Decision, transcript: Transcript
) -> dict[str, dict[str, object]]:
    """``{"generation": {...}}``: where a candidate pair came from (module docstring)."""
    prov: dict[str, object] = {
        "generation_id": run_id,
        "kind": job["kind"],
        "generator": job["generator"],
        "base_url": job.get("base_url"),
        "source": job["source"],
        "cue": job.get("cue"),
        "incentive": job.get("incentive"),
        "item_id": item_id,
        "source_file": item.source_file,
        "source_record": item.source_record,
        "prompts": transcript["prompts"],
        "raw_outputs": transcript["outputs"],
        "filter": dec.details,
        "benign_choice": dec.benign_choice,
        "prompt_version": PROMPT_VERSION,
    }
    if job["kind"] == "gaming":
        prov["incentive_spec"] = load_incentive(job["incentive"]).to_json()
    return {"generation": prov}


def candidate_rows(
    run_id: str, job: GenerationJob, item: Item, dec: Decision, transcript: Transcript
) -> list[dict[str, object]]:
    """The two ``Sample`` column dicts (misbehavior, then benign) of a kept item."""
    request, category, task, item_id = request_of(job, item)
    pair_id = f"gen:{run_id}:{item_id}"[:128]
    prov = provenance(run_id, job, item, item_id, dec, transcript)
    rows: list[dict[str, object]] = []
    for label, resp in (("misbehavior", dec.misbehavior), ("benign", dec.benign)):
        response = resp or ""  # a kept decision always holds both responses
        rows.append(
            dict(
                id=make_sample_id(pair_id, label, request, response),
                pair_id=pair_id,
                category=category,
                task=task,
                label=label,
                request=request,
                response=response,
                source=f"gen:{job['source']}"[:64],
                source_file=item.source_file,
                source_record=item.source_record,
                split=None,
                status="candidate",
                request_hash=sha256_text(request),
                response_hash=sha256_text(response),
                content_hash=content_hash(request, response, label),
                label_source="by_construction",
                meta={**prov, "intended_label": label},
                created_at=utcnow(),
            )
        )
    return rows


def insert_pair(
    engine: Engine, run_id: str, job: GenerationJob, item: Item, dec: Decision, transcript: Transcript
) -> bool:
    """Insert the kept item's two candidate samples; False when an identical sample (same request and
    response hashes as either side) already exists."""
    from store.queries.generation import insert_new_samples

    rows = candidate_rows(run_id, job, item, dec, transcript)
    with session_scope(engine) as s:
        return insert_new_samples(s, rows)
