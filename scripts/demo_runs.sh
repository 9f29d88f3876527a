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
# --reuse makes a second `make demo` continue or reuse these runs instead of adding copies; verdicts
# are cached by content either way, so a repeat makes no model calls.
set -euo pipefail
cd "$(dirname "$0")/.."
AM="${AM:-.venv/bin/automonitor}"
LIMIT="${DEMO_LLAMA_LIMIT:-120}"
SEED="${DEMO_SAMPLE_SEED:-0}"

echo "== rules (template-independent) / whole test set" >&2
"$AM" run --monitor rules --template direct --reuse
for template in direct evidence; do
  echo "== llamacpp / ${template} / stratified subset of ${LIMIT} (seed ${SEED})" >&2
  "$AM" run --monitor llamacpp --template "$template" --limit "$LIMIT" --sample-seed "$SEED" --reuse
done
"$AM" runs
