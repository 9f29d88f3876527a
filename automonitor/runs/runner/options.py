"""The keyword options of a run, declared once: :func:`~automonitor.runs.runner.create.create_run` and
:func:`~automonitor.runs.runner.estimate.estimate_run` both take them (``**options: Unpack[RunOptions]``), so an
estimate is asked with exactly the words of the run it estimates."""

from __future__ import annotations

from typing import Final, TypedDict

from automonitor.jsontypes import JSONObject


class RunOptions(TypedDict, total=False):
    """The keyword options of a run; every key may be left out (its default: :data:`RUN_DEFAULTS`).

    Keys:
        limit: stratified subset size (category x task x label, pairs kept together); ``None`` (default): all.
        sample_seed: seed of the subset choice (default 0).
        params: backend/runner parameters (e.g. ``structured``, ``max_tokens``, ``max_attempts``,
            ``timeout``, ``fewshot_k``, ``repeat``, ``price_in``/``price_out``); never API keys. ``repeat`` K
            (1..50, default 1) judges each sample K times: predictions with repeat index 0..K-1, repeat k sent
            with seed ``seed + k`` (backends with a seed) and cached under its own key (repeat 0 has the plain
            key, so a K-repeat run reuses a single run's verdicts and vice versa). Default ``None``: none.
        edition: test-set edition judged (``paper`` (default) | ``verified`` | ...), recorded as ``run.edition``.
        controls: also judge the benign-only ``controls`` slice when the store has one (with ``limit``, a
            seeded subset of the same share); reports give FAR on controls separately. Default ``True``.
        view: the monitor view (:mod:`automonitor.data.monitor_views`, default ``full``): the monitor is shown
            each sample's rendering under it; only samples that have the view are judged (the others are
            counted in ``Run.params["without_view"]`` by source), ``limit`` drawn among them. Recorded as
            ``Run.params["view"]``; part of the cache key.
        sources: judge only the samples of these sources (``None`` (default): all).
        base_url: server URL for ``openai``/``anthropic`` (OpenAI-compatible servers, replay servers);
            stored with its secrets redacted (:func:`automonitor.runs.params.redact_url`: query values such
            as ``key``/``token``/``sig`` become ``***``; pass the real URL to ``execute_run``). A URL with
            userinfo credentials (``user:key@host``) is refused. Default ``None``.
        concurrency: maximum concurrent judge calls (>= 1, default 8).
        reuse: return the id of an existing run with the same monitor, template (same hash), base URL,
            parameters, few-shot examples and exactly the same samples, if there is one (any status: an
            unfinished one is then resumed by ``execute_run``), instead of creating a new run. The look-up
            and the insert are one serialised write (:func:`store.queries.locks.begin_serialised_write`), so
            two ``reuse`` creations started together make one run. Default ``False``.

    An estimate reads the options that choose the samples and their prompts (``limit``, ``sample_seed``,
    ``params``, ``edition``, ``controls``, ``view``, ``sources``); ``base_url``, ``concurrency`` and ``reuse``
    change neither, so it takes and ignores them.
    """

    limit: int | None
    sample_seed: int
    params: JSONObject | None
    edition: str
    controls: bool
    view: str
    sources: list[str] | None
    base_url: str | None
    concurrency: int
    reuse: bool


#: the value of each option left out
RUN_DEFAULTS: Final[RunOptions] = {
    "limit": None,
    "sample_seed": 0,
    "params": None,
    "edition": "paper",
    "controls": True,
    "view": "full",
    "sources": None,
    "base_url": None,
    "concurrency": 8,
    "reuse": False,
}


def with_defaults(options: RunOptions) -> RunOptions:
    """``options`` over :data:`RUN_DEFAULTS`: every key present.

    Raises:
        TypeError: a key that is no run option (the error Python gives for an unexpected keyword argument).
    """
    unknown = sorted(set(options) - set(RUN_DEFAULTS))
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r} (run options: {', '.join(RUN_DEFAULTS)})")
    return {**RUN_DEFAULTS, **options}
