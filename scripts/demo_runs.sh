#!/usr/bin/env bash
# Monitor runs of the demo (filled in by the monitor-runs work).
set -euo pipefail
