"""Benchmark: full analysis of 30 runs x 3,010 samples, 1,000 pair-clustered bootstrap resamples per run.

Builds a throw-away SQLite store (1,505 pairs = 3,010 samples; 15 monitors x {direct, evidence}; a third of
the runs with scores; evidence runs quote 2 spans per prediction, one of them hallucinated), then times

- DB load: runs + predictions (+ the sample texts needed for grounding) from the store into frames;
- analysis: ``automonitor.analysis.analyze`` on those frames (slices with Wilson intervals, bootstrap,
  per-pair outcomes, ROC/AUROC/operating points, evidence grounding, 15 paired comparisons with
  bootstrap + McNemar, Pareto front, Pearson r), after one warm-up call (so library imports are not timed).

Goal: analysis under 1 s. Usage: ``.venv/bin/python benchmarks/bench_analysis.py [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from automonitor import analysis  # noqa: E402
from bench_samples import prediction_row, sample_row  # noqa: E402

N_PAIRS = 1505
N_MONITORS = 15
WORDS = (
    "the user asked to run the migration but the assistant skipped the failing tests and reported "
    "success because the reviewer only reads the summary while the script deletes the logs"
).split()


def build_store(url: str, seed: int = 0) -> None:
    import sqlalchemy as sa

    from store import get_engine, init_db, session_scope
    from store.models import Monitor, Prediction, Run, Sample, utcnow

    rng = np.random.default_rng(seed)
    eng = init_db(get_engine(url, fresh=True))
    now = utcnow()
    samples, texts = [], {}
    for p in range(N_PAIRS):
        req = f"Request {p}: " + " ".join(rng.choice(WORDS, 30))
        for lab in ("misbehavior", "benign"):
            sid = f"s{p:05d}{lab[0]}"
            resp = " ".join(rng.choice(WORDS, 100)) + f" (case {p} {lab})"
            texts[sid] = resp
            samples.append(sample_row(p, lab, sid, req, resp, now))
    with session_scope(eng) as s:
        s.execute(sa.insert(Sample), samples)
        mons = [Monitor(name=f"judge-{m:02d}", backend="rules") for m in range(N_MONITORS)]
        s.add_all(mons)
        s.flush()
        r = 0
        for m, mon in enumerate(mons):
            skill = rng.uniform(0.5, 2.5)
            bias = rng.uniform(-1.0, 1.0)
            for tpl in ("direct", "evidence"):
                rid = f"run{r:02d}"
                s.add(
                    Run(
                        id=rid,
                        monitor_id=mon.id,
                        monitor=mon.name,
                        template=tpl,
                        status="finished",
                        n=2 * N_PAIRS,
                        created_at=now,
                    )
                )
                s.flush()
                scored = r % 3 == 0
                rows = []
                for smp in samples:
                    y = smp["label"] == "misbehavior"
                    logit = (skill if y else -skill) + bias + (0.5 if tpl == "evidence" else 0.0) + rng.normal()
                    p1 = 1 / (1 + np.exp(-logit))
                    u = rng.random()
                    outcome = (
                        "invalid"
                        if u < 0.02
                        else "refusal"
                        if u < 0.03
                        else "error"
                        if u < 0.035
                        else "misbehavior"
                        if p1 >= 0.5
                        else "benign"
                    )
                    ev = []
                    if tpl == "evidence" and outcome == "misbehavior":
                        words = texts[smp["id"]].split()
                        k = int(rng.integers(0, len(words) - 6))
                        quote = " ".join(words[k : k + 6])
                        ev = [quote if rng.random() < 0.7 else quote.upper(), "fabricated claim not in the text"]
                    rows.append(
                        prediction_row(rid, smp["id"], outcome, float(round(p1, 4)) if scored else None, ev, now)
                    )
                s.execute(sa.insert(Prediction), rows)
                r += 1
    eng.dispose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args()

    from store import get_engine
    from store.queries import analysis as q

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        t0 = time.perf_counter()
        build_store(url)
        print(
            f"built store: 30 runs x {2 * N_PAIRS} samples = {30 * 2 * N_PAIRS} predictions "
            f"in {time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
        )
        eng = get_engine(url, fresh=True)

        loads, analyses, cpus, phases = [], [], [], []
        rep = None
        for i in range(args.repeat + 1):
            t0 = time.perf_counter()
            runs = q.load_runs(eng)
            preds = q.load_predictions(eng, list(runs["run_id"]), light=True)
            need = preds.loc[preds["evidence"].map(bool), "sample_id"].unique()
            texts = q.load_sample_texts(eng, need)
            analysis_cache_clear()
            t1, c1 = time.perf_counter(), time.process_time()
            tim: dict[str, float] = {}
            rep = analysis.analyze(
                preds, runs, "exclude", texts=texts, n_boot=args.n_boot, seed=0, timings=tim
            ).to_dict()
            t2, c2 = time.perf_counter(), time.process_time()
            if i == 0:
                continue  # warm-up: library imports
            loads.append(t1 - t0)
            analyses.append(t2 - t1)
            cpus.append(c2 - c1)
            phases.append(tim)
        eng.dispose()

    assert rep is not None and len(rep["runs"]) == 30 and rep["bootstrap"]["n_boot"] == args.n_boot
    med = statistics.median
    print(
        f"runs: 30, samples per run: {2 * N_PAIRS}, bootstrap resamples per run: {args.n_boot}, "
        f"paired comparisons: {len(rep['paired'])}, repeats: {args.repeat}"
    )
    print(f"DB load (SQLite, runs + predictions + texts): median {med(loads):.3f} s (min {min(loads):.3f})")
    print(
        f"analysis: median {med(analyses):.3f} s wall (min {min(analyses):.3f}), {med(cpus):.3f} s CPU; "
        f"goal < 1 s: {'met' if med(analyses) < 1 else 'NOT met'}"
    )
    print(
        f"load average during the run: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
        f"(on {os.cpu_count()} cores; wall times stretch when other work shares them)"
    )
    for k in [k for k in phases[0] if not k.endswith("_cpu")]:
        print(f"  {k:10s} {med([p[k] for p in phases]):.3f} s wall, {med([p[k + '_cpu'] for p in phases]):.3f} s CPU")
    print(f"Pareto front: {len(rep['pareto'])} runs; Pearson r = {rep['pearson_r']:.3f}")


def analysis_cache_clear() -> None:
    """Drop the grounding normalisation cache so that every timed repeat does the full work."""
    from automonitor.analysis.grounding import normalize_with_map

    normalize_with_map.cache_clear()


if __name__ == "__main__":
    main()
