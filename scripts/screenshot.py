"""Draw the README's picture (docs/screenshots/tradeoff.png) from what `make demo` really runs.

Builds a fresh store in a temporary directory with `scripts/demo_runs.sh fast` (the benchmark, `rules`,
the TF-IDF probe trained on the spot, the three derived runs: every point on the plane is a monitor that
was really run; nothing is seeded or named after a model that was not called), serves the app on a free
port, opens the Trade-off page in headless Chromium at 1280x720 and saves the viewport.

Usage: ``python scripts/screenshot.py [--db URL] [--out PATH]``; ``--db`` shoots an existing store made by
``make demo`` instead of building one (minutes: the build and the probe's training).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("AUTOMONITOR_CHROMIUM", "/usr/bin/chromium")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, proc: subprocess.Popen, limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the app exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the app did not answer at {url}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", help="an existing store made by `make demo` (default: build one with its runs)")
    ap.add_argument("--out", default=str(REPO / "docs" / "screenshots" / "tradeoff.png"))
    args = ap.parse_args(argv)
    bindir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="am-shot-") as tmp:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        if args.db:
            env["AUTOMONITOR_DB"] = args.db
        else:
            env |= {
                "AUTOMONITOR_DB": f"sqlite:///{tmp}/demo.db",
                "AUTOMONITOR_ARTIFACTS": f"{tmp}/artifacts",
                "AM": str(bindir / "automonitor"),
                "PY": sys.executable,
            }
            env.setdefault("AUTOMONITOR_RAW", str(REPO.parent / "shared" / "raw"))
            subprocess.run(["bash", str(REPO / "scripts" / "demo_runs.sh"), "fast"], cwd=REPO, env=env, check=True)
        port = _free_port()
        app = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.port",
                str(port),
                "--server.headless",
                "true",
            ],
            cwd=REPO,
            env={**env, "PYTHONPATH": env["PYTHONPATH"]},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_http(f"{base}/_stcore/health", app)
            from playwright.sync_api import sync_playwright

            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 720})
                page.goto(f"{base}/tradeoff", wait_until="networkidle")
                page.wait_for_selector(".js-plotly-plot .scatterlayer .point", timeout=120_000)
                page.wait_for_timeout(1500)
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=args.out, full_page=False)
                browser.close()
        finally:
            app.terminate()
            app.wait(timeout=30)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
