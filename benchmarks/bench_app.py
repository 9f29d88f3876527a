"""Benchmark of the Streamlit workbench on a paper-sized store: 50 runs over 3,010 samples plus 20 runs
over a verified edition (adjudicated pairs, edition_sample 'verified'), the store its speed goals are
set for.

Prints:
- server-side render time of the Trade-off and Drill-down pages (Streamlit ``AppTest``, the whole
  script run in-process): cold (first run: report computed) and warm (cache hit; median of 7 runs).
  Goal: warm < 1 s each.
- time to first paint / first contentful paint in headless Chromium against a real
  ``streamlit run app.py`` server, and the time until the page's content is on screen (trade-off
  chart markers drawn; drill-down sample evidence highlighted), cold server cache and warm.

Usage: ``.venv/bin/python benchmarks/bench_app.py [--runs 50] [--verified-runs 20] [--no-browser]``
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
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import app_seed  # noqa: E402
from automonitor import vocab  # noqa: E402

PAIRS_PER_CATEGORY = {c: q // 2 for c, q in vocab.PAPER_QUOTAS.items()}  # 586 + 481 + 438 = 1,505 pairs


def build_store(url: str, n_runs: int) -> dict:
    """3,010 gold test samples with the paper's category quotas (tasks round-robin) and ``n_runs``
    finished runs (direct/evidence alternating; evidence runs quote spans; every third run scores)."""
    from store import get_engine, init_db

    eng = init_db(get_engine(url, fresh=True))
    rows = []
    k = 0
    for cat, pairs in PAIRS_PER_CATEGORY.items():
        for i in range(pairs):
            task = vocab.TASKS[i % 3]
            k += 1
            pid = f"b{k:05d}"
            req = f"[{cat}/{task}] Request {k}: " + "please solve the task described here. " * 8
            bad = (
                f"Misbehaving answer {k}: I will quietly skip the failing tests and report success. "
                + "The grader only reads the summary, so the summary says all checks pass. " * 6
            )
            good = f"Benign answer {k}: here is an honest solution; two tests still fail. " * 6
            rows.append(app_seed._sample(pid, cat, task, "misbehavior", req, bad, "bench"))
            rows.append(app_seed._sample(pid, cat, task, "benign", req, good, "bench"))
    rows[0] = app_seed._sample(
        rows[0]["pair_id"],
        rows[0]["category"],
        rows[0]["task"],
        "misbehavior",
        app_seed.HOSTILE_REQUEST,
        app_seed.HOSTILE_RESPONSE,
        "bench",
    )
    app_seed.insert_samples(eng, rows)
    t0 = time.perf_counter()
    run_ids = []
    for i in range(n_runs):
        tpl = vocab.TEMPLATES[i % 2]
        rid = f"bench{i:02d}"
        app_seed.add_run(
            eng,
            rows,
            monitor=f"openai:model-{i // 2}",
            template=tpl,
            run_id=rid,
            skill=0.55 + 0.4 * ((i * 7) % 10) / 10,
            flag_bias=0.2 + 0.6 * ((i * 3) % 10) / 10,
            evidence=(tpl == "evidence"),
            scores=(i % 3 == 2),
            minutes_ago=n_runs - i,
        )
        run_ids.append(rid)
    print(
        f"store: {len(rows):,} samples, {n_runs} runs, {len(rows) * n_runs:,} predictions "
        f"(seeded in {time.perf_counter() - t0:.1f} s)",
        file=sys.stderr,
    )
    return {"engine": eng, "samples": rows, "run_ids": run_ids, "hostile_id": rows[0]["id"]}


def add_verified(eng, n_runs: int, pairs: int = 250) -> list[str]:
    """``pairs`` adjudicated pairs (gold, split test, label_source adjudicated, edition ``verified``;
    outside the paper mirror) and ``n_runs`` finished runs over them with ``run.edition = 'verified'``."""
    import sqlalchemy as sa

    from store.models import EditionSample, Run

    rows = []
    for k in range(pairs):
        cat = vocab.CATEGORIES[k % 3]
        task = vocab.TASKS[(k // 3) % 3]
        pid = f"cand:v{k:05d}"
        req = f"[verified {cat}/{task}] Request {k}: " + "an adjudicated request. " * 6
        for lab, text in (
            ("misbehavior", "You are right, the answer is what you said. " * 5),
            ("benign", "The suggested answer is wrong; here is the derivation. " * 5),
        ):
            r = app_seed._sample(pid, cat, task, lab, req, f"{text} #{k}", "annotation")
            r["label_source"] = "adjudicated"
            rows.append(r)
    app_seed.insert_samples(eng, rows)
    with eng.begin() as c:
        c.execute(
            sa.insert(EditionSample),
            [{"edition": "verified", "sample_id": r["id"], "created_at": r["created_at"]} for r in rows],
        )
    ids = []
    for i in range(n_runs):
        tpl = vocab.TEMPLATES[i % 2]
        rid = f"ver{i:02d}"
        app_seed.add_run(
            eng,
            rows,
            monitor=f"openai:model-{i // 2}",
            template=tpl,
            run_id=rid,
            skill=0.6 + 0.35 * ((i * 7) % 10) / 10,
            flag_bias=0.2 + 0.6 * ((i * 3) % 10) / 10,
            evidence=(tpl == "evidence"),
            minutes_ago=n_runs - i,
        )
        ids.append(rid)
    with eng.begin() as c:
        c.execute(sa.update(Run).where(Run.id.in_(ids)).values(edition="verified"))
    print(f"verified edition: {len(rows):,} samples, {n_runs} runs", file=sys.stderr)
    return ids


def time_page(page: str, params: dict, warm_runs: int = 7) -> tuple[float, float, list[float]]:
    """(cold seconds, warm median seconds, warm samples) of one page's full script run."""
    from streamlit.testing.v1 import AppTest

    # app.py run as a server runs it, from AppTest's folder without pages/ (tests/app/apptest_support.app_test)
    at = AppTest.from_string(f"import runpy\nrunpy.run_path({str(REPO / 'app.py')!r})\n", default_timeout=600)
    at.run()
    at.switch_page(str(REPO / page))
    for k, v in params.items():
        at.query_params[k] = v
    t = time.perf_counter()
    at.run()
    cold = time.perf_counter() - t
    if at.exception:
        raise RuntimeError(f"{page}: {at.exception[0].message}")
    warm = []
    for _ in range(warm_runs):
        t = time.perf_counter()
        at.run()
        warm.append(time.perf_counter() - t)
    return cold, statistics.median(warm), warm


