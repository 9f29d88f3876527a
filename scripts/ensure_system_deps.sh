#!/usr/bin/env bash
# System tools the product itself needs (not Python packages): Debian's bubblewrap (the sandbox that runs
# model-written code in `automonitor generate gaming`) and util-linux's prlimit/setpriv (its limits).
# Installs them when missing (root on the dev/CI machines); waits up to 5 minutes for a busy apt/dpkg lock
# (another install running) instead of failing at once.
set -euo pipefail
if [ -x /usr/bin/bwrap ] && [ -x /usr/bin/prlimit ] && [ -x /usr/bin/setpriv ] && [ -x /usr/bin/python3 ]; then exit 0; fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq bubblewrap util-linux python3
