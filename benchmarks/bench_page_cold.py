"""Benchmark: the cold Trade-off page (issue 38: < 5 s), as a user meets it after starting the app.

A fresh ``streamlit run app.py`` process (``tests/e2e/conftest.start_app``) on a copy of the
``bench_analysis.py`` store (30 runs x 3,010 samples by default) with an empty ``AUTOMONITOR_CACHE_DIR``
(or ``--audit-cached``: the audit cache of an earlier process kept, the report cache emptied: a new store
version of unchanged samples), then headless Chromium (``/usr/bin/chromium`` through Playwright) opens
``/tradeoff`` and waits until the script run is finished and the plane's points are drawn. Reported per round: the
seconds from ``page.goto`` to the drawn page (``first``), the same for a second load in a new browser
page (``second``: the process's caches warm), and the server process's CPU seconds over the first load
(user + sys of the ``streamlit`` process and its children, from /proc), with the 1-minute load average and the
number of script runs each load took (``runs``: the app's script state turning to running).

Each load is a new browser context, by default a new browser profile (no cookies). ``--returning``: a browser
that comes back: every load's context starts with the cookies the previous load left (the plot area the page
measured, ``pages/_ui/plot_size.py``); a first round, which starts without, primes it and is reported apart.

Usage: python benchmarks/bench_page_cold.py [--store FILE] [--runs 30] [--rounds 2] [--audit-cached] [--returning]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "benchmarks")]


def _cpu_s(pid: int) -> float:
    """User + sys CPU seconds of process ``pid`` (and its waited-for children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / tick


def _load(browser, url: str, cookies: list) -> tuple[float, int, list]:
    """Seconds from ``goto(url)`` until the script run is finished and the plane's run markers are drawn (the
    page first draws an empty frame in the plane's place: a bare ``.js-plotly-plot`` is not the plane), the
    script runs it took, and the cookies the context holds then. ``cookies``: the context's cookies first."""
    from e2e.conftest import RUNS_JS, new_page, wait_app

    page = new_page(browser)
    try:
        page.context.add_init_script(RUNS_JS)
        if cookies:
            page.context.add_cookies(cookies)
        t0 = time.perf_counter()
        page.goto(url)
        wait_app(page, timeout=180_000)
        page.wait_for_selector(".js-plotly-plot .scatterlayer .point", timeout=180_000)
        took = time.perf_counter() - t0
        return took, int(page.evaluate("() => window.__amRuns")), page.context.cookies()
    finally:
        page.context.close()


def one_round(store: Path, tmp: Path, k: int, audit_cache: Path | None, cookies: list | None = None) -> dict:
    """One fresh app process on a copy of ``store``: first and second load of the Trade-off page. ``cookies``:
    ``None`` for a new browser profile per load, else the browser's cookies (a list, updated after each load)."""
    from playwright.sync_api import sync_playwright

    from e2e.conftest import CHROMIUM, CHROMIUM_ARGS, start_app

    db = tmp / f"round{k}.db"
    shutil.copyfile(store, db)
    cache = tmp / f"cache{k}"
    if audit_cache is not None:
        shutil.copytree(audit_cache, cache / "audit")
    server = start_app(f"sqlite:///{db}", env={"AUTOMONITOR_CACHE_DIR": str(cache)}, log_dir=tmp, timeout=180)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                c0 = _cpu_s(server.proc.pid)
                first, runs1, kept = _load(browser, f"{server.url}/tradeoff", cookies or [])
                cpu = _cpu_s(server.proc.pid) - c0
                if cookies is not None:
                    cookies[:] = kept
                second, runs2, kept = _load(browser, f"{server.url}/tradeoff", cookies or [])
                if cookies is not None:
                    cookies[:] = kept
            finally:
                browser.close()
    finally:
        server.stop()
    return {
        "first_s": first,
        "second_s": second,
        "server_cpu_s": cpu,
        "load_1m": os.getloadavg()[0],
        "runs_first": runs1,
        "runs_second": runs2,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", help="the bench_analysis store (SQLite file; made when missing)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--audit-cached", action="store_true", help="keep the audit cache (report cache empty)")
    ap.add_argument(
        "--returning", action="store_true", help="the browser keeps its cookies from load to load (a priming round)"
    )
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_page_") as t:
        tmp = Path(t)
        store = Path(a.store) if a.store else tmp / "store.db"
        if not store.exists():
            from bench_analysis import build_store

            build_store(f"sqlite:///{store}", n_monitors=a.runs // 2)
        audit = None
        if a.audit_cached:  # one process computes the audit; its cache is then copied into each round's
            from store import get_engine

            from automonitor.data.audit.cache import cached_audit

            os.environ["AUTOMONITOR_CACHE_DIR"] = str(tmp / "audit-src")
            eng = get_engine(f"sqlite:///{store}", fresh=True)
            for k in range(a.rounds + a.returning):  # the fingerprint names the store URL: one audit per round's copy
                db = tmp / f"round{k}.db"
                shutil.copyfile(store, db)
                cached_audit(get_engine(f"sqlite:///{db}", fresh=True), "paper")
            eng.dispose()
            audit = tmp / "audit-src" / "audit"
        cookies: list | None = [] if a.returning else None
        priming = one_round(store, tmp, a.rounds, audit, cookies) if a.returning else None
        rounds = [one_round(store, tmp, k, audit, cookies) for k in range(a.rounds)]
    med = statistics.median
    loads = ", ".join(f"{r['load_1m']:.1f}" for r in rounds)
    print(
        f"Trade-off page, {a.runs} runs x 3,010 samples, {'audit cached' if a.audit_cached else 'empty caches'}, "
        f"{'a returning browser, ' if a.returning else ''}{a.rounds} fresh app processes, medians: first load {med(r['first_s'] for r in rounds):.2f} s "
        f"(server CPU {med(r['server_cpu_s'] for r in rounds):.2f} s), second load "
        f"{med(r['second_s'] for r in rounds):.2f} s; load average (1 min) "
        f"{loads}; goal: first load < 5 s"
    )
    if priming is not None:
        print("priming round:", {k: round(v, 2) for k, v in priming.items()})
    for r in rounds:
        print({k: round(v, 2) for k, v in r.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
