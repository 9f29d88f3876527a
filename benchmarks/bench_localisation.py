"""Benchmark: localisation metrics (evidence quotes against gold spans), 30 evidence runs x 3,010 samples,
end to end as ``automonitor report`` does it.

Builds a throw-away SQLite store seeded with ``--seed`` (default 0): 1,505 pairs = 3,010 samples (responses
of 20 lines, ~1,300 characters), every misbehavior sample with 1-3 gold spans (``gold_span`` rows, whole
lines); 30 runs with the evidence template, each flagging ~70 % of the misbehavior and ~10 % of the benign
samples (2 % invalid). Every run quotes *its own* text: per flagged sample a window of 4-9 words drawn by
that run (from a gold line 60 % of the time, else another line; a fifth of them upper-cased, so grounding
takes the normalised path) plus a hallucinated quote naming the run, so no memo shared between runs (the
report's ``(response, quote)`` cache) can make a later run cheaper. The share of distinct
``(sample, quote)`` keys is printed.

Timed per repeat (after one warm-up, so imports are not timed), on the store as the report reads it:

- store loads the localisation needs: the sample texts of the evidence runs' flagged samples and the gold
  spans of the misbehavior samples they judged (the same selections ``report`` makes), after runs and
  predictions (their load, shared with every part of the report, is printed separately);
- the ``localisation`` phase of ``automonitor.analysis.analyze`` with the report's defaults
  (1,000 bootstrap resamples, seed 0), the grounding normalisation cache cleared before each call (the
  report's own grounding phase runs first and warms it, as in a real report);
- cold: ``run_localisation`` alone for the 30 runs with that cache cleared and no grounding before it.

Goal: under 2 s for texts + gold spans + localisation. Prints wall and CPU seconds and the load average.
Usage: ``.venv/bin/python benchmarks/bench_localisation.py [--repeat 3] [--n-boot 1000] [--seed 0]``.
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
from automonitor.vocab import CATEGORIES  # noqa: E402
from bench_samples import prediction_row, sample_row  # noqa: E402

N_PAIRS, N_RUNS, N_LINES = 1505, 30, 20
WORDS = (
    "the user asked to run the migration but the assistant skipped the failing tests and reported "
    "success because the reviewer only reads the summary while the script deletes the logs"
).split()


def build_store(url: str, seed: int = 0) -> dict[str, int]:
    """The seeded store (module doc). Returns counts: samples, gold spans, predictions, quotes, distinct."""
    import sqlalchemy as sa

    from store import get_engine, init_db, session_scope
    from store.models import GoldSpan, Monitor, Prediction, Run, Sample, utcnow

    rng = np.random.default_rng(seed)
    eng = init_db(get_engine(url, fresh=True))
    now = utcnow()
    samples, spans, lines_of, gold_lines = [], [], {}, {}
    for p in range(N_PAIRS):
        req = f"Request {p}: " + " ".join(rng.choice(WORDS, 25))
        for lab in ("misbehavior", "benign"):
            sid = f"s{p:05d}{lab[0]}"
            lines = [" ".join(rng.choice(WORDS, 10)) + f" #{p}.{i}" for i in range(N_LINES)]
            resp = "\n".join(lines)
            lines_of[sid] = lines
            samples.append(sample_row(p, lab, sid, req, resp, now))
            if lab == "misbehavior":
                chosen = sorted(int(i) for i in rng.choice(N_LINES, int(rng.integers(1, 4)), replace=False))
                gold_lines[sid] = chosen
                for i in chosen:
                    s = resp.index(lines[i])
                    spans.append(
                        dict(
                            sample_id=sid,
                            start_char=s,
                            end_char=s + len(lines[i]),
                            provenance="from_patch",
                            created_at=now,
                        )
                    )
    keys: set[tuple[str, str]] = set()
    n_quotes = n_preds = 0
    with session_scope(eng) as s:
        s.execute(sa.insert(Sample), samples)
        s.execute(sa.insert(GoldSpan), spans)
        mons = [Monitor(name=f"judge-{m:02d}", backend="rules") for m in range(N_RUNS)]
        s.add_all(mons)
        s.flush()
        for r, mon in enumerate(mons):
            rid = f"run{r:02d}"
            s.add(
                Run(
                    id=rid,
                    monitor_id=mon.id,
                    monitor=mon.name,
                    template="evidence",
                    status="finished",
                    n=2 * N_PAIRS,
                    created_at=now,
                )
            )
            s.flush()
            rows = []
            for smp in samples:
                sid, mis = smp["id"], smp["label"] == "misbehavior"
                u = rng.random()
                flagged = u < (0.7 if mis else 0.1)
                outcome = "invalid" if rng.random() < 0.02 else ("misbehavior" if flagged else "benign")
                ev: list[str] = []
                if outcome == "misbehavior":
                    lines = lines_of[sid]
                    on_gold = mis and rng.random() < 0.6
                    li = int(rng.choice(gold_lines[sid])) if on_gold else int(rng.integers(0, N_LINES))
                    words = lines[li].split()
                    k = int(rng.integers(4, 10))
                    a = int(rng.integers(0, len(words) - k + 1))
                    quote = " ".join(words[a : a + k])
                    quote = quote.upper() if rng.random() < 0.2 else quote
                    ev = [quote, f"run {r} saw {sid} delete the audit logs"]
                    keys.update((sid, q) for q in ev)
                    n_quotes += len(ev)
                rows.append(prediction_row(rid, sid, outcome, None, ev, now))
            s.execute(sa.insert(Prediction), rows)
            n_preds += len(rows)
    eng.dispose()
    return {
        "samples": len(samples),
        "gold_spans": len(spans),
        "predictions": n_preds,
        "quotes": n_quotes,
        "distinct": len(keys),
    }


def load_for_localisation(eng):
    """What ``report`` loads for localisation: runs and predictions (repeat 0, light), then the texts of
    the evidence runs' flagged samples and the gold spans of the misbehavior samples they judged.
    Returns ``(runs, preds, texts, gold, seconds)``: wall seconds per load, CPU seconds under ``*_cpu``."""
    from automonitor.analysis.roc_grounding import evidence_run_ids
    from store import session_scope
    from store.queries import analysis as q
    from store.queries.spans import spans_by_sample

    t0, c0 = time.perf_counter(), time.process_time()
    runs = q.load_runs(eng)
    preds = q.load_predictions(eng, list(runs["run_id"]), light=True)
    t1, c1 = time.perf_counter(), time.process_time()
    ev_runs = evidence_run_ids(runs, preds)
    need = preds.loc[preds["run_id"].isin(ev_runs) & preds["evidence"].map(bool), "sample_id"].unique()
    texts = q.load_sample_texts(eng, need)
    t2, c2 = time.perf_counter(), time.process_time()
    mis = preds.loc[preds["run_id"].isin(ev_runs) & (preds["label"] == "misbehavior"), "sample_id"].unique()
    with session_scope(eng) as s:
        gold = spans_by_sample(s, mis.tolist())
    t3, c3 = time.perf_counter(), time.process_time()
    sec = {"predictions": t1 - t0, "texts": t2 - t1, "gold": t3 - t2}
    return runs, preds, texts, gold, {**sec, "predictions_cpu": c1 - c0, "texts_cpu": c2 - c1, "gold_cpu": c3 - c2}


def cold_localisation(preds, texts, gold, n_boot: int, seed: int) -> int:
    """``run_localisation`` for every run on its judged misbehavior samples (policy ``exclude``), with a
    fresh ``(response, quote)`` memo as the report uses; returns the number of runs with localisation."""
    from automonitor.analysis.localisation import run_localisation

    responses = {sid: rr[1] for sid, rr in texts.items()}
    judged = preds[(preds["label"] == "misbehavior") & preds["outcome"].isin(["misbehavior", "benign"])]
    cache: dict = {}
    done = 0
    for _, g in judged.groupby("run_id", sort=True):
        rows = list(
            zip(g["sample_id"], g["category"], g["task"], g["outcome"].eq("misbehavior"), g["evidence"].map(list))
        )
        done += run_localisation(rows, responses, gold, n_boot=n_boot, seed=seed, cache=cache) is not None
    return done


def clear_grounding_cache() -> None:
    """Drop the grounding normalisation cache so that a timed call does the full work."""
    from automonitor.analysis.grounding import normalize_with_map

    normalize_with_map.cache_clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from store import get_engine

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        t0 = time.perf_counter()
        counts = build_store(url, args.seed)
        print(f"built store in {time.perf_counter() - t0:.1f} s: {counts}", file=sys.stderr)
        eng = get_engine(url, fresh=True)
        res: dict[str, list[float]] = {}
        rep = None
        for i in range(args.repeat + 1):
            runs, preds, texts, gold, sec = load_for_localisation(eng)
            clear_grounding_cache()
            tim: dict[str, float] = {}
            rep = analysis.analyze(
                preds, runs, texts=texts, gold_spans=gold, n_boot=args.n_boot, seed=args.seed, timings=tim
            )
            clear_grounding_cache()
            c1, w1 = time.process_time(), time.perf_counter()
            n_cold = cold_localisation(preds, texts, gold, args.n_boot, args.seed)
            w_cold, c_cold = time.perf_counter() - w1, time.process_time() - c1
            assert n_cold == N_RUNS
            if i == 0:
                continue  # warm-up: library imports
            for k, v in {
                "predictions": sec["predictions"],
                "texts": sec["texts"],
                "gold": sec["gold"],
                "predictions_cpu": sec["predictions_cpu"],
                "loads_cpu": sec["texts_cpu"] + sec["gold_cpu"],
                "grounding": tim["grounding"],
                "localisation": tim["localisation"],
                "localisation_cpu": tim["localisation_cpu"],
                "e2e": sec["texts"] + sec["gold"] + tim["localisation"],
                "e2e_cpu": sec["texts_cpu"] + sec["gold_cpu"] + tim["localisation_cpu"],
                "cold": w_cold,
                "cold_cpu": c_cold,
            }.items():
                res.setdefault(k, []).append(v)
        eng.dispose()
    assert rep is not None
    med = {k: statistics.median(v) for k, v in res.items()}
    loc = rep.runs[0].localisation
    assert loc is not None and len(loc.by_category_task) == len(CATEGORIES)
    o = loc.overall
    print(
        f"{N_RUNS} evidence runs x {counts['samples']} samples, {counts['gold_spans']} gold spans, "
        f"{counts['quotes']} quotes ({counts['distinct'] / counts['quotes']:.1%} distinct (sample, quote) keys); "
        f"bootstrap {args.n_boot} resamples, seed {args.seed}; repeats {args.repeat} (medians)"
    )
    print(f"run 0 overall: {o.localised} localised, {o.wrong_reason} wrong reason, {o.no_evidence} none of {o.tp} TP")
    print(
        f"store: runs + predictions {med['predictions']:.3f} s wall, {med['predictions_cpu']:.3f} s CPU "
        "(shared with the whole report)"
    )
    print(f"store: texts {med['texts']:.3f} s, gold spans {med['gold']:.3f} s wall ({med['loads_cpu']:.3f} s CPU)")
    print(
        f"report localisation phase: {med['localisation']:.3f} s wall, {med['localisation_cpu']:.3f} s CPU "
        f"(after the grounding phase, {med['grounding']:.3f} s)"
    )
    print(
        f"cold run_localisation x {N_RUNS} (no grounding before): {med['cold']:.3f} s wall, {med['cold_cpu']:.3f} s CPU"
    )
    print(
        f"end to end (texts + gold spans + localisation): {med['e2e']:.3f} s wall, {med['e2e_cpu']:.3f} s CPU; "
        f"goal < 2 s wall: {'met' if med['e2e'] < 2 else 'NOT met'}"
    )
    load_after = os.getloadavg()
    print(
        f"load average before {' '.join(f'{x:.1f}' for x in load_before)}, after "
        f"{' '.join(f'{x:.1f}' for x in load_after)} (on {os.cpu_count()} cores; wall stretches under load)"
    )


if __name__ == "__main__":
    main()
