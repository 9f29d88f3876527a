#!/usr/bin/env bash
# Issue 38's figures in one go, on a quiet machine: the CLI start, a cached audit, report --json (30 and 100 runs,
# cold and warm, through bench_analysis.py --cli), the HTML report, the cold Trade-off page (bench_page_cold.py) and
# the judge job against the aiohttp floor (bench_scale.py). About 10 minutes; the stores are made once in OUTDIR.
# Usage: bash benchmarks/measure_issue38.sh [REPO (default: this checkout)] [OUTDIR (default: /tmp/am-measure)]
# (PY: the interpreter, default REPO/.venv/bin/python; AUTOMONITOR_RAW as for the tests)
set -uo pipefail
R=$(cd "${1:-$(dirname "$0")/..}" && pwd); O=${2:-/tmp/am-measure}; mkdir -p "$O"
cd "$R"; export PYTHONPATH=$R AUTOMONITOR_RAW=${AUTOMONITOR_RAW:-$(cd "$R/.." && pwd)/shared/raw}; PY=${PY:-$R/.venv/bin/python}
cpu() { /usr/bin/time -f "%e %U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "wall %.2f cpu %.2f\n",$1,$2+$3}'; }
echo "== $(date -u +%H:%M:%S) $(git -C "$R" log --oneline -1 | cut -c1-60) load $(cut -d' ' -f1-3 /proc/loadavg)"
lscpu | grep -E "Model name"
# The package's bytecode is written first: Python writes it on a command's first run unless PYTHONDONTWRITEBYTECODE
# is set (this sandbox and its CI set it, so without this step every command also compiles the modules it imports:
# --help ~0.1 s CPU more). A pip install (wheel) compiles at install time. Both are printed.
echo "-- automonitor --help x3, no bytecode (PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-unset})"
find automonitor store -name '__pycache__' -prune -exec rm -rf {} + 2>/dev/null
for i in 1 2 3; do PYTHONDONTWRITEBYTECODE=1 cpu $PY -m automonitor --help; done
$PY -m compileall -q automonitor store pages app.py >/dev/null
echo "-- automonitor --help x5"; for i in 1 2 3 4 5; do cpu $PY -m automonitor --help; done
echo "-- python -c 'import automonitor.cli' x3"; for i in 1 2 3; do cpu $PY -c "import automonitor.cli"; done
for n in 30 100; do
  echo "-- bench_analysis --cli --runs $n (load $(cut -d' ' -f1 /proc/loadavg))"
  $PY benchmarks/bench_analysis.py --cli --runs $n --repeat 3 --store $O/s$n.db 2>&1 | grep -vE "^  " | tail -12
done
for n in 30 100; do
  echo "-- report --format html, $n runs: cold x2, warm x2 (load $(cut -d' ' -f1 /proc/loadavg))"
  for i in 1 2; do rm -rf $O/c_html; AUTOMONITOR_CACHE_DIR=$O/c_html AUTOMONITOR_DB=sqlite:///$O/s$n.db cpu $PY -m automonitor report --format html -o $O/r$n.html; done
  for i in 1 2; do AUTOMONITOR_CACHE_DIR=$O/c_html AUTOMONITOR_DB=sqlite:///$O/s$n.db cpu $PY -m automonitor report --format html -o $O/r$n.html; done
done
echo "-- cached audit, 30 runs x3"; AUTOMONITOR_CACHE_DIR=$O/c_aud AUTOMONITOR_DB=sqlite:///$O/s30.db $PY -m automonitor audit >/dev/null 2>&1
for i in 1 2 3; do AUTOMONITOR_CACHE_DIR=$O/c_aud AUTOMONITOR_DB=sqlite:///$O/s30.db cpu $PY -m automonitor audit; done
echo "-- bench_page_cold (load $(cut -d' ' -f1 /proc/loadavg))"
$PY benchmarks/bench_page_cold.py --store $O/s30.db --rounds 2 --audit-cached 2>&1 | tail -6
$PY benchmarks/bench_page_cold.py --store $O/s30.db --rounds 2 2>&1 | tail -6
echo "-- bench_scale (load $(cut -d' ' -f1 /proc/loadavg))"
$PY benchmarks/bench_scale.py --rounds 3 2>&1 | tail -25
echo "== end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
