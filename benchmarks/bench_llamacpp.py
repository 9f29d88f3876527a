"""Local monitor speed: ``llamacpp`` (packaged Gemma 3 270M Q4_K_M GGUF, 2 threads) samples per second
and prompt tokens per second, with and without the prefix cache.

With the prefix cache the template's shared instruction prefix is evaluated once and every sample only
evaluates its own tokens; without it every sample re-evaluates the whole prompt. Samples are a
stratified subset of the store's test split when ``AUTOMONITOR_DB`` holds one (``--limit``), else
generated fixture pairs. Prompt tokens/s counts the tokens actually evaluated; "effective" tokens/s
counts the full prompt length per sample (prefix included), i.e. the work the cache saves.

Usage: python benchmarks/bench_llamacpp.py [--limit 24] [--template direct] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))


def load_items(limit: int):
    """``(items, few-shot examples, origin)``."""
    from automonitor.runs.monitors.judgement import Item
    from automonitor.runs.prompts import choose_fewshot

    if os.environ.get("AUTOMONITOR_DB"):
        from automonitor.runs.sampling import stratified_sample
        from store import get_engine, init_db, session_scope
        from store.queries.runs import sample_texts, test_samples, train_examples

        engine = init_db(get_engine())
        with session_scope(engine) as s:
            rows = test_samples(s)
            if rows:
                ids = stratified_sample(rows, limit, 0)
                texts = sample_texts(s, ids)
                train = train_examples(s)
                examples = choose_fewshot(train) if train else []
                return ([Item(i, texts[i]["request"], texts[i]["response"]) for i in ids], examples, "store test split")
    from servers.data import pair_rows

    rows = pair_rows((limit + 1) // 2)[:limit]
    train = pair_rows(4, "train", offset=10_000)
    return ([Item(r["id"], r["request"], r["response"]) for r in rows], choose_fewshot(train), "fixture pairs")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=24)
    ap.add_argument("--template", default="direct")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    from automonitor.runs.monitors.llamacpp import LlamaCppBackend, load_llama, resolve_model_path
    from automonitor.runs.prompts import PromptBuilder, load_template

    items, examples, origin = load_items(a.limit)
    load_llama(resolve_model_path(None), 4096, a.threads)  # load once, outside the timings
    print(
        f"model: gemma-3-270m Q4_K_M, n_threads={a.threads}, template={a.template}, {len(items)} samples from {origin}"
    )
    results = {}
    for cache in (True, False):
        b = LlamaCppBackend(
            None,
            None,
            {"prefix_cache": cache, "n_threads": a.threads},
            PromptBuilder(load_template(a.template), examples=examples),
        )
        b.judge_sync(items[0])  # warm-up (prefix evaluated here when cached)
        t0 = time.perf_counter()
        evaluated = full = 0
        for it in items:
            j = b.judge_sync(it)
            evaluated += j.tokens_in
            full += j.tokens_in + (j.meta["prefix_tokens"] if j.meta["prefix_reused"] else 0)
        dt = time.perf_counter() - t0
        results[cache] = dt
        print(
            f"prefix cache {'on ' if cache else 'off'}: {len(items) / dt:.2f} samples/s, "
            f"{evaluated / dt:.0f} prompt tokens/s evaluated ({evaluated / len(items):.0f} per sample), "
            f"effective {full / dt:.0f} tokens/s (prefix {b._prefix and len(b._prefix)} tokens), {dt:.1f} s"
        )
    print(f"speed-up from the prefix cache: {results[False] / results[True]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
