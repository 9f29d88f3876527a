"""Benchmark: size and build time of the self-contained HTML report (``automonitor report --format
html``) for 30 runs x 3,010 samples.

Store: the one of ``bench_analysis.py`` (1,505 pairs; 15 monitors x {direct, evidence}; evidence runs
quote 2 spans per prediction). Measures the bytes of the file (goal: under 5 MB for 30 runs)
and, split out, the inlined plotly.js (gzip + base64) and everything else, and the build time (report
model + HTML). The gallery is bounded per slice (``report_html.GALLERY_PER_SLICE`` samples per error
kind, texts cut at ``RESPONSE_CHARS``), so the size grows with the runs only through the tables and the
figure. Usage: ``.venv/bin/python benchmarks/bench_report_html.py``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_analysis import build_store  # noqa: E402

from automonitor import analysis  # noqa: E402
from automonitor.views import report_html

LIMIT = 5_000_000


def main() -> int:
    with tempfile.TemporaryDirectory() as d:
        url = f"sqlite:///{os.path.join(d, 'bench.db')}"
        build_store(url)
        from store import get_engine

        eng = get_engine(url)
        t0 = time.perf_counter()
        rep = analysis.report(eng, None, "exclude", n_boot=200)
        t1 = time.perf_counter()
        path = os.path.join(d, "report.html")
        size = report_html.write(eng, rep, path)
        t2 = time.perf_counter()
        plotly = len(report_html.plotly_js_gzip_b64())
        items = len(report_html.gallery(eng, rep))
    print(f"runs: {len(rep.runs)}, gallery samples: {items}")
    print(f"report model: {t1 - t0:.2f} s; HTML build + write: {t2 - t1:.2f} s")
    print(
        f"file: {size / 1e6:.2f} MB (plotly.js gzip+base64 {plotly / 1e6:.2f} MB, the rest {(size - plotly) / 1e6:.2f} MB)"
    )
    ok = size < LIMIT and len(rep.runs) == 30
    print("OK: under 5 MB" if ok else "FAIL: 5 MB or more")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
