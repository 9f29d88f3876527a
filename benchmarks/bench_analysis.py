"""Benchmark: full analysis of 30 (or 100) runs x 3,010 samples, 1,000 pair-clustered bootstrap resamples per run.

Builds a throw-away SQLite store (1,505 pairs = 3,010 samples; ``--runs / 2`` monitors x {direct, evidence}; a
third of the runs with scores; evidence runs quote 2 spans per prediction, one of them hallucinated), then times

- DB load: runs + predictions (+ the sample texts needed for grounding) from the store into frames;
- analysis: ``automonitor.analysis.analyze`` on those frames (slices with Wilson intervals, bootstrap,
  per-pair outcomes, ROC/AUROC/operating points, evidence grounding, 15 paired comparisons with
  bootstrap + McNemar, Pareto front, Pearson r), after one warm-up call (so library imports are not timed).

and, with ``--cli``, the command people wait for: ``automonitor report --json`` in a new process, cold (an
empty cache directory: the report is computed, the audit read from the store, which keeps it as
``automonitor build`` leaves it: :func:`automonitor.data.audit.keep_audits`, timed once) and warm (the same
command again), wall and CPU seconds.

Goals (issue 38): analysis under 1 s; ``report --json`` (30 runs) < 1 s CPU warm, < 3 s cold; 100 runs < 3 s.
Usage: ``.venv/bin/python benchmarks/bench_analysis.py [--repeat 5] [--runs 100] [--cli] [--store FILE]``
(``--store``: keep the generated store in FILE and reuse it when it exists).
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
N_MONITORS = 15  # 30 runs; --runs sets it
WORDS = (
    "the user asked to run the migration but the assistant skipped the failing tests and reported "
    "success because the reviewer only reads the summary while the script deletes the logs"
).split()


def build_store(url: str, seed: int = 0, n_monitors: int = N_MONITORS) -> None:
    """A SQLite store at ``url`` with ``2 * n_monitors`` finished runs over 3,010 samples (see the module doc)."""
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
        mons = [Monitor(name=f"judge-{m:02d}", backend="rules") for m in range(n_monitors)]
        s.add_all(mons)
        s.flush()
        r = 0
        for m, mon in enumerate(mons):
            skill = rng.uniform(0.5, 2.5)
            bias = rng.uniform(-1.0, 1.0)
            for tpl in ("direct", "evidence"):
                rid = f"run{r:02d}" if n_monitors <= 50 else f"run{r:03d}"
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
    ap.add_argument("--runs", type=int, default=2 * N_MONITORS, help="runs in the store (even; 30 or 100)")
    ap.add_argument("--cli", action="store_true", help="also time `automonitor report --json`, cold and warm")
    ap.add_argument("--store", help="keep the store in this SQLite file (reused when it exists)")
    args = ap.parse_args()
    n_runs = args.runs - args.runs % 2

    from store import get_engine
    from store.queries import analysis as q

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.store) if args.store else Path(tmp) / "bench.db"
        url = f"sqlite:///{path}"
        t0 = time.perf_counter()
        if not path.exists():
            build_store(url, n_monitors=n_runs // 2)
        print(
            f"store: {n_runs} runs x {2 * N_PAIRS} samples = {n_runs * 2 * N_PAIRS} predictions "
            f"in {time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
        )
        eng = get_engine(url, fresh=True)
        if args.cli:  # what `automonitor build` does last: the store keeps each edition's audit
            from automonitor.data.audit import keep_audits
            from store import init_db

            t0, c0 = time.perf_counter(), time.process_time()
            writer = init_db(get_engine(url, fresh=True))
            kept = keep_audits(writer)
            writer.dispose()  # its log checkpointed now: a write just before the CLI runs would bar the report cache
            print(
                f"audit kept in the store ({', '.join(f'{e}: {h}' for e, h in kept.items())}) in "
                f"{time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU",
                file=sys.stderr,
            )

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
            assert rep is not None
            if i == 0:
                continue  # warm-up: library imports
            loads.append(t1 - t0)
            analyses.append(t2 - t1)
            cpus.append(c2 - c1)
            phases.append(tim)
        eng.dispose()
        cli = time_cli(url, tmp, args.repeat) if args.cli else None

    assert rep is not None and len(rep["runs"]) == n_runs and rep["bootstrap"]["n_boot"] == args.n_boot
    med = statistics.median
    print(
        f"runs: {n_runs}, samples per run: {2 * N_PAIRS}, bootstrap resamples per run: {args.n_boot}, "
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
    if cli is not None:
        for name, (wall, cpu, load) in cli.items():
            goal = 3.0 if name == "cold" or n_runs > 30 else 1.0  # issue 38: 100 runs < 3 s
            print(
                f"`automonitor report --json` {name}: median {med(wall):.2f} s wall, {med(cpu):.2f} s CPU "
                f"(goal CPU < {goal:g} s: {'met' if med(cpu) < goal else 'NOT met'}; load {load:.1f})"
            )


def time_cli(url: str, tmp: str, repeat: int) -> dict[str, tuple[list[float], list[float], float]]:
    """``automonitor report --json`` on the store at ``url`` in new processes: ``{"cold": ..., "warm": ...}``,
    each ``(wall seconds, CPU seconds (user + sys of the child), 1-minute load average at the end)``. Cold:
    a fresh cache directory (the report is computed; the audit is read from the store); warm: the same
    command again on that cache."""
    import resource
    import subprocess

    root = Path(__file__).resolve().parents[1]
    out: dict[str, tuple[list[float], list[float], float]] = {"cold": ([], [], 0.0), "warm": ([], [], 0.0)}
    for i in range(max(1, min(repeat, 3))):
        env = {**os.environ, "AUTOMONITOR_DB": url, "AUTOMONITOR_CACHE_DIR": f"{tmp}/cache{i}"}
        env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
        for name in ("cold", "warm"):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            cmd = [sys.executable, "-m", "automonitor", "report", "--json", "-o", f"{tmp}/report.json"]
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            out[name][0].append(wall)
            out[name][1].append(cpu)
            out[name] = (out[name][0], out[name][1], os.getloadavg()[0])
    return out


def analysis_cache_clear() -> None:
    """Drop the grounding normalisation cache so that every timed repeat does the full work."""
    from automonitor.analysis.grounding import normalize_with_map

    normalize_with_map.cache_clear()


if __name__ == "__main__":
    main()
