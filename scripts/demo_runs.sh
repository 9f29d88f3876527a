#!/usr/bin/env bash
# Monitor runs of the demo (`make demo`, after `automonitor build`):
#   rules    once on the whole test set (3,010 samples, about 5 s): it reads no prompt, so its verdicts do
#            not depend on the template (registered as template-independent; one point on the plot)
#   llamacpp x {direct, evidence} on a stratified subset (category x task x label, pairs kept together)
#            of DEMO_LLAMA_LIMIT samples (default 120), the packaged Gemma 3 270M on 2 threads.
# Local model budget (documented in automonitor/monitors/llamacpp.py): a request keeps at most 256
# tokens and a response 384 (first two thirds + last third; truncation is recorded in each prediction's
# meta), the instruction prefix is evaluated once and reused; on 2 cores that is about 0.7 s a sample
# for `direct` and ~1.5 s for `evidence` (which also writes a short quote), i.e. a few minutes in all.
# llamacpp verdicts are contextually calibrated by default (Zhao et al. 2021, see llamacpp.py; add
# --param calibrate=false for raw P(Yes) >= 0.5, which flags every sample with this 270M base model).
# Then three derived runs (ensemble, task-aware thresholds, cascade) combine them without model calls.
# --reuse makes a second `make demo` continue or reuse these runs instead of adding copies; verdicts
# are cached by content either way, so a repeat makes no model calls.
set -euo pipefail
cd "$(dirname "$0")/.."
AM="${AM:-.venv/bin/automonitor}"
LIMIT="${DEMO_LLAMA_LIMIT:-120}"
SEED="${DEMO_SAMPLE_SEED:-0}"

PY="${PY:-.venv/bin/python}"
rid() { "$PY" -c 'import json, sys; print(json.load(sys.stdin)["run_id"])'; }
declare -A LLAMA
echo "== rules (template-independent) / whole test set" >&2
RULES=$("$AM" run --monitor rules --template direct --reuse --json --quiet | rid)
for template in direct evidence; do
  echo "== llamacpp / ${template} / stratified subset of ${LIMIT} (seed ${SEED})" >&2
  LLAMA[$template]=$("$AM" run --monitor llamacpp --template "$template" --limit "$LIMIT" --sample-seed "$SEED" \
                     --reuse --json --quiet | rid)
done
# Derived runs (no model calls; README "Combined monitors and batch runs"), on the llamacpp subset:
# an OR ensemble of rules and llamacpp, per-category thresholds on the llamacpp scores (cross-validated),
# and a cascade where llamacpp's confident scores decide and the rest goes to rules.
echo "== derived: ensemble, thresholds, cascade" >&2
"$AM" derive ensemble --runs "$RULES" "${LLAMA[direct]}" --rule or --reuse
"$AM" derive thresholds --run "${LLAMA[direct]}" --target 'far<=0.2' --by category --folds 5 --reuse
"$AM" derive cascade --cheap "${LLAMA[direct]}" --expensive "$RULES" --low 0.2 --high 0.8 --reuse
"$AM" runs
