"""Estimate a run before starting it (no network, nothing written)."""

from __future__ import annotations

from typing import Unpack

from sqlalchemy.engine import Engine

from automonitor.jsontypes import JSONObject
from automonitor.runs.cache import view_text
from automonitor.runs.monitors import backend_class, parse_monitor_spec
from automonitor.runs.monitors.pricing import resolve_price
from automonitor.runs.prompts import PromptBuilder, load_template
from automonitor.runs.params import backend_params, check_params, normalised_params
from automonitor.runs.runner.create import fewshot_examples, select_samples
from automonitor.runs.runner.options import RunOptions, with_defaults
from store import session_scope
from store.queries.samples import check_edition
from store.queries import runs as q


def estimate_run(engine: Engine, monitor: str, template: str, **options: Unpack[RunOptions]) -> JSONObject:
    """Estimate a run before starting it (no network, nothing written).

    ``options`` are the run's (:class:`~automonitor.runs.runner.options.RunOptions`, the words
    :func:`~automonitor.runs.runner.create.create_run` takes). The samples are those ``create_run`` would judge
    with the same options (:func:`~automonitor.runs.runner.create.select_samples`): the stratified test subset
    followed by the benign-only controls slice (a seeded share of it with ``limit``), so tokens and cost
    include the controls; under a monitor ``view`` or with ``sources``, the samples of those sources that have
    the view, their prompts made of the view's text; for a few-shot template, the examples ``create_run``
    would show (``fewshot_k``/``fewshot_seed`` in ``params``:
    :func:`~automonitor.runs.runner.create.fewshot_examples`).

    Returns ``{"n", "n_test", "n_controls", "prompt_tokens", "max_output_tokens", "est_cost_usd", "price_per_mtok": [in, out],
    "price_known"}``. Token counts come from the backend class's
    :meth:`~automonitor.runs.monitors.backend.Backend.estimate_tokens` with ``params`` (the run's ``--param``
    values: ``max_tokens``, truncation budgets, ...): prompt tokens are characters/4 of the rendered prompts
    (0 for ``rules``), output tokens n x the answer budget; cost = tokens x the list price of
    exact model id in ``automonitor/data/prices.json`` or ``--param price_in/price_out``
    (:func:`automonitor.runs.monitors.pricing.resolve_price`; 0 for local backends). An unknown price gives
    ``price_known: false`` and ``est_cost_usd: null`` (unknown, not 0).

    Raises:
        InputError: unknown backend/template, bad limit, empty test split, bad parameter (a runner parameter
            of the wrong type or out of range: :func:`automonitor.runs.params.runner_settings`).
        TypeError: a keyword that is no run option.
    """
    spec = parse_monitor_spec(monitor)
    tpl = load_template(template)
    o = with_defaults(options)
    params = normalised_params(check_params(dict(o["params"] or {})))  # the runner's own, as create_run checks them
    check_edition(o["edition"])
    with session_scope(engine) as s:
        sel = select_samples(s, o)
        ids = sel.ids
        texts = {sid: view_text(t, o["view"]) for sid, t in q.sample_texts(s, ids).items()}
        examples = fewshot_examples(s, tpl, dict(params), o["view"])
    builder = PromptBuilder(tpl, examples=examples)
    cls, judge = backend_class(spec.backend), backend_params(dict(params))
    prompt_tokens, max_out = cls.estimate_tokens(spec.model, judge, builder, [texts[i] for i in ids if i in texts])
    settings = cls.parse_params(judge)
    pr = resolve_price(spec.model, local=cls.is_local, price_in=settings.price_in, price_out=settings.price_out)
    cost = (prompt_tokens * pr.input + max_out * pr.output) / 1_000_000
    return {
        "n": len(ids),
        "n_test": len(ids) - sel.n_controls,
        "n_controls": sel.n_controls,
        "prompt_tokens": int(prompt_tokens),
        "max_output_tokens": int(max_out),
        "est_cost_usd": round(cost, 6) if pr.known else None,
        "price_per_mtok": [pr.input, pr.output],
        "price_known": pr.known,
        "price_source": pr.source,
    }
