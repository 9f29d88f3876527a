"""Create a run: validate the monitor and template, pick samples and few-shot examples, insert the run
with one pending prediction per sample (and repeat)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Unpack

from sqlalchemy.engine import Engine
from sqlmodel import Session

from automonitor.data.monitor_views import check_view, covered, missing_part_message
from automonitor.errors import InputError
from automonitor.timestamps import stamped_id
from automonitor.runs.fewshot import view_candidates
from automonitor.runs.monitors import Backend, MonitorSpec, backend_class, create_backend, parse_monitor_spec
from automonitor.runs.prompts import FewShotExample, PromptBuilder, Template, choose_fewshot, load_template
from automonitor.runs.params import (
    RUNNER_PARAMS,
    backend_params,
    check_base_url,
    check_params,
    fewshot_settings,
    normalised_params,
    redact_url,
    repeat_count,
)
from automonitor.runs.runner.options import RunOptions, with_defaults
from automonitor.runs.sampling import seeded_shuffle, stratified_sample, stratum_counts
from store import session_scope
from store.queries.rowtypes import SampleKey
from store.queries import runs as q
from store.queries.locks import begin_serialised_write


@dataclass
class _Selection:
    """The samples a new run judges: the split's gold samples (for the strata), the chosen ids
    (test subset then controls) and how many of them are controls."""

    samples: list[SampleKey]
    ids: list[str]
    n_controls: int
    without_view: dict[str, int] | None = None


def create_run(engine: Engine, monitor: str, template: str, **options: Unpack[RunOptions]) -> str:
    """Create a run with one pending prediction per selected test sample; returns the run id.

    Args:
        monitor: ``BACKEND[:MODEL]`` (``rules``, ``llamacpp``, ``openai``, ``anthropic``).
        template: ``direct`` | ``evidence`` | ``direct-fewshot`` | ``evidence-fewshot``.
        options: the run's keyword options (:class:`~automonitor.runs.runner.options.RunOptions`: ``limit``,
            ``sample_seed``, ``params``, ``edition``, ``controls``, ``view``, ``sources``, ``base_url``,
            ``concurrency``, ``reuse``), the same words :func:`~automonitor.runs.runner.estimate.estimate_run`
            takes.

    Raises:
        InputError: unknown backend/template/view, bad limit/concurrency, a runner parameter of the wrong
            type or out of range (:func:`automonitor.runs.params.runner_settings`), empty test split, missing API
            key, too few train samples for a few-shot template, a source named in ``sources`` that has no
            sample in the edition or lacks the part ``view`` needs (the message names source and part), no
            sample with the view. Nothing is written in that case.
        TypeError: a keyword that is no run option.
    """
    o = with_defaults(options)
    limit, base_url, concurrency, view = o["limit"], o["base_url"], o["concurrency"], o["view"]
    spec = parse_monitor_spec(monitor)
    tpl = load_template(template)
    params, repeat = _checked_options(spec, dict(o["params"] or {}), limit, concurrency, base_url)
    check_view(view)
    from store.queries.samples import check_edition

    check_edition(o["edition"])
    with session_scope(engine) as s:
        if o["reuse"]:  # look-up and insert as one step: two `--reuse` at once make one run, not two
            begin_serialised_write(s, "create-run-reuse")
        sel = select_samples(s, o)
        examples = fewshot_examples(s, tpl, params, view)
        # validates the backend (key present, model file found) without any network call
        prompt = PromptBuilder(tpl, examples=examples)
        try:
            backend = create_backend(spec, base_url=base_url, params=backend_params(params), prompt=prompt)
        except InputError as exc:
            if "does not take" not in exc.message:
                raise
            runner_keys = ", ".join(sorted(k for k in RUNNER_PARAMS if k != "timeout"))
            raise InputError(f"{exc.message}; runner keys: {runner_keys}", field="param") from None
        stored_url = redact_url(base_url)  # secrets in the URL are never stored (execute_run takes the real one)
        if o["reuse"] and (
            same := q.find_equivalent_run(
                s,
                monitor=spec.name,
                template=tpl.name,
                template_hash=tpl.sha256,
                base_url=stored_url,
                judge=params,
                config=backend.cache_params(),
                fewshot=[e.sample_id for e in examples],
                sample_ids=sel.ids,
                view=view,
            )
        ):
            return same  # the same configuration and samples
        stored: dict[str, Any] = {"base_url": stored_url, "limit": limit, "sample_seed": o["sample_seed"]}
        stored |= {"concurrency": int(concurrency), "view": view}
        if o["sources"]:  # a full run over all sources records its view only
            stored["sources"] = sorted(set(o["sources"]))
        if sel.without_view:
            stored["without_view"] = dict(sorted(sel.without_view.items()))
        return _insert_run(s, spec, tpl, backend, stored, params, examples, sel, o["edition"], repeat)


def _checked_options(
    spec: MonitorSpec, params: dict[str, Any], limit: int | None, concurrency: int, base_url: str | None
) -> tuple[dict[str, Any], int]:
    """Validate the run options; returns ``(params, repeat)`` with the runner parameters given replaced
    by their validated values (:func:`automonitor.runs.params.normalised_params`) and ``params["repeat"]``
    dropped for a single judgement (same as older runs).

    Raises:
        InputError: a secret-looking parameter, limit < 1, concurrency < 1, a runner parameter of the
            wrong type or out of range (:class:`automonitor.runs.params.RunnerSettings`: field names it),
            a base URL that is not http(s) or given to a backend that takes none.
    """
    params = normalised_params(check_params(params))
    if limit is not None and int(limit) < 1:
        raise InputError("--limit must be at least 1", field="limit")
    if int(concurrency) < 1:
        raise InputError("--concurrency must be at least 1", field="concurrency")
    repeat = repeat_count(params)
    if repeat == 1:
        params.pop("repeat", None)  # a single judgement is the plain run (same as older runs)
    else:
        params["repeat"] = repeat
    if base_url is not None and not str(base_url).startswith(("http://", "https://")):
        raise InputError(f"--base-url must be an http(s) URL, got {redact_url(base_url)!r}", field="base-url")
    if base_url and not backend_class(spec.backend).takes_base_url:
        raise InputError(f"--base-url does not apply to the {spec.backend} backend", field="base-url")
    check_base_url(base_url, backend_class(spec.backend).key_env)
    return params, repeat


def _view_filter(
    s: Session, samples: list[SampleKey], view: str, sources: list[str] | None
) -> tuple[list[SampleKey], dict[str, int]]:
    """``samples`` of ``sources`` (all when ``None``) that have ``view``, and ``{source: samples without it}``.

    Raises:
        InputError: a named source with no sample here (field ``source``), or one whose samples all lack
            the view's part (field ``view``; :func:`automonitor.data.monitor_views.missing_part_message`).
    """
    if view == "full" and not sources:
        return samples, {}
    inputs = q.view_inputs(s, [x["id"] for x in samples])
    if sources:
        wanted = set(sources)
        found = {i["source"] for i in inputs}
        for src in sorted(wanted - found):
            raise InputError(f"source {src!r} has no test sample in this edition", field="source")
        inputs = [i for i in inputs if i["source"] in wanted]
    ok, lacking = covered(inputs, view)
    if sources:
        have = {i["source"] for i in inputs if i["id"] in set(ok)}
        for src in sorted(set(sources) - have):
            raise InputError(missing_part_message(src, view), field="view")
    keep = set(ok)
    return [x for x in samples if x["id"] in keep], lacking


def select_samples(s: Session, options: RunOptions) -> _Selection:
    """The samples a run with ``options`` judges (:func:`create_run` stores them, :func:`estimate_run` counts
    them): the ``edition``'s test samples (a stratified subset with ``limit``, drawn with ``sample_seed``)
    followed, with ``controls``, by the controls slice (with ``limit``, a seeded subset of the same share, at
    least one); with a ``view`` or ``sources``, only the samples of those sources that have the view
    (:func:`_view_filter`; the controls the same way). Options left out take their defaults.

    Raises:
        InputError: the edition has no test samples; see :func:`_view_filter`; no sample has ``view``.
        TypeError: a key that is no run option.
    """
    from store.queries.samples import control_samples

    o = with_defaults(options)
    edition, limit, sample_seed, view, sources = o["edition"], o["limit"], o["sample_seed"], o["view"], o["sources"]

    samples = q.test_samples(s, edition=edition)
    if not samples:
        raise InputError(
            f"the store has no test samples in edition {edition!r}; run `automonitor build` "
            f"or `automonitor import` first",
            field="--edition",
        )
    samples, lacking = _view_filter(s, samples, view, sources)
    if not samples:
        named = ", ".join(missing_part_message(src, view) for src in sorted(lacking))
        raise InputError(f"no test sample has the {view!r} view: {named}", field="view")
    ids = stratified_sample(samples, limit, sample_seed)
    ctrl_ids: list[str] = []
    if o["controls"]:
        ctrl = control_samples(s)
        if view != "full" or sources:
            ctrl_inputs = q.view_inputs(s, [c["id"] for c in ctrl])
            if sources:
                ctrl_inputs = [i for i in ctrl_inputs if i["source"] in set(sources)]
            ok_ctrl, _ = covered(ctrl_inputs, view)
            ctrl = [c for c in ctrl if c["id"] in set(ok_ctrl)]
        ctrl_ids = [c["id"] for c in ctrl]
        if limit is not None and ctrl_ids:
            share = max(1, round(len(ctrl_ids) * len(ids) / max(1, len(samples))))
            ctrl_ids = sorted(seeded_shuffle(ctrl_ids, sample_seed)[:share])
    return _Selection(samples=samples, ids=ids + ctrl_ids, n_controls=len(ctrl_ids), without_view=lacking)


def fewshot_examples(s: Session, tpl: Template, params: dict[str, Any], view: str) -> list[FewShotExample]:
    """The few-shot examples a run of ``tpl`` with ``params`` shows (``create_run`` stores them,
    ``estimate_run`` counts them): for a few-shot template, ``fewshot_k`` (default 4) drawn with
    ``fewshot_seed`` (default 0) from the train samples that have ``view``, shown under it
    (:func:`automonitor.runs.fewshot.view_candidates`); none otherwise.

    Raises:
        InputError: too few train samples of a label (:func:`automonitor.runs.prompts.choose_fewshot`), a
            ``fewshot_k``/``fewshot_seed`` that is no whole number, or ``fewshot_k`` < 1
            (:func:`automonitor.runs.params.fewshot_settings`).
    """
    if not tpl.fewshot:
        return []
    k, seed = fewshot_settings(params)
    return choose_fewshot(view_candidates(q.train_examples(s), view), k=k, seed=seed)


def _insert_run(
    s: Session,
    spec: MonitorSpec,
    tpl: Template,
    backend: Backend,
    options: dict[str, Any],
    judge: dict[str, Any],
    examples: list[FewShotExample],
    sel: _Selection,
    edition: str,
    repeat: int,
) -> str:
    """Insert the ``pending`` run and its pending predictions; returns the new run id. ``options``
    (base_url, limit, sample_seed, concurrency) go to ``Run.params`` with the backend, model, template
    version, few-shot ids, judge parameters, backend config, max tokens, strata and controls."""
    run_id = stamped_id("run")  # run_YYYYmmdd_HHMMSS_<6 hex> (UTC)
    q.add_run(
        s,
        q.get_or_create_monitor(s, spec.name, spec.backend, spec.model, options["base_url"]),
        run_id=run_id,
        template=tpl.name,
        template_hash=tpl.sha256,
        kind="measured",
        status="pending",
        n=len(sel.ids),
        edition=edition,
        params={
            "backend": spec.backend,
            "model": backend.model,
            **options,
            "template_version": tpl.version,
            "fewshot": [e.sample_id for e in examples],
            "judge": judge,
            "config": backend.cache_params(),
            "price": backend.price_info().to_json(),
            "max_tokens": getattr(backend, "max_tokens", None),
            "strata": stratum_counts(sel.samples, sel.ids),
            "controls": sel.n_controls,
        },
    )
    s.flush()
    q.insert_pending(s, run_id, sel.ids, repeats=repeat)
    return run_id
