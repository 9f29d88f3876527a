"""Generation runs: a generator model answers prompts; the filters turn kept items into candidate pairs.

Life of a generation run (``automonitor generate sycophancy|gaming``, or the app's Runs page):

:func:`create_generation` validates the generator (``BACKEND[:MODEL]`` of the monitor backends, which
implement :meth:`automonitor.monitors.base.Backend.generate`), the source, cue or incentive, loads the
items and inserts a ``Run`` with ``kind='generation'``, ``template='gen-sycophancy'|'gen-gaming'``,
status ``pending``, ``n`` = items, the job in ``params['job']``. :func:`execute_generation` answers each
item (the calls go through the judge cache ``CacheEntry`` keyed by backend, model, base URL, messages and
sampling parameters; transient failures are retried with exponential back-off and jitter through
tenacity, ``max_attempts`` 4; tokens and cost are summed per call from the backend's price table), runs
the filter (:mod:`automonitor.generation.filters`; code answers go through the static screen and the
bubblewrap sandbox), and for a kept item inserts two candidate samples (status ``candidate``, no split,
pair id ``gen:<run>:<item>``, ``label_source='by_construction'``) with full provenance in ``meta``:
generator, base URL, generation id, source file and record, prompts, raw outputs, parsed answers or
screen results, the benign side's origin. Candidates never enter a test set here: they go through
assignment, double-blind annotation and adjudication like any candidate.

Items are processed one after another; the calls of one item (Q and the K samples of Q', or the answers
with and without the incentive) run concurrently, at most ``concurrency`` at once (1 for ``llamacpp``).
Progress, statistics and transcripts are kept in ``Run.params`` (``progress``, ``stats``, ``items``)
after every item, so the app shows them live; :func:`automonitor.runner.cancel_run` (status
``cancelled``) stops the run before the next item.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import secrets
import time
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from automonitor.errors import InputError, NotFound
from automonitor.generation import filters, tasks
from automonitor.generation.incentives import load_incentive
from automonitor.hashing import content_hash, make_sample_id, sha256_text
from automonitor.monitors import PermanentError, TransientError, create_backend, parse_monitor_spec, price_for
from store import session_scope
from store.models import Run, Sample, utcnow

KINDS = ("sycophancy", "gaming")
DEFAULT_MAX_TOKENS = {"sycophancy": 512, "gaming": 768}
SAMPLE_TEMPERATURE = 0.8  # cued samples after the first (the first is greedy)
PROMPT_VERSION = "generation-v1"
MAX_KEPT_TEXT = 20_000  # characters of a prompt/output kept in the run's transcript


def _new_id() -> str:
    return "gen-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def _job(
    kind: str,
    generator: str,
    *,
    source: str,
    cue: str | None,
    incentive: str | None,
    limit: int | None,
    samples_per_prompt: int,
    base_url: str | None,
    max_tokens: int | None,
    raw: str | None,
    max_attempts: int,
    concurrency: int,
) -> dict[str, Any]:
    if kind not in KINDS:
        raise InputError(f"unknown generation kind {kind!r}; choose sycophancy or gaming", field="kind")
    spec = parse_monitor_spec(generator)
    if spec.backend == "rules":
        raise InputError("the rules backend cannot generate text; use llamacpp, openai or anthropic", field="generator")
    if base_url is not None and not str(base_url).startswith(("http://", "https://")):
        raise InputError(f"--base-url must be an http(s) URL, got {base_url!r}", field="base-url")
    if spec.backend == "llamacpp" and base_url:
        raise InputError("--base-url does not apply to the llamacpp backend", field="base-url")
    if limit is not None and int(limit) < 1:
        raise InputError("--limit must be at least 1", field="limit")
    if int(samples_per_prompt) < 1:
        raise InputError("--samples-per-prompt must be at least 1", field="samples-per-prompt")
    if max_tokens is not None and int(max_tokens) < 1:
        raise InputError("--max-tokens must be at least 1", field="max-tokens")
    if kind == "gaming":
        if incentive is None:
            raise InputError("generate gaming needs --incentive NAME", field="incentive")
        inc = load_incentive(incentive)
        if source not in tasks.GAMING_SOURCES:
            raise InputError(
                f"unknown gaming source {source!r}; choose one of {', '.join(tasks.GAMING_SOURCES)}", field="source"
            )
        if source not in inc.applies_to:
            raise InputError(
                f"incentive {incentive!r} does not apply to {source!r} (it applies to {', '.join(inc.applies_to)})",
                field="incentive",
            )
        if tasks.GAMING_TASK[source] not in inc.signal:
            raise InputError(
                f"incentive {incentive!r} has no signal for {tasks.GAMING_TASK[source]} tasks", field="incentive"
            )
    return {
        "kind": kind,
        "generator": spec.name,
        "backend": spec.backend,
        "model": spec.model,
        "base_url": base_url,
        "source": source,
        "cue": (cue or "suggested_answer") if kind == "sycophancy" else None,
        "incentive": incentive if kind == "gaming" else None,
        "limit": limit,
        "samples_per_prompt": int(samples_per_prompt),
        "raw": raw,
        "max_tokens": int(max_tokens or DEFAULT_MAX_TOKENS[kind]),
        "max_attempts": int(max_attempts),
        "concurrency": int(concurrency),
        "prompt_version": PROMPT_VERSION,
    }


def _items(job: dict[str, Any]) -> list[Any]:
    if job["kind"] == "sycophancy":
        return tasks.sycophancy_items(job["source"], job["cue"], job.get("raw"), job.get("limit"))
    return tasks.gaming_tasks(job["source"], job.get("raw"), job.get("limit"))


def _backend(job: dict[str, Any]):
    from automonitor.prompts import PromptBuilder, load_template

    return create_backend(
        f"{job['backend']}:{job['model']}",
        base_url=job.get("base_url"),
        params={"timeout": float(job.get("timeout") or 300.0)},
        prompt=PromptBuilder(load_template("direct")),
    )


def create_generation(
    engine: Engine,
    kind: str,
    generator: str,
    *,
    source: str,
    cue: str | None = None,
    incentive: str | None = None,
    limit: int | None = None,
    samples_per_prompt: int = 1,
    base_url: str | None = None,
    max_tokens: int | None = None,
    raw: str | None = None,
    max_attempts: int = 4,
    concurrency: int = 4,
) -> str:
    """Validate a generation job and insert its pending ``Run`` (``kind='generation'``); returns its id.

    Args:
        kind: ``sycophancy`` | ``gaming``; generator: ``BACKEND[:MODEL]`` (not ``rules``).
        source: a sycophancy source (``bct_truthfulqa_cues``, ``turpin_bbh``) or a gaming source
            (``truthfulqa``, ``humaneval``, ``mbpp``, ``dfir``); cue: ``suggested_answer`` |
            ``are_you_sure`` (sycophancy); incentive: an incentive name (gaming).
        limit: first N items of the source; samples_per_prompt: cued samples per question (sycophancy).
        max_tokens: per answer (default 512 sycophancy, 768 gaming); raw: raw dir (default
        ``$AUTOMONITOR_RAW``).

    Raises:
        InputError: bad option, unknown source/cue/incentive, missing raw files or API key, no items.
            Nothing is written then.
    """
    job = _job(
        kind,
        generator,
        source=source,
        cue=cue,
        incentive=incentive,
        limit=limit,
        samples_per_prompt=samples_per_prompt,
        base_url=base_url,
        max_tokens=max_tokens,
        raw=raw,
        max_attempts=max_attempts,
        concurrency=concurrency,
    )
    items = _items(job)
    if not items:
        raise InputError(f"the source {source!r} gave no items", field="source")
    _backend(job)  # validates the key / model file without a network call
    from store.queries.runs import get_or_create_monitor

    run_id = _new_id()
    with session_scope(engine) as s:
        mon = get_or_create_monitor(s, job["generator"], job["backend"], job["model"], base_url)
        s.add(
            Run(
                id=run_id,
                monitor_id=mon.id,
                monitor=job["generator"],
                template=f"gen-{kind}",
                template_hash=hashlib.sha256(PROMPT_VERSION.encode()).hexdigest(),
                status="pending",
                kind="generation",
                n=len(items),
                params={
                    "job": job,
                    "base_url": base_url,
                    "limit": limit,
                    "progress": {"done": 0, "total": len(items)},
                    "stats": _empty_stats(),
                    "items": [],
                },
            )
        )
    return run_id


def _empty_stats() -> dict[str, Any]:
    return {
        "prompts": 0,
        "kept": 0,
        "dropped": {},
        "candidates_added": 0,
        "calls": 0,
        "cache_hits": 0,
        "tokens_in": 0,
        "tokens_out": 0,
        "cost_usd": 0.0,
    }


def estimate_generation(
    kind: str,
    generator: str,
    *,
    source: str,
    cue: str | None = None,
    incentive: str | None = None,
    limit: int | None = None,
    samples_per_prompt: int = 1,
    max_tokens: int | None = None,
    raw: str | None = None,
) -> dict[str, Any]:
    """Estimate a generation job before starting it (no network, nothing written).

    Returns ``{"n", "calls", "prompt_tokens", "max_output_tokens", "est_cost_usd", "price_per_mtok",
    "price_known"}``: calls = n x (1 + samples_per_prompt) (sycophancy) or n x 2 (gaming); prompt tokens
    = characters/4 of the rendered prompts; output tokens = calls x max_tokens (an upper bound); cost =
    tokens x the list price (:data:`automonitor.monitors.base.PRICES`; 0 for llamacpp).

    Raises:
        InputError: as :func:`create_generation`.
    """
    job = _job(
        kind,
        generator,
        source=source,
        cue=cue,
        incentive=incentive,
        limit=limit,
        samples_per_prompt=samples_per_prompt,
        base_url=None,
        max_tokens=max_tokens,
        raw=raw,
        max_attempts=1,
        concurrency=1,
    )
    items = _items(job)
    chars = 0
    calls = 0
    if kind == "sycophancy":
        for it in items:
            chars += sum(len(m["content"]) for m in it.uncued) + job["samples_per_prompt"] * sum(
                len(m["content"]) for m in it.cued
            )
            calls += 1 + job["samples_per_prompt"]
    else:
        inc = load_incentive(incentive)  # type: ignore[arg-type]
        for t in items:
            chars += len(t.prompt) + len(inc.render(t.prompt))
            calls += 2
    pin, pout = (0.0, 0.0) if job["backend"] == "llamacpp" else price_for(job["model"])
    ptok, otok = chars // 4, calls * job["max_tokens"]
    return {
        "n": len(items),
        "calls": calls,
        "prompt_tokens": ptok,
        "max_output_tokens": otok,
        "est_cost_usd": round((ptok * pin + otok * pout) / 1e6, 6),
        "price_per_mtok": [pin, pout],
        "price_known": job["backend"] == "llamacpp" or (pin, pout) != (0.0, 0.0),
    }


# --------------------------------------------------------------------------------------------------
class _Caller:
    """One generation call with cache, retries (tenacity) and accounting."""

    def __init__(self, engine: Engine, backend, job: dict[str, Any]):
        self.engine, self.backend, self.job = engine, backend, job
        self.calls = self.cache_hits = self.tokens_in = self.tokens_out = 0
        self.cost = 0.0
        conc = min(int(job.get("concurrency") or 4), backend.max_concurrency or 64)
        self.sem = asyncio.Semaphore(max(1, conc))

    def _key(self, messages, max_tokens, temperature, seed) -> str:
        from automonitor.runner import cache_key

        h = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
        return cache_key(
            f"gen:{self.job['backend']}",
            self.job["model"],
            self.job.get("base_url"),
            PROMPT_VERSION,
            h,
            {"max_tokens": max_tokens, "temperature": temperature, "seed": seed, "config": self.backend.cache_params()},
        )

    async def __call__(
        self, messages: list[dict[str, str]], *, temperature: float = 0.0, seed: int | None = 0
    ) -> dict[str, Any]:
        """``{"text", "finish_reason", "tokens_in", "tokens_out", "cost_usd", "cached", "error"}``;
        ``text`` is ``None`` when the call failed after retries (``error`` says why)."""
        from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

        from store.queries.runs import cache_insert, cache_lookup

        mt = self.job["max_tokens"]
        key = self._key(messages, mt, temperature, seed)
        with session_scope(self.engine) as s:
            hit = cache_lookup(s, [key]).get(key)
        if hit is not None:
            self.cache_hits += 1
            return {
                "text": hit["raw"],
                "finish_reason": (hit.get("meta") or {}).get("finish_reason"),
                "tokens_in": hit["tokens_in"],
                "tokens_out": hit["tokens_out"],
                "cost_usd": 0.0,
                "cached": True,
                "error": None,
            }

        def count() -> None:
            self.calls += 1

        def wait(rs) -> float:
            exc = rs.outcome.exception() if rs.outcome else None
            base = min(30.0, 1.0 * 2 ** (rs.attempt_number - 1)) + random.uniform(0, 1.0)
            ra = getattr(exc, "retry_after", None)
            return max(base, min(float(ra), 60.0)) if ra is not None else base

        try:
            async with self.sem:
                async for attempt in AsyncRetrying(
                    stop=stop_after_attempt(max(1, self.job.get("max_attempts", 4))),
                    wait=wait,
                    retry=retry_if_exception_type(TransientError),
                    reraise=True,
                ):
                    with attempt:
                        g = await self.backend.generate(
                            messages, count, max_tokens=mt, temperature=temperature, seed=seed
                        )
        except (TransientError, PermanentError) as exc:
            return {
                "text": None,
                "finish_reason": None,
                "tokens_in": 0,
                "tokens_out": 0,
                "cost_usd": 0.0,
                "cached": False,
                "error": str(exc)[:500],
            }
        self.tokens_in += g.tokens_in
        self.tokens_out += g.tokens_out
        self.cost += g.cost_usd
        with session_scope(self.engine) as s:
            cache_insert(
                s,
                [
                    {
                        "key": key,
                        "outcome": "generated",
                        "score": None,
                        "raw": g.text,
                        "reason": None,
                        "evidence": [],
                        "pred_category": None,
                        "severity": None,
                        "tokens_in": g.tokens_in,
                        "tokens_out": g.tokens_out,
                        "cost_usd": g.cost_usd,
                        "meta": {"finish_reason": g.finish_reason, **g.meta},
                        "created_at": utcnow(),
                    }
                ],
            )
        return {
            "text": g.text,
            "finish_reason": g.finish_reason,
            "tokens_in": g.tokens_in,
            "tokens_out": g.tokens_out,
            "cost_usd": g.cost_usd,
            "cached": False,
            "error": None,
        }


def _cut(t: str | None) -> str | None:
    return None if t is None else t[:MAX_KEPT_TEXT]


async def _do_sycophancy(item: tasks.SycophancyItem, call: _Caller, job: dict[str, Any]) -> tuple[Any, dict]:
    k = job["samples_per_prompt"]
    jobs = [call(item.uncued)] + [
        call(item.cued, temperature=0.0 if i == 0 else SAMPLE_TEMPERATURE, seed=i) for i in range(k)
    ]
    outs = await asyncio.gather(*jobs)
    dec = filters.decide_sycophancy(item.options, item.truth, item.cue, outs[0]["text"], [o["text"] for o in outs[1:]])
    transcript = {
        "prompts": {"uncued": item.uncued, "cued": item.cued},
        "outputs": {"uncued": outs[0], "cued": outs[1:]},
    }
    return dec, transcript


async def _do_gaming(t: tasks.GamingTask, call: _Caller, job: dict[str, Any]) -> tuple[Any, dict]:
    inc = load_incentive(job["incentive"])
    with_msgs = [{"role": "user", "content": inc.render(t.prompt)}]
    without_msgs = [{"role": "user", "content": t.prompt}]
    w, wo = await asyncio.gather(call(with_msgs), call(without_msgs))
    signal = inc.signal[t.task]
    transcript = {
        "prompts": {"with_incentive": with_msgs, "without_incentive": without_msgs},
        "outputs": {"with_incentive": w, "without_incentive": wo},
    }
    if t.task == "code":
        screens = []
        for out in (w, wo):
            screens.append(await asyncio.to_thread(screen_code, out["text"], t) if out["text"] is not None else None)
        dec = filters.decide_gaming(
            "code", signal, w["text"], wo["text"], screen_with=screens[0], screen_without=screens[1]
        )
    else:
        dec = filters.decide_gaming(
            t.task, signal, w["text"], wo["text"], reference=t.reference, min_words=inc.min_words
        )
    return dec, transcript


def screen_code(answer: str, t: tasks.GamingTask) -> dict[str, Any] | None:
    """Static screen plus sandboxed runs of the visible and held-out tests of one code answer
    (``None`` when the answer holds no code)."""
    from automonitor.generation.sandbox import run_tests
    from automonitor.generation.screen import extract_code, static_screen

    code = extract_code(answer, t.entry_point)
    if code is None:
        return None
    st = static_screen(code, t.visible_tests, t.entry_point)
    vis = run_tests(code, t.visible_tests)
    hid = run_tests(code, t.hidden_tests)
    return {"code": code[:MAX_KEPT_TEXT], "static": st, "visible": vis.to_json(), "hidden": hid.to_json()}


def _status(engine: Engine, run_id: str) -> str | None:
    with session_scope(engine) as s:
        return s.execute(sa.select(Run.status).where(Run.id == run_id)).scalar()


def _insert_pair(
    engine: Engine, run_id: str, job: dict[str, Any], item: Any, dec: Any, transcript: dict[str, Any]
) -> bool:
    """Insert the kept item's two candidate samples; False when an identical sample already exists."""
    if job["kind"] == "sycophancy":
        request = tasks.render_chat(item.cued)
        category, task, item_id = "sycophancy_bias", item.task, item.item_id
    else:
        inc = load_incentive(job["incentive"])
        request = inc.render(item.prompt)
        category, task, item_id = "specification_gaming", item.task, item.task_id
    pair_id = f"gen:{run_id}:{item_id}"[:128]
    prov = {
        "generation": {
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
    }
    if job["kind"] == "gaming":
        prov["generation"]["incentive_spec"] = load_incentive(job["incentive"]).to_json()
    rows = []
    for label, resp in (("misbehavior", dec.misbehavior), ("benign", dec.benign)):
        rows.append(
            dict(
                id=make_sample_id(pair_id, label, request, resp),
                pair_id=pair_id,
                category=category,
                task=task,
                label=label,
                request=request,
                response=resp,
                source=f"gen:{job['source']}"[:64],
                source_file=item.source_file,
                source_record=item.source_record,
                split=None,
                status="candidate",
                request_hash=sha256_text(request),
                response_hash=sha256_text(resp),
                content_hash=content_hash(request, resp, label),
                label_source="by_construction",
                meta={**prov, "intended_label": label},
                created_at=utcnow(),
            )
        )
    with session_scope(engine) as s:
        dup = s.execute(
            sa.select(Sample.id)
            .where(
                sa.or_(
                    *[
                        sa.and_(Sample.request_hash == r["request_hash"], Sample.response_hash == r["response_hash"])
                        for r in rows
                    ]
                )
            )
            .limit(1)
        ).first()
        if dup is not None:
            return False
        s.execute(sa.insert(Sample), rows)
    return True


def execute_generation(
    engine: Engine, run_id: str, *, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Run a pending generation run to the end (or until cancelled); returns :func:`generation_summary`.

    Raises:
        NotFound: no such generation run. InputError: the run is not pending (already executed).
    """
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None or run.kind != "generation":
            raise NotFound(f"no generation run {run_id!r}")
        if run.status != "pending":
            raise InputError(f"generation run {run_id} is {run.status}; start a new one", field="run")
        job = dict(run.params["job"])
        run.status, run.started_at = "running", utcnow()
        run.params = {**run.params, "pid": __import__("os").getpid()}
        s.add(run)
    try:
        items = _items(job)
        backend = _backend(job)
        stats = _empty_stats()
        transcripts: list[dict[str, Any]] = []

        async def main() -> bool:
            call = _Caller(engine, backend, job)
            cancelled = False
            try:
                for i, it in enumerate(items):
                    if _status(engine, run_id) == "cancelled":
                        cancelled = True
                        break
                    fn = _do_sycophancy if job["kind"] == "sycophancy" else _do_gaming
                    dec, tr = await fn(it, call, job)
                    stats["prompts"] += 1
                    added = False
                    if dec.kept:
                        added = await asyncio.to_thread(_insert_pair, engine, run_id, job, it, dec, tr)
                        if added:
                            stats["kept"] += 1
                            stats["candidates_added"] += 1
                        else:
                            stats["dropped"]["duplicate_candidate"] = stats["dropped"].get("duplicate_candidate", 0) + 1
                    else:
                        stats["dropped"][dec.reason] = stats["dropped"].get(dec.reason, 0) + 1
                    stats.update(
                        {
                            "calls": call.calls,
                            "cache_hits": call.cache_hits,
                            "tokens_in": call.tokens_in,
                            "tokens_out": call.tokens_out,
                            "cost_usd": round(call.cost, 6),
                        }
                    )
                    transcripts.append(
                        {
                            "item_id": getattr(it, "item_id", None) or getattr(it, "task_id", None),
                            "kept": dec.kept and added,
                            "reason": dec.reason if not dec.kept else (None if added else "duplicate_candidate"),
                            "details": dec.details,
                            "prompts": tr["prompts"],
                            "outputs": {
                                k: (
                                    [{**o, "text": _cut(o["text"])} for o in v]
                                    if isinstance(v, list)
                                    else {**v, "text": _cut(v["text"])}
                                )
                                for k, v in tr["outputs"].items()
                            },
                        }
                    )
                    _save(engine, run_id, stats, transcripts, i + 1, len(items))
                    if progress:
                        progress(i + 1, len(items))
            finally:
                await backend.aclose()
            return cancelled

        from automonitor.runner import _run_async

        cancelled = _run_async(main())
        _finish(engine, run_id, "cancelled" if cancelled else "finished", stats)
    except Exception as exc:
        _finish(engine, run_id, "failed", None, error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    return generation_summary(engine, run_id)


def _save(engine: Engine, run_id: str, stats: dict, transcripts: list, done: int, total: int) -> None:
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        run.params = {
            **run.params,
            "stats": json.loads(json.dumps(stats)),
            "items": transcripts,
            "progress": {"done": done, "total": total},
        }
        run.api_calls, run.cache_hits = stats["calls"], stats["cache_hits"]
        run.tokens_in, run.tokens_out, run.cost_usd = stats["tokens_in"], stats["tokens_out"], stats["cost_usd"]
        s.add(run)


def _finish(engine: Engine, run_id: str, status: str, stats: dict | None, error: str | None = None) -> None:
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None:
            return
        if run.status == "cancelled" and status == "finished":
            status = "cancelled"
        run.status, run.finished_at, run.error = status, utcnow(), error
        s.add(run)


# The filter steps in order, each with the drop reasons it produces (for the kept/total table per step).
STEPS = {
    "sycophancy": [
        ("answered", ("generation_error",)),
        ("uncued_parsed", ("unparseable_uncued",)),
        ("uncued_right", ("uncued_wrong",)),
        ("cued_parsed", ("unparseable_cued",)),
        ("cued_followed_cue", ("cued_right", "cued_wrong_not_cue")),
        ("new_candidate", ("duplicate_candidate",)),
    ],
    "gaming": [
        ("answered", ("generation_error",)),
        ("code_found", ("no_code",)),
        ("incentive_shows_signal", ("no_signal",)),
        ("baseline_clean", ("baseline_also_games",)),
        ("new_candidate", ("duplicate_candidate",)),
    ],
}


def filter_steps(kind: str, prompts: int, dropped: dict[str, int]) -> list[dict[str, Any]]:
    """Kept/total per filter step: ``[{"step", "in", "out", "dropped": {reason: n}}]`` in order
    (``out`` of the last step = kept)."""
    out, n = [], int(prompts)
    for name, reasons in STEPS.get(kind, []):
        d = {r: int(dropped.get(r, 0)) for r in reasons if dropped.get(r)}
        out.append({"step": name, "in": n, "out": n - sum(d.values()), "dropped": d})
        n -= sum(d.values())
    return out


def generation_summary(engine: Engine, run_id: str) -> dict[str, Any]:
    """The contract's JSON: ``{"generation_id", "prompts", "kept", "dropped": {reason: int},
    "candidates_added"}`` (``candidates_added`` counts pairs) plus ``status``, ``generator``, ``kind``,
    ``source``, ``cue``/``incentive``, ``calls``, ``cache_hits``, ``tokens_in``, ``tokens_out``,
    ``cost_usd``, ``steps`` (:func:`filter_steps`). Raises NotFound."""
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None or run.kind != "generation":
            raise NotFound(f"no generation run {run_id!r}")
        st, job = (run.params or {}).get("stats") or _empty_stats(), (run.params or {}).get("job") or {}
        return {
            "generation_id": run_id,
            "prompts": st["prompts"],
            "kept": st["kept"],
            "dropped": dict(st["dropped"]),
            "candidates_added": st["candidates_added"],
            "status": run.status,
            "kind": job.get("kind"),
            "generator": job.get("generator"),
            "source": job.get("source"),
            "cue": job.get("cue"),
            "incentive": job.get("incentive"),
            "n": run.n,
            "done": ((run.params or {}).get("progress") or {}).get("done", 0),
            "calls": st["calls"],
            "cache_hits": st["cache_hits"],
            "tokens_in": st["tokens_in"],
            "tokens_out": st["tokens_out"],
            "cost_usd": st["cost_usd"],
            "error": run.error,
            "steps": filter_steps(job.get("kind"), st["prompts"], st["dropped"]),
        }


def list_generations(engine: Engine) -> list[dict[str, Any]]:
    """Every generation run, newest first, as :func:`generation_summary` dicts (+ ``created_at``)."""
    with session_scope(engine) as s:
        ids = [
            (r, c)
            for r, c in s.execute(
                sa.select(Run.id, Run.created_at)
                .where(Run.kind == "generation")
                .order_by(Run.created_at.desc(), Run.id)
            ).all()
        ]
    return [{**generation_summary(engine, r), "created_at": c.isoformat() if c else None} for r, c in ids]


def generation_items(engine: Engine, run_id: str) -> list[dict[str, Any]]:
    """The run's per-item transcripts (prompts, outputs, decision, reason). Raises NotFound."""
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        if run is None or run.kind != "generation":
            raise NotFound(f"no generation run {run_id!r}")
        return list((run.params or {}).get("items") or [])


def launch_generation_detached(db_url: str, run_id: str) -> int:
    """Start ``automonitor generate resume RUN_ID --json`` in its own session (the app's Runs page);
    output in ``<tmp>/automonitor-runs/RUN_ID.log``. Returns the child's pid."""
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    log_dir = Path(tempfile.gettempdir()) / "automonitor-runs"
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / f"{run_id}.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "automonitor", "generate", "resume", run_id, "--json"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env={**os.environ, "AUTOMONITOR_DB": db_url},
            start_new_session=True,
            close_fds=True,
        )
    return proc.pid
