"""Benchmark: trained probes on the full data.

Builds the benchmark from the raw sources into a throw-away SQLite store (or uses ``--db URL``), builds the
training corpus (train split + unpaired raw material, minus test overlaps), then times

- tfidf-lr training on the whole corpus (feature fitting + logistic regression);
- tfidf-lr scoring of the 3,010 test samples (one batch, ``Probe.predict_proba``) and through the runner
  (``automonitor run --monitor probe:PATH``: per-sample judging, store writes);
- embed-lr: all-MiniLM-L6-v2 embedding throughput (samples/s, 2 torch threads, after one warm-up batch)
  on ``--embed-n`` test samples (default 512).

Goals: tfidf-lr trains in < 60 s, scores 3,010 samples in < 5 s; embed-lr embeds >= 50
samples/s on 2 cores. Usage: ``.venv/bin/python benchmarks/bench_probes.py [--raw DIR] [--embed-n N]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--raw", default=os.environ.get("AUTOMONITOR_RAW", str(Path(__file__).resolve().parents[2] / "shared" / "raw"))
    )
    ap.add_argument("--db", default=None, help="an already built store (default: build a temporary one)")
    ap.add_argument("--embed-n", type=int, default=512)
    ap.add_argument("--skip-runner", action="store_true")
    a = ap.parse_args()

    import torch

    torch.set_num_threads(2)
    from automonitor.runs.probe import corpus, model as probes
    from automonitor.runs import runner
    from automonitor.data.build import build
    from automonitor.analysis.transfer import test_rows
    from store import get_engine, init_db

    tmp = tempfile.mkdtemp(prefix="bench_probes_")
    url = a.db or f"sqlite:///{tmp}/store.db"
    eng = init_db(get_engine(url))
    if not a.db:
        build(eng, raw=a.raw, seed=0)
    t0 = time.perf_counter()
    recs, summ = corpus.build_corpus(eng, a.raw)
    t_corpus = time.perf_counter() - t0
    tests = test_rows(eng)
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times suffer when other "
        f"processes share the cores; CPU times do not)"
    )
    print(f"corpus: {len(recs)} records in {t_corpus:.1f} s (disjointness: {summ['disjointness']})")

    t0, c0 = time.perf_counter(), time.process_time()
    probe = probes.train_probe(
        "tfidf",
        [r.request for r in recs],
        [r.response for r in recs],
        [r.label for r in recs],
        keys=[r.key() for r in recs],
    )
    t_train, c_train = time.perf_counter() - t0, time.process_time() - c0
    path = probes.save_probe(probe, Path(tmp) / "art")
    t0, c0 = time.perf_counter(), time.process_time()
    probe.predict_proba([t["request"] for t in tests], [t["response"] for t in tests])
    t_score, c_score = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"tfidf-lr: train {t_train:.1f} s wall / {c_train:.1f} s CPU on {len(recs)} records (goal < 60 s); "
        f"score {len(tests)} test samples in {t_score:.2f} s wall / {c_score:.2f} s CPU (goal < 5 s)"
    )
    if not a.skip_runner:
        run_id = runner.create_run(eng, f"probe:{path}", "direct")
        t0 = time.perf_counter()
        runner.execute_run(eng, run_id)
        t_run = time.perf_counter() - t0
        print(
            f"tfidf-lr through the runner: {len(tests)} samples in {t_run:.1f} s "
            f"({len(tests) / t_run:.0f} samples/s, store writes included)"
        )

    feats = probes.make_features("embed")
    sub = tests[: a.embed_n]
    feats.transform([t["request"] for t in sub[:32]], [t["response"] for t in sub[:32]])  # warm-up + load
    feats._cache.clear()
    t0, c0 = time.perf_counter(), time.process_time()
    feats.transform([t["request"] for t in sub], [t["response"] for t in sub])
    t_emb, c_emb = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"embed-lr: {len(sub)} samples embedded in {t_emb:.1f} s = {len(sub) / t_emb:.0f} samples/s "
        f"(goal >= 50/s on 2 cores; {c_emb:.1f} s CPU over 2 threads; max_seq_length "
        f"{feats.params['max_seq_length']}); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
