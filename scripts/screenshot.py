"""Draw the README's picture (docs/screenshots/tradeoff.png) from what `make demo` really runs.

Builds a fresh store in a temporary directory with `scripts/demo_runs.sh fast` (the benchmark, `rules`,
the TF-IDF probe trained on the spot, the three derived runs: every point on the plane is a monitor that
was really run; nothing is seeded or named after a model that was not called), serves the app on a free
port, opens the Trade-off page in headless Chromium at 1280x720 and saves the viewport.

Beside the picture it writes its provenance, ``<out>.provenance.json`` (:func:`provenance`): the picture's
SHA-256 and every run of the store it was drawn from (monitor, template, kind, status, samples judged, API
calls, the label the plane gives it). ``tests/base/test_readme.py`` checks, without a browser, that the
README's picture is the one described and that every run in it is one `scripts/demo_runs.sh` makes, judged
for real.

Usage: ``python scripts/screenshot.py [--db URL] [--out PATH]``; ``--db`` shoots an existing store made by
``make demo`` instead of building one (minutes: the build and the probe's training).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# label the runs with this checkout's code (the code of the app it serves), not an installed copy's
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
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


def provenance(png: Path, env: dict[str, str], store: str) -> dict[str, object]:
    """What the picture ``png`` was drawn from: ``{"picture", "png_sha256", "drawn_by", "store", "runs"}``
    with ``runs`` every run of the store at ``env["AUTOMONITOR_DB"]`` (``automonitor runs --json``, the
    detector ladder and generation runs left out as the app leaves them out): ``run_id``, ``monitor``,
    ``template``, ``kind``, ``view``, ``status``, ``archived``, ``judged`` (samples with an outcome),
    ``api_calls`` and ``label`` (the plane's text, ``views.honest_points.short_label``)."""
    from automonitor.views.honest_points import short_label

    out = subprocess.run(
        [str(Path(sys.executable).parent / "automonitor"), "runs", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    runs = [
        {
            "run_id": r["run_id"],
            "monitor": r["monitor"],
            "template": r["template"],
            "kind": r["kind"],
            "view": r["view"],
            "status": r["status"],
            "archived": r["archived"],
            "judged": sum(n for k, n in r["counts"].items() if k != "pending"),
            "api_calls": r["api_calls"],
            "label": short_label(r["monitor"], r["template"]),
        }
        for r in json.loads(out)["runs"]
    ]
    return {
        "picture": png.name,
        "png_sha256": hashlib.sha256(png.read_bytes()).hexdigest(),
        "drawn_by": "scripts/screenshot.py",
        "store": store,
        "runs": sorted(runs, key=lambda r: (r["kind"], r["monitor"], r["template"], r["view"])),
    }


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
        made = "an existing store (--db)" if args.db else "a fresh store made by `scripts/demo_runs.sh fast`"
        doc = provenance(Path(args.out), env, made)
        side = Path(f"{Path(args.out).with_suffix('')}.provenance.json")
        side.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out} and {side}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
