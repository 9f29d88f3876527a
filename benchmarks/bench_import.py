"""Time the pair-file import: 3,010 samples (1,505 pairs) into a fresh SQLite and PostgreSQL store, then the
no-op re-import, then exports. Prints a table (or ``--json``).

The input is generated from ``seeds/examples.jsonl`` (each seed pair repeated with varied text so every
sample is distinct, no ``sample_id`` so ids are hashed on import), or, with ``--from-store URL``, the
exported test split of an existing (e.g. built) store.

Usage::

    .venv/bin/python benchmarks/bench_import.py [--pairs 1505] [--no-postgres] [--from-store URL] [--json]

PostgreSQL: a throw-away database is created next to ``$AUTOMONITOR_TEST_PG``
(default ``postgresql+psycopg://127.0.0.1:5432/test``) and dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from automonitor.data.pairfiles.export import export_pairs  # noqa: E402
from automonitor.data.pairfiles.importing import apply_import, prepare_import  # noqa: E402
from store import get_engine, init_db  # noqa: E402

SEED = REPO / "seeds" / "examples.jsonl"
PG_ADMIN_URL = os.environ.get("AUTOMONITOR_TEST_PG", "postgresql+psycopg://127.0.0.1:5432/test")
WORDS = (
    "alpha beta gamma delta quota ledger harbor meadow cobalt vector lantern saffron tundra pixel "
    "orbit cedar quartz willow ember nickel"
).split()


def make_input(path: Path, n_pairs: int, seed: int = 7) -> int:
    """Write ``n_pairs`` pairs (2 samples each) derived from the seed set; returns the sample count."""
    rows = [json.loads(x) for x in SEED.read_text(encoding="utf-8").splitlines()]
    pairs: dict[str, list[dict]] = {}
    for r in rows:
        pairs.setdefault(r["pair_id"], []).append(r)
    base = list(pairs.values())
    rng = random.Random(seed)
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_pairs):
            sides = base[i % len(base)]
            tag = " ".join(rng.choice(WORDS) for _ in range(6))
            request = f"{sides[0]['request']}\n\n(Case {i + 1}: {tag}.)"
            for s in sides:
                out = {
                    "pair_id": f"bench-{i + 1:05d}",
                    "category": s["category"],
                    "task": s["task"],
                    "request": request,
                    "response": f"{s['response']}\n\n-- {rng.choice(WORDS)} {i + 1}",
                    "label": s["label"],
                    "source": "bench",
                    "meta": {"from": s["pair_id"], "i": i},
                }
                fh.write(json.dumps(out, ensure_ascii=False) + "\n")
                n += 1
    return n


def _cli(args: list[str], url: str) -> tuple[float, dict]:
    exe = Path(sys.executable).parent / "automonitor"
    t = time.perf_counter()
    r = subprocess.run(
        [str(exe), *args, "--json"], capture_output=True, text=True, env={**os.environ, "AUTOMONITOR_DB": url}
    )
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"automonitor {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return dt, json.loads(r.stdout)


def bench_backend(name: str, url: str, src: Path, tmp: Path) -> dict:
    """Figures for one store: seconds for each step, and samples/s for the first import."""
    engine = init_db(get_engine(url, fresh=True))
    res: dict = {"backend": name}
    t = time.perf_counter()
    plan = prepare_import(src)
    res["parse_validate_s"] = time.perf_counter() - t
    t = time.perf_counter()
    out = apply_import(engine, plan)
    res["write_s"] = time.perf_counter() - t
    assert out["inserted"] == len(plan.keys), out
    res["samples"] = out["rows"]
    res["import_samples_per_s"] = out["rows"] / (res["parse_validate_s"] + res["write_s"])
    t = time.perf_counter()
    out = apply_import(engine, prepare_import(src))
    res["reimport_s"] = time.perf_counter() - t
    assert out["inserted"] == 0, out
    for fmt in ("jsonl", "csv", "parquet"):
        t = time.perf_counter()
        export_pairs(engine, tmp / f"{name}.{fmt}")
        res[f"export_{fmt}_s"] = time.perf_counter() - t
    engine.dispose()
    # End to end through the console script, on a second fresh store (includes interpreter start-up).
    url2 = url + "_cli" if name == "postgresql" else url.replace(".db", "_cli.db")
    res["_url2"] = url2
    return res


def _cli_figures(res: dict, src: Path) -> None:
    url2 = res.pop("_url2")
    dt, out = _cli(["import", str(src)], url2)
    assert out["inserted"] == res["samples"], out
    res["cli_import_s"] = dt
    dt, out = _cli(["import", str(src)], url2)
    assert out["inserted"] == 0, out
    res["cli_reimport_s"] = dt


def _peak_rss_mb(args: list[str], url: str) -> tuple[int, float]:
    """``(exit code, peak RSS in MB)`` of one ``automonitor`` CLI process (``ru_maxrss`` of the child)."""
    import resource

    env = {**os.environ, "AUTOMONITOR_DB": url, "PYTHONPATH": str(REPO)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    code = subprocess.run(
        [str(Path(sys.executable).parent / "automonitor"), *args], env=env, capture_output=True
    ).returncode
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return code, max(before, after) / 1024  # ru_maxrss is in KiB on Linux


def bench_memory(mb: float) -> dict:
    """Peak RSS of ``automonitor import`` on a valid pair file of about ``mb`` MB and of ``import-predictions``
    on a predictions file of about ``mb`` MB whose every row is bad (validation must stream, not hold every
    error), each in a fresh process and SQLite store. Note: ``ru_maxrss`` of children is a high-water mark
    over all children, so the two are measured in separate helper processes."""
    out: dict = {"target_mb": mb}
    with tempfile.TemporaryDirectory(prefix="bench_import_mem_") as d:
        tmp = Path(d)
        pairs, preds = tmp / "pairs.jsonl", tmp / "preds.jsonl"
        pad = "lorem ipsum " * 80
        with pairs.open("w", encoding="utf-8") as fh:
            i = 0
            while fh.tell() < mb * 1e6:
                req = f"request {i} {pad}"
                for lab in ("misbehavior", "benign"):
                    fh.write(
                        json.dumps(
                            {
                                "pair_id": f"m{i}",
                                "category": "sycophancy_bias",
                                "task": "qa",
                                "request": req,
                                "response": f"{lab} {i} {pad}",
                                "label": lab,
                            }
                        )
                        + "\n"
                    )
                i += 1
        with preds.open("w", encoding="utf-8") as fh:
            i = 0
            while fh.tell() < mb * 1e6:
                fh.write(json.dumps({"sample_id": f"s{i}", "outcome": "perhaps"}) + "\n")
                i += 1
        for key, path, args in (
            ("pair_import", pairs, ["import", str(pairs)]),
            ("bad_predictions_import", preds, ["predictions", "import", str(preds), "--monitor", "imported:bench"]),
        ):
            url = f"sqlite:///{tmp / (key + '.db')}"
            init_db(get_engine(url, fresh=True))
            helper = subprocess.run(
                [sys.executable, __file__, "--_rss", url, "--", *args], capture_output=True, text=True
            )
            code, rss = json.loads(helper.stdout)
            out[key] = {"file_mb": round(path.stat().st_size / 1e6, 1), "exit": code, "peak_rss_mb": round(rss, 1)}
    return out


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 2 and sys.argv[1] == "--_rss":  # helper: one child, its peak RSS
        rest = sys.argv[sys.argv.index("--") + 1 :]
        print(json.dumps(_peak_rss_mb(rest, sys.argv[2])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=1505)
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--from-store", metavar="URL", help="export the test split of this store as the input")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--memory", type=float, metavar="MB", help="only measure peak RSS of importing files of about MB megabytes"
    )
    args = ap.parse_args(argv)
    if args.memory:
        print(json.dumps(bench_memory(args.memory), indent=2))
        return 0

    import sqlalchemy as sa

    with tempfile.TemporaryDirectory(prefix="bench_import_") as d:
        tmp = Path(d)
        src = tmp / "pairs.jsonl"
        if args.from_store:
            export_pairs(init_db(get_engine(args.from_store, fresh=True)), src)
            origin = f"test split of {args.from_store}"
        else:
            make_input(src, args.pairs)
            origin = f"{args.pairs} pairs generated from seeds/examples.jsonl"
        n_lines = sum(1 for _ in src.open(encoding="utf-8"))
        results = []
        sqlite_url = f"sqlite:///{tmp / 'bench.db'}"
        r = bench_backend("sqlite", sqlite_url, src, tmp)
        _cli_figures(r, src)
        results.append(r)
        if not args.no_postgres:
            admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
            names = [f"am_bench_{uuid.uuid4().hex[:10]}"]
            names.append(names[0] + "_cli")
            try:
                with admin.connect() as c:
                    for n in names:
                        c.execute(sa.text(f'CREATE DATABASE "{n}"'))
                pg_url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{names[0]}"
                r = bench_backend("postgresql", pg_url, src, tmp)
                _cli_figures(r, src)
                results.append(r)
            finally:
                from store.engine import engines

                for e in list(engines.values()):
                    e.dispose()
                with admin.connect() as c:
                    for n in names:
                        c.execute(sa.text(f'DROP DATABASE IF EXISTS "{n}" WITH (FORCE)'))
                admin.dispose()
        doc = {"input": origin, "file_bytes": src.stat().st_size, "samples": n_lines, "results": results}
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"input: {doc['input']}: {doc['samples']} samples, {doc['file_bytes'] / 1e6:.2f} MB JSONL")
    cols = [
        ("parse+validate", "parse_validate_s"),
        ("write", "write_s"),
        ("re-import", "reimport_s"),
        ("export jsonl", "export_jsonl_s"),
        ("export csv", "export_csv_s"),
        ("export parquet", "export_parquet_s"),
        ("CLI import", "cli_import_s"),
        ("CLI re-import", "cli_reimport_s"),
    ]
    print(f"{'step (seconds)':<16}" + "".join(f"{r['backend']:>12}" for r in results))
    for label, key in cols:
        print(f"{label:<16}" + "".join(f"{r[key]:>12.3f}" for r in results))
    print(f"{'samples/s':<16}" + "".join(f"{r['import_samples_per_s']:>12.0f}" for r in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
