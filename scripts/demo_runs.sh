#!/usr/bin/env bash
# The demo's data and monitor runs, in phases (`make demo` runs `fast`, then serves the app and starts
# `transfer` and `llm` in the background; all are safe to repeat: a second run reuses everything).
#
#   fast  (core install only: no torch, no llama.cpp; about a minute after the build on 2 cores)
#         build the benchmark from $AUTOMONITOR_RAW (skipped when the store already has it);
#         `rules` on the whole test set (template-independent: one point on the plot);
#         a TF-IDF + logistic-regression probe trained on the train split on the spot (skipped when an
#         artefact exists) and run as `probe:tfidf-lr` (scores: on the ROC page too), also under the
#         monitor views `answer` and `reasoning` (`run --view`: the report's comparison across views);
#         three derived runs without model calls (OR ensemble of rules and the probe, per-category
#         thresholds on the probe's scores, a cascade probe -> rules); the audit (Benchmark health
#         page, cached).
#   transfer  the TF-IDF transfer table of the Transfer page (one probe per training slice x every test
#         slice; about 2 minutes on an idle 2-core machine, so `make demo` runs it in the background right
#         after the app is up; skipped when saved).
#   llm   the packaged Gemma 3 270M judge (llamacpp, extra `local`) x {direct, evidence} on a stratified
#         subset of DEMO_LLAMA_LIMIT samples (default 120; about 0.7 s a sample for direct and 1.5 s for
#         evidence on 2 threads), direct again under the monitor view `answer` (the final output only;
#         the report compares it with the full view on the samples both judged) and the derived runs. The runs appear on the Runs page as they go.
#         One at a time (a lock file); llamacpp verdicts are contextually calibrated by default
#         (Zhao et al. 2021, see automonitor/runs/monitors/llamacpp.py).
#   start-background  (what `make demo` runs once the fast phase is done) start `make demo-background`
#         (`transfer`, then `llm`) detached, its output in $DEMO_LOG (default demo-llm.log), and write
#         $DEMO_PID (default demo-llm.pid): its pid, then the store it fills (AUTOMONITOR_DB, password
#         hidden). The Runs and Transfer pages say the phase runs only while that process is alive and
#         only when they show that store. The phase runs in a process group of its own (setsid), so that
#   stop-background  (`make demo-stop`) stops it with everything it started (pip, a judge run: a run is left
#         cancelled or resumable, as after Ctrl-C); says so when there is none.
# --reuse makes a repeat continue or reuse these runs instead of adding copies; verdicts are cached by
# content either way, so a repeat makes no model calls. Each phase prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
AM="${AM:-.venv/bin/automonitor}"
PY="${PY:-.venv/bin/python}"
LIMIT="${DEMO_LLAMA_LIMIT:-120}"
SEED="${DEMO_SAMPLE_SEED:-0}"
PHASE="${1:-all}"

# the run id of a `run --json` summary; a run that was stopped (the phase killed) or failed prints no summary:
# one line says so instead of a traceback, and the step fails
rid() {
  "$PY" -c 'import json, sys
try:
    print(json.load(sys.stdin)["run_id"])
except (ValueError, KeyError, TypeError):
    sys.exit("no run id: the run printed no summary (stopped or failed: see the lines above)")'
}
T0=$SECONDS
step() { echo "== [$(( SECONDS - T0 )) s] $*" >&2; }
artifacts() { "$PY" -c 'from automonitor.runs.probe.model import artifact_dir; print(artifact_dir())'; }

