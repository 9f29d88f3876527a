#!/usr/bin/env bash
# Run a command (a pip install into the virtual environment) holding the environment's install lock, so
# two installs never write into one venv at once: `make demo`'s background phase compiles the local judge
# (extra `local`, ~11 min) while `make test` or `make install` would install the test extras. A second
# install says that it waits, then waits for the first.
#   usage: scripts/with_install_lock.sh LOCKFILE COMMAND [ARGS...]
set -euo pipefail
lock="$1"
shift
exec 9>"$lock"
if ! flock -n 9; then
  echo "== waiting: another install into this virtual environment is running (make demo's background phase? its log: demo-llm.log); this one starts when it ends ==" >&2
  flock 9
fi
"$@"
