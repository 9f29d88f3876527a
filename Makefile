# AutoMonitor-Bench: two commands on a fresh machine.
#   make demo   install the core only (no torch, no llama.cpp compile), build the benchmark from
#               ../shared/raw, run the fast monitors (rules, a TF-IDF probe trained on the spot, derived
#               runs, the audit) and serve the app on :8501 at once; the transfer table, then the local
#               LLM judge (extra `local`, compiled) are made in the background, live in the app
#   make test   install everything the tests need (dev, train, local, docs extras; Debian chromium and
#               bubblewrap), lint, run the whole test suite, then tests/app on the lowest allowed Streamlit
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
AM := $(VENV)/bin/automonitor
PIP_FLAGS ?=
export AUTOMONITOR_RAW ?= $(abspath ../shared/raw)
PORT ?= 8501
DEMO_LOG ?= demo-llm.log
# the background phase's pid and the store it fills (the Runs page says the phase runs only while it is alive
# and only when it shows that store)
DEMO_PID ?= demo-llm.pid
# every pip install into $(VENV) holds this lock (the demo's background install and `make test` never mix)
LOCKED := bash scripts/with_install_lock.sh $(VENV).install.lock

.PHONY: install install-core demo demo-stop demo-background demo-llm test test-fast test-streamlit-min lint app bench clean

# the core package (what `make demo` needs first): no torch, no llama-cpp-python
$(VENV)/.core: pyproject.toml
	@echo "== install: virtual environment + the core package (no torch, no llama.cpp) ==" >&2
	@test -x $(PY) || python3 -m venv $(VENV)
	$(LOCKED) $(VENV)/bin/pip install $(PIP_FLAGS) -q --upgrade pip wheel
	$(LOCKED) $(VENV)/bin/pip install $(PIP_FLAGS) --progress-bar on -e .
	touch $@

# the local LLM judge: llama-cpp-python has no Linux wheel on PyPI, so this compiles llama.cpp (~11 min)
$(VENV)/.local: $(VENV)/.core
	@echo "== install: extra 'local' (llama-cpp-python: compiled from source, about 11 minutes on 2 cores, or seconds when pip kept a wheel) ==" >&2
	$(LOCKED) $(VENV)/bin/pip install $(PIP_FLAGS) -e '.[local]'
	touch $@

# everything the tests need (CI): dev tools, the CPU build of torch with the train extra, the local judge
$(VENV)/.installed: $(VENV)/.core
	$(LOCKED) $(VENV)/bin/pip install $(PIP_FLAGS) 'torch==2.13.0'  # the CPU build (local wheel here; never a CUDA build)
	$(LOCKED) $(VENV)/bin/pip install $(PIP_FLAGS) -e '.[dev,train,local,docs]'
	touch $(VENV)/.local $@

install: $(VENV)/.installed

install-core: $(VENV)/.core

demo: $(VENV)/.core
	bash scripts/ensure_system_deps.sh
	AM=$(AM) PY=$(PY) bash scripts/demo_runs.sh fast
	@echo "== background: the transfer table, then the local LLM judge (install + runs; log: $(DEMO_LOG); live on the Runs page) ==" >&2
	AM=$(AM) PY=$(PY) DEMO_MAKE="$(MAKE)" DEMO_LOG=$(DEMO_LOG) DEMO_PID=$(DEMO_PID) bash scripts/demo_runs.sh start-background
	$(PY) -m streamlit run app.py --server.port $(PORT) --server.headless true

# stop the demo's background phase (the transfer table, the local judge) and what it started; Ctrl-C stops the app
demo-stop:
	DEMO_LOG=$(DEMO_LOG) DEMO_PID=$(DEMO_PID) bash scripts/demo_runs.sh stop-background

# the slow part of the demo (started in the background by `make demo`; safe to run by hand)
demo-background: $(VENV)/.core
	AM=$(AM) PY=$(PY) bash scripts/demo_runs.sh transfer
	$(MAKE) --no-print-directory demo-llm

demo-llm: $(VENV)/.local
	AM=$(AM) PY=$(PY) bash scripts/demo_runs.sh llm

app: $(VENV)/.core
	$(PY) -m streamlit run app.py --server.port $(PORT) --server.headless true

test: install
	$(LOCKED) true  # waits while another install (the demo's background phase) still writes into $(VENV)
	bash scripts/ensure_chromium.sh
	bash scripts/ensure_system_deps.sh
	VENV=$(VENV) bash scripts/lint.sh
	$(VENV)/bin/pytest -n 2 --dist worksteal --durations=30 --durations-file tests/durations.txt  # two workers (2 cores) that take work from each other's queue; the 30 slowest tests listed, each file's seconds written to tests/durations.txt (kept in git)
	$(MAKE) --no-print-directory test-streamlit-min  # tests/app again on the lowest allowed Streamlit (~2-4 min on 2 cores)

# the app tests on the lowest Streamlit the project allows (tests/app/streamlit-min.txt, pyproject's floor):
# that release and the older pins it needs go into a folder of their own under the venv (kept between runs,
# remade when the pins or the venv change), put first on PYTHONPATH. The folder's path must hold
# "site-packages": Streamlit turns on its development mode when it is imported from elsewhere, and the
# app tests then fail for that reason alone. The newest allowed Streamlit is the venv's (`make test`).
ST_MIN := $(VENV)/streamlit-min/site-packages
$(ST_MIN)/.installed: tests/app/streamlit-min.txt $(VENV)/.installed
	rm -rf $(ST_MIN)
	$(LOCKED) $(VENV)/bin/pip install $(PIP_FLAGS) -q --no-deps --target $(ST_MIN) -r tests/app/streamlit-min.txt
	PYTHONPATH=$(abspath $(ST_MIN)) $(PY) -m pip check  # the overlay + the venv satisfy that Streamlit's requirements
	touch $@

test-streamlit-min: $(ST_MIN)/.installed
	bash scripts/ensure_system_deps.sh
	PYTHONPATH=$(abspath $(ST_MIN)) $(VENV)/bin/pytest -n 2 --dist worksteal tests/app

lint: install
	VENV=$(VENV) bash scripts/lint.sh

test-fast: install
	bash scripts/ensure_system_deps.sh
	$(VENV)/bin/pytest -m "not slow"

bench: install
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) automonitor.db automonitor.db-wal automonitor.db-shm test-artifacts $(DEMO_LOG) $(DEMO_PID)