fast() {
  if [ "$("$AM" stats --json 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["total"])' 2>/dev/null || echo 0)" -gt 0 ]; then
    step "build: the store already holds the benchmark (reused; \`automonitor build\` to rebuild)"
  else
    step "build: the benchmark from $AUTOMONITOR_RAW"
    "$AM" build
  fi
  # two lanes on the two cores: rules then the audit | the probe's training then its run
  local tmp; tmp=$(mktemp -d)
  (
    step "rules (template-independent) / whole test set"
    "$AM" run --monitor rules --template direct --reuse --json --quiet | rid > "$tmp/rules"
    step "audit (Benchmark health page; cached)"
    "$AM" audit > /dev/null
  ) &
  local lane=$!
  local dir; dir=$(artifacts)
  if compgen -G "$dir/tfidf-lr-all-v*.probe.json" > /dev/null; then
    step "probe: TF-IDF artefact found in $dir (reused)"
  else
    step "probe: training TF-IDF + logistic regression on the train split"
    "$AM" probe train --features tfidf --on all
  fi
  step "probe:tfidf-lr / whole test set"
  PROBE=$("$AM" run --monitor probe:tfidf-lr --template direct --reuse --json | rid)
  for view in answer reasoning; do
    step "probe:tfidf-lr / view ${view} / the test samples that have it"
    "$AM" run --monitor probe:tfidf-lr --template direct --view "$view" --reuse --json --quiet > /dev/null
  done
  wait "$lane"
  RULES=$(cat "$tmp/rules"); rm -rf "$tmp"
  step "derived: ensemble, thresholds, cascade (no model calls)"
  "$AM" derive ensemble --runs "$RULES" "$PROBE" --rule or --reuse
  "$AM" derive thresholds --run "$PROBE" --target 'far<=0.2' --by category --folds 5 --reuse
  "$AM" derive cascade --cheap "$PROBE" --expensive "$RULES" --low 0.2 --high 0.8 --reuse
  step "fast phase done"
}

transfer() {
  local dir; dir=$(artifacts)
  if [ -f "$dir/transfer-tfidf.json" ]; then
    step "transfer table: found (reused)"
  else
    step "transfer table (Transfer page): one TF-IDF probe per training slice x every test slice"
    "$AM" probe transfer --features tfidf > /dev/null
  fi
  step "transfer phase done (the Transfer page shows the matrix by itself)"
}

llm() {
  exec 9> .demo-llm.lock
  if ! flock -n 9; then
    echo "another demo LLM phase is running (.demo-llm.lock): nothing to do" >&2
    return 0
  fi
  declare -A LLAMA
  for template in direct evidence; do
    step "llamacpp / ${template} / stratified subset of ${LIMIT} (seed ${SEED})"
    LLAMA[$template]=$("$AM" run --monitor llamacpp --template "$template" --limit "$LIMIT" --sample-seed "$SEED" \
                       --reuse --json | rid)
  done
  step "llamacpp / direct / view answer (the final output only) / stratified subset of ${LIMIT} (seed ${SEED})"
  "$AM" run --monitor llamacpp --template direct --view answer --limit "$LIMIT" --sample-seed "$SEED" \
    --reuse --json > /dev/null
  RULES=$("$AM" run --monitor rules --template direct --reuse --json --quiet | rid)
  step "derived on llamacpp: ensemble, thresholds, cascade"
  "$AM" derive ensemble --runs "$RULES" "${LLAMA[direct]}" --rule or --reuse
  "$AM" derive thresholds --run "${LLAMA[direct]}" --target 'far<=0.2' --by category --folds 5 --reuse
  "$AM" derive cascade --cheap "${LLAMA[direct]}" --expensive "$RULES" --low 0.2 --high 0.8 --reuse
  step "llm phase done"
  "$AM" runs
}

start_background() {
  local log="${DEMO_LOG:-demo-llm.log}" pidfile="${DEMO_PID:-demo-llm.pid}" store
  store=$("$PY" -c 'from store.engine import store_identity; print(store_identity())')
  # its own session and process group (the group id is its pid): stop-background stops the whole group
  setsid nohup ${DEMO_MAKE:-make} --no-print-directory demo-background > "$log" 2>&1 < /dev/null &
  printf '%s\n%s\n' "$!" "$store" > "$pidfile"
}

stop_background() {
  local pidfile="${DEMO_PID:-demo-llm.pid}" pid
  if [ ! -f "$pidfile" ]; then
    echo "no background demo phase to stop (no $pidfile)"
    return 0
  fi
  pid=$(head -n 1 "$pidfile")
  case "$pid" in '' | *[!0-9]*) echo "$pidfile: line 1: not a pid: '$pid'" >&2; return 2 ;; esac
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "the background demo phase (pid $pid) has already ended"
    return 0
  fi
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"  # the group; a phase started before setsid: itself
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  echo "stopped the background demo phase (pid $pid and what it started; log: ${DEMO_LOG:-demo-llm.log})"
}

case "$PHASE" in
  fast) fast ;;
  transfer) transfer ;;
  llm) llm ;;
  all) fast; transfer; llm ;;
  start-background) start_background ;;
  stop-background) stop_background ;;
  *) echo "usage: scripts/demo_runs.sh [fast|transfer|llm|all|start-background|stop-background]" >&2; exit 2 ;;
esac
