#!/usr/bin/env bash
# Lint gate: ruff check, ruff format --check, mypy on automonitor/ and store/, and the
# import-linter layer contracts, all configured in pyproject.toml, and the docs site (mkdocs build --strict). Exits non-zero on any finding.
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
# the docs site (MkDocs + Material, extra `docs`): strict, so a broken link or a page left out of the nav fails
echo "== docs reference = the code"; "$VENV/bin/python" scripts/gen_reference.py --check || status=1
echo "== mkdocs build --strict"; site="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --quiet -d "$site" || status=1
rm -rf "$site"
if [ "$status" -ne 0 ]; then echo "lint: FAILED" >&2; else echo "lint: ok"; fi
exit "$status"
