# AutoMonitor-Bench: two commands on a fresh machine.
#   make demo   install, build the benchmark from ../shared/raw, run monitors, open the app on :8501
#   make test   install (with test extras, Debian chromium and bubblewrap), lint, and run the whole test suite
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
AM := $(VENV)/bin/automonitor
export AUTOMONITOR_RAW ?= $(abspath ../shared/raw)
PORT ?= 8501

.PHONY: install demo test test-fast lint app bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip wheel
	$(VENV)/bin/pip install 'torch==2.13.0'  # the CPU build (local wheel here; never a CUDA build)
	$(VENV)/bin/pip install -e '.[dev,train]'
	touch $@

install: $(VENV)/.installed

demo: install
	bash scripts/ensure_system_deps.sh
	$(AM) build
	$(AM) stats
	bash scripts/demo_runs.sh
	$(PY) scripts/serve.py --server.port $(PORT) --server.headless true

app: install
	$(PY) scripts/serve.py --server.port $(PORT) --server.headless true

test: install
	bash scripts/ensure_chromium.sh
	bash scripts/ensure_system_deps.sh
	VENV=$(VENV) bash scripts/lint.sh
	$(VENV)/bin/pytest

lint: install
	VENV=$(VENV) bash scripts/lint.sh

test-fast: install
	bash scripts/ensure_system_deps.sh
	$(VENV)/bin/pytest -m "not slow"

bench: install
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) automonitor.db automonitor.db-wal automonitor.db-shm test-artifacts
