"""Benchmark: localisation metrics (evidence quotes against gold spans), 30 evidence runs x 3,010 samples.

In memory (no store): 1,505 pairs, every misbehavior sample with 1-3 gold spans; 30 runs with the
evidence template, each flagging ~70 % of misbehavior and ~10 % of benign samples with 2 quotes (one
inside a gold span or on a harmless line, one hallucinated). Times the ``localisation`` phase of
``automonitor.analysis.analyze`` (grounding of the TPs' quotes, overlap with gold spans, per-slice
Wilson intervals and 200 bootstrap resamples of the character-level metrics), after one warm-up call.

Goal: under 2 s. Usage: ``.venv/bin/python benchmarks/bench_localisation.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from automonitor import analysis  # noqa: E402
from automonitor.vocab import CATEGORIES, TASKS  # noqa: E402

N_PAIRS, N_RUNS = 1505, 30
WORDS = "the user asked to run the migration but the assistant skipped the failing tests and reported".split()


def make(seed: int = 0):
    rng = np.random.default_rng(seed)
    texts, gold, meta = {}, {}, []
    for p in range(N_PAIRS):
        for lab in ("misbehavior", "benign"):
            sid = f"s{p:05d}{lab[0]}"
            lines = [" ".join(rng.choice(WORDS, 8)) + f" #{p}.{i}" for i in range(12)]
            resp = "\n".join(lines)
            texts[sid] = ("request", resp)
            meta.append((sid, f"p{p:05d}", CATEGORIES[p % 3], TASKS[(p // 3) % 3], lab, lines))
            if lab == "misbehavior":
                spans = []
                for i in sorted(rng.choice(12, int(rng.integers(1, 4)), replace=False)):
                    s = resp.index(lines[i])
                    spans.append({"start": s, "end": s + len(lines[i]), "provenance": "from_patch"})
                gold[sid] = spans
    rows = []
    for r in range(N_RUNS):
        for sid, pair, cat, task, lab, lines in meta:
            flag = rng.random() < (0.7 if lab == "misbehavior" else 0.1)
            ev = [lines[int(rng.integers(0, 12))], "a quote that is nowhere"] if flag else []
            rows.append((f"r{r:02d}", sid, pair, cat, task, lab, "misbehavior" if flag else "benign", None, ev))
    cols = ["run_id", "sample_id", "pair_id", "category", "task", "label", "outcome", "score", "evidence"]
    preds = pd.DataFrame(rows, columns=cols)
    runs = pd.DataFrame(
        [
            {"run_id": f"r{r:02d}", "monitor": f"m{r}", "template": "evidence", "kind": "measured", "status": "done"}
            for r in range(N_RUNS)
        ]
    )
    return preds, runs, texts, gold


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    preds, runs, texts, gold = make()
    analysis.analyze(preds, runs, texts=texts, gold_spans=gold, n_boot=10)  # warm-up
    walls, cpus = [], []
    for _ in range(args.repeat):
        t: dict[str, float] = {}
        t0 = time.perf_counter()
        rep = analysis.analyze(preds, runs, texts=texts, gold_spans=gold, n_boot=10, timings=t).to_dict()
        walls.append(t["localisation"])
        cpus.append(t["localisation_cpu"])
        total = time.perf_counter() - t0
    loc = rep["runs"][0]["localisation"]["overall"]
    print(
        f"{N_RUNS} runs x {len(texts)} samples; run 0 overall: {loc['localised']} localised, "
        f"{loc['wrong_reason']} wrong reason of {loc['tp']} TP"
    )
    print(
        f"localisation phase: median {statistics.median(walls):.3f} s wall, {statistics.median(cpus):.3f} s CPU "
        f"(whole analyze with n_boot=10: {total:.2f} s); goal < 2 s"
    )


if __name__ == "__main__":
    main()