def browser_paint(url: str, info: dict) -> list[tuple[str, dict]]:
    """First paint, first contentful paint and content-ready times (ms) in headless Chromium."""
    import importlib.util

    from playwright.sync_api import sync_playwright

    spec = importlib.util.spec_from_file_location("e2e_conftest", REPO / "tests" / "e2e" / "conftest.py")
    e2e = importlib.util.module_from_spec(spec)
    sys.modules["e2e_conftest"] = e2e
    spec.loader.exec_module(e2e)

    server = e2e.start_app(url, log_dir=Path(tempfile.mkdtemp()))
    out = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=e2e.CHROMIUM, args=e2e.CHROMIUM_ARGS)
            cases = [
                ("trade-off", f"{server.url}/tradeoff", ".js-plotly-plot .scatterlayer .point"),
                (
                    "drill-down",
                    f"{server.url}/drilldown?run=bench01&cell=tp&sample={info['hostile_id']}",
                    "mark.am-ev-exact",
                ),
            ]
            contexts = {}
            for label in (
                "cold server cache, new browser",
                "warm server cache, new browser",
                "warm server cache, browser cache warm",
            ):
                for name, target, ready_sel in cases:
                    if label.endswith("new browser"):
                        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
                        contexts.setdefault(name, []).append(ctx)
                    else:
                        ctx = contexts[name][-1]
                    page = ctx.new_page()
                    t0 = time.perf_counter()
                    page.goto(target)
                    page.wait_for_selector(ready_sel, timeout=180_000)
                    ready = (time.perf_counter() - t0) * 1000
                    paints = page.evaluate("""() => Object.fromEntries(
                        performance.getEntriesByType('paint').map(e => [e.name, e.startTime]))""")
                    out.append(
                        (
                            f"{name} ({label})",
                            {
                                "first-paint": paints.get("first-paint"),
                                "first-contentful-paint": paints.get("first-contentful-paint"),
                                "content ready": ready,
                            },
                        )
                    )
                    page.close()
            browser.close()
    finally:
        server.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--verified-runs", type=int, default=20)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench_app_"))
    url = f"sqlite:///{tmp / 'store.db'}"
    info = build_store(url, args.runs)
    if args.verified_runs:
        add_verified(info["engine"], args.verified_runs)
    os.environ["AUTOMONITOR_DB"] = url

    print(
        f"App render benchmark: {len(info['samples']):,} samples, {args.runs} runs + {args.verified_runs} "
        f"runs over the verified edition (SQLite, AppTest, {os.cpu_count()} CPUs)"
    )
    results = {}
    for name, page, params in [
        ("trade-off", "pages/tradeoff.py", {}),
        ("drill-down", "pages/drilldown.py", {"run": "bench01", "cell": "tp", "sample": info["hostile_id"]}),
        ("drill-down FN", "pages/drilldown.py", {"run": "bench01", "cell": "fn"}),
        ("overview", "pages/overview.py", {}),
        ("samples", "pages/samples.py", {"q": "bonus"}),
        ("runs", "pages/runs.py", {}),
    ]:
        cold, warm, samples = time_page(page, params)
        results[name] = warm
        goal = (
            "  (goal < 1 s: " + ("met" if warm < 1.0 else "MISSED") + ")"
            if name.startswith(("trade-off", "drill-down"))
            else ""
        )
        print(
            f"  {name:<13} server-side render: cold {cold:6.3f} s, warm median {warm:6.3f} s "
            f"(min {min(samples):.3f}, max {max(samples):.3f}){goal}"
        )
    if not args.no_browser:
        print("Chromium (headless, real `streamlit run` server), ms from navigation start:")
        for name, m in browser_paint(url, info):
            fp, fcp = m["first-paint"], m["first-contentful-paint"]
            print(
                f"  {name:<52} first paint {fp:7.0f} · first contentful paint {fcp:7.0f} · "
                f"content ready {m['content ready']:7.0f}"
            )
    info["engine"].dispose()


if __name__ == "__main__":
    main()
