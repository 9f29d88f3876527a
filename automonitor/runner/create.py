"""Create a run: validate the monitor and template, pick samples and few-shot examples, insert."""

from __future__ import annotations

import secrets
import time

from sqlalchemy.engine import Engine

from automonitor.errors import InputError
from automonitor.monitors import backend_class, create_backend, parse_monitor_spec
from automonitor.prompts import FewShotExample, PromptBuilder, choose_fewshot, load_template
from automonitor.runner.params import MAX_REPEAT, _backend_params, _check_params
from automonitor.sampling import seeded_shuffle, stratified_sample, stratum_counts
from store import session_scope
from store.models import Run
from store.queries import runs as q


def _new_run_id() -> str:
    return time.strftime("run_%Y%m%d_%H%M%S_", time.gmtime()) + secrets.token_hex(3)


def _prompt_for(template_name: str, examples: list[FewShotExample]) -> PromptBuilder:
    return PromptBuilder(load_template(template_name), examples=examples)


def create_run(
    engine: Engine,
    monitor: str,
    template: str,
    *,
    limit: int | None = None,
    sample_seed: int = 0,
    base_url: str | None = None,
    concurrency: int = 8,
    params: dict | None = None,
    reuse: bool = False,
    edition: str = "paper",
    controls: bool = True,
) -> str:
    """Create a run with one pending prediction per selected test sample; returns the run id.

    Args:
        monitor: ``BACKEND[:MODEL]`` (``rules``, ``llamacpp``, ``openai``, ``anthropic``).
        template: ``direct`` | ``evidence`` | ``direct-fewshot`` | ``evidence-fewshot``.
        limit: stratified subset size (category x task x label, pairs kept together), ``None`` = all.
        sample_seed: seed of the subset choice.
        base_url: server URL for ``openai``/``anthropic`` (OpenAI-compatible servers, replay servers).
        concurrency: maximum concurrent judge calls (>= 1).
        params: backend/runner parameters (e.g. ``structured``, ``max_tokens``, ``max_attempts``,
            ``timeout``, ``fewshot_k``, ``repeat``); never API keys. ``repeat`` K (1..50, default 1)
            judges each sample K times: predictions with repeat index 0..K-1, repeat k sent with seed
            ``seed + k`` (backends with a seed) and cached under its own key (repeat 0 has the plain
            key, so a K-repeat run reuses a single run's verdicts and vice versa).
        reuse: return the id of an existing run with the same monitor, template (same hash), base URL,
            parameters, few-shot examples and exactly the same samples, if there is one (any status:
            an unfinished one is then resumed by ``execute_run``), instead of creating a new run.
        edition: test-set edition judged (``paper`` | ``verified``), recorded as ``run.edition``.
        controls: also judge the benign-only ``controls`` slice when the store has one (with ``limit``,
            a seeded subset of the same share); reports give FAR on controls separately.

    Raises:
        InputError: unknown backend/template, bad limit/concurrency, empty test split, missing API key,
            too few train samples for a few-shot template. Nothing is written in that case.
    """
    spec = parse_monitor_spec(monitor)
    tpl = load_template(template)
    params = _check_params(dict(params or {}))
    if limit is not None and int(limit) < 1:
        raise InputError("--limit must be at least 1", field="limit")
    if int(concurrency) < 1:
        raise InputError("--concurrency must be at least 1", field="concurrency")
    try:
        repeat = int(params.get("repeat", 1))
    except (TypeError, ValueError):
        repeat = 0
    if not 1 <= repeat <= MAX_REPEAT:
        raise InputError(f"--repeat must be between 1 and {MAX_REPEAT}, got {params.get('repeat')!r}", field="repeat")
    if repeat == 1:
        params.pop("repeat", None)  # a single judgement is the plain run (same as older runs)
    else:
        params["repeat"] = repeat
    if base_url is not None and not str(base_url).startswith(("http://", "https://")):
        raise InputError(f"--base-url must be an http(s) URL, got {base_url!r}", field="base-url")
    if base_url and not backend_class(spec.backend).takes_base_url:
        raise InputError(f"--base-url does not apply to the {spec.backend} backend", field="base-url")
    from store.queries.samples import check_edition, control_samples

    check_edition(edition)
    with session_scope(engine) as s:
        samples = q.test_samples(s, edition=edition)
        if not samples:
            raise InputError(
                f"the store has no test samples in edition {edition!r}; run `automonitor build` "
                f"or `automonitor import` first",
                field="--edition",
            )
        ids = stratified_sample(samples, limit, sample_seed)
        ctrl_ids: list[str] = []
        if controls:
            ctrl_ids = [c["id"] for c in control_samples(s)]
            if limit is not None and ctrl_ids:
                share = max(1, round(len(ctrl_ids) * len(ids) / max(1, len(samples))))
                ctrl_ids = sorted(seeded_shuffle(ctrl_ids, sample_seed)[:share])
        ids = ids + ctrl_ids
        examples: list[FewShotExample] = []
        if tpl.fewshot:
            examples = choose_fewshot(
                q.train_examples(s), k=int(params.get("fewshot_k", 4)), seed=int(params.get("fewshot_seed", 0))
            )
        # validates the backend (key present, model file found) without any network call
        backend = create_backend(
            spec, base_url=base_url, params=_backend_params(params), prompt=_prompt_for(template, examples)
        )
        if reuse:
            same = q.find_equivalent_run(
                s,
                monitor=spec.name,
                template=tpl.name,
                template_hash=tpl.sha256,
                base_url=base_url,
                judge=params,
                config=backend.cache_params(),
                fewshot=[e.sample_id for e in examples],
                sample_ids=ids,
            )
            if same is not None:
                return same
        mon = q.get_or_create_monitor(s, spec.name, spec.backend, spec.model, base_url)
        run_id = _new_run_id()
        s.add(
            Run(
                id=run_id,
                monitor_id=mon.id,
                monitor=spec.name,
                template=tpl.name,
                template_hash=tpl.sha256,
                status="pending",
                kind="measured",
                n=len(ids),
                edition=edition,
                params={
                    "backend": spec.backend,
                    "model": backend.model,
                    "base_url": base_url,
                    "limit": limit,
                    "sample_seed": sample_seed,
                    "concurrency": int(concurrency),
                    "template_version": tpl.version,
                    "fewshot": [e.sample_id for e in examples],
                    "judge": params,
                    "config": backend.cache_params(),
                    "max_tokens": getattr(backend, "max_tokens", None),
                    "strata": stratum_counts(samples, ids),
                    "controls": len(ctrl_ids),
                },
            )
        )
        s.flush()
        q.insert_pending(s, run_id, ids, repeats=repeat)
    return run_id

