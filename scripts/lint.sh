#!/usr/bin/env bash
# Lint gate: ruff check, ruff format --check, mypy on automonitor/ and store/, and the
# import-linter layer contracts, all configured in pyproject.toml. Exits non-zero on any finding.
# Usage: scripts/lint.sh            (tools from $VENV, default: ./.venv)
set -u
cd "$(dirname "$0")/.."
VENV="${VENV:-}"
if [ -z "$VENV" ]; then
  VENV=.venv
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
status=0
echo "== ruff check"; "$VENV/bin/ruff" check --output-format concise . || status=1
echo "== ruff format --check"; "$VENV/bin/ruff" format --check . || status=1
echo "== mypy";       "$VENV/bin/mypy" || status=1
echo "== lint-imports"; "$VENV/bin/lint-imports" --no-cache || status=1
if [ "$status" -ne 0 ]; then echo "lint: FAILED" >&2; else echo "lint: ok"; fi
exit "$status"
