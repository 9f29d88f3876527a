"""Time ``automonitor audit`` on the full built benchmark and print the figures.

Builds the benchmark from the raw sources into a temporary SQLite store (``automonitor.data.build.build``, seed 0),
then times, per edition: loading the samples from the store, the audit itself (:func:`automonitor.data.audit.
audit_frame`: baselines, MinHash leakage, shared conversations, tiny-diff pairs, controls) split into its
parts, and a cached re-read (:func:`automonitor.data.audit.cached_audit` with a warm disk cache, i.e. what
``report`` pays). Goal: audit < 30 s on this machine.

Usage: ``.venv/bin/python benchmarks/bench_audit.py [--repeat N] [--raw DIR] [--db URL] [--markdown]``
(``--db`` audits an existing store instead of building one; ``--markdown`` prints the audit table).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from automonitor.data import audit  # noqa: E402
from store import get_engine, init_db  # noqa: E402


def _parts(df) -> dict[str, float]:
    """Seconds spent in the leakage checks alone (the rest of audit_frame is the baselines)."""
    train = df[df["split"] == "train"]
    test = df[df["split"] == "test"]
    out = {}
    t0 = time.perf_counter()
    audit.near_duplicates(
        (train["request"] + "\n" + train["response"]).tolist(), (test["request"] + "\n" + test["response"]).tolist()
    )
    out["minhash"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    audit.shared_conversations(
        list(zip(train["request"], train["response"])), list(zip(test["request"], test["response"]))
    )
    out["shared_conversations"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    audit.tiny_diff_pairs(test)
    out["tiny_diff"] = time.perf_counter() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--raw", default=os.environ.get("AUTOMONITOR_RAW", str(REPO.parent / "shared" / "raw")))
    ap.add_argument("--db", default=None)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        os.environ["AUTOMONITOR_CACHE_DIR"] = str(Path(d) / "cache")
        if args.db:
            eng = init_db(get_engine(args.db))
        else:
            from automonitor.data.build import build

            eng = init_db(get_engine(f"sqlite:///{Path(d) / 'bench.db'}", fresh=True))
            t0 = time.perf_counter()
            rep = build(eng, Path(args.raw), 0)
            print(f"build (seed 0, SQLite): {time.perf_counter() - t0:.2f} s, {rep['inserted']} samples inserted")
        for edition in audit.EDITIONS:
            loads, runs = [], []
            doc = None
            df = None
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                df, how = audit.load_samples(eng, edition)
                loads.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                doc = audit.audit_frame(df, edition)
                runs.append(time.perf_counter() - t0)
            assert doc is not None and df is not None
            doc["test_set"] = how
            parts = _parts(df)
            audit.cached_audit(eng, edition)  # fill the cache
            t0 = time.perf_counter()
            audit.memo.clear()
            audit.cached_audit(eng, edition)
            warm = time.perf_counter() - t0
            print(
                f"edition {edition} ({how}): {doc['n_test']} test / {doc['n_train']} train / "
                f"{doc['controls']['samples']} controls samples, {len(doc['slices'])} slices, "
                f"{sum(s['flagged'] for s in doc['slices'])} flagged"
            )
            print(f"  load from store: median {statistics.median(loads):.2f} s")
            print(
                f"  audit_frame:     median {statistics.median(runs):.2f} s (min {min(runs):.2f}, max {max(runs):.2f}, "
                f"n={len(runs)}); of which minhash {parts['minhash']:.2f} s, shared conversations "
                f"{parts['shared_conversations']:.2f} s, tiny-diff {parts['tiny_diff']:.2f} s"
            )
            print(f"  cached re-read (warm disk cache, fingerprint + JSON): {warm * 1000:.0f} ms")
            if args.markdown and doc["slices"]:
                print(audit.markdown(doc))
        eng.dispose()


if __name__ == "__main__":
    main()
