# The README's two commands are `make demo` and `make test`; both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
DEMO_DIR ?= out/demo
# One thread per process: two threads on two busy cores were measured 5-25x slower.
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
export TOKENIZERS_PARALLELISM ?= false
export RAY_DEDUP_LOGS ?= 0

.PHONY: setup test lint demo bench clean sweep-45-models cluster-up cluster-down

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# torch first, from the machine's local files; constraints.txt keeps it in place after.
	$(PIP) install --quiet -c constraints.txt torch==2.14.1 torchvision==0.29.1
	$(PIP) install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

test: setup
	$(PY) -m pytest

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy geometry actors pipelines probes

demo: setup
	DEMO_DIR=$(DEMO_DIR) PY=$(PY) bash scripts/demo.sh

bench: setup
	$(PY) bench/render.py
	$(PY) bench/generate.py
	$(PY) bench/evaluate.py
	$(PY) bench/probe.py

# Submits the sweep to the Ray cluster at $RAY_ADDRESS with `ray job submit`; results go to
# $SWEEP_OUT (storage every node sees). See scripts/sweep_submit.sh for the knobs.
sweep-45-models: setup
	PYTHON=$(PY) RAY=$(VENV)/bin/ray scripts/sweep_submit.sh $(SWEEP_ARGS)

cluster-up: setup
	$(VENV)/bin/ray up -y cluster.yaml

cluster-down: setup
	$(VENV)/bin/ray down -y cluster.yaml

clean:
	rm -rf out .pytest_cache .mypy_cache .ruff_cache
