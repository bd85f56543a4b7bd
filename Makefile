# Quick start: `make demo` and `make test`. Both create .venv with nothing but a system Python >= 3.11.
#
# PyTorch: the CPU build is enough. TORCH_SPEC pins what is installed before the package; on machines without a
# local wheel use e.g.  make test TORCH_INDEX="--index-url https://download.pytorch.org/whl/cpu"
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
EXTRAS ?= dev,ray
PYTEST_ARGS ?=
DEMO_OUT ?= demo-output

.PHONY: setup demo test check test-all lint typecheck bench gpu-check clean

$(BIN)/.installed: pyproject.toml Makefile
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required, found " + sys.version'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH_INDEX) "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

setup: $(BIN)/.installed

demo: setup
	$(BIN)/deepcollapse demo --out $(DEMO_OUT) --force

# Two tiers: `make test` is the fast tier (unit, contract and small end-to-end tests, a few minutes);
# `make check` the claims (paper checks, every experiment's smoke run, the browser check of the report, the
# long network runs; under 25 minutes on 2 cores). `make test-all` runs both and the hour-long `slow` tests.
# PYTEST_ARGS: extra pytest options, e.g. make test PYTEST_ARGS="--durations=15 -x"
test: setup
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

check: setup
	$(BIN)/python -m pytest -q -m check --durations=15 $(PYTEST_ARGS)

test-all: setup
	$(BIN)/python -m pytest -q -m ""

lint: setup
	$(BIN)/ruff check src tests benchmarks tools

typecheck: setup
	$(BIN)/mypy

bench: setup
	$(BIN)/python benchmarks/dufm_throughput.py
	$(BIN)/python benchmarks/metrics_streaming.py
	$(BIN)/python benchmarks/cli_startup.py

# GPU parity tests + throughput benchmarks on cuda (< 5 min), one JSON summary, also written to
# GPU_CHECK_OUT (tools/runtime_table.py reads it); without a GPU it says so, writes nothing and exits 0.  Runs
# from the source tree with GPU_PYTHON: .venv's python where `make setup` made one (the torch `make demo` /
# `make test` installed), else $(PYTHON); installs nothing.  A GPU box's own CUDA PyTorch:
#   make gpu-check PYTHON=python3   (or GPU_PYTHON=/path/to/python)
ifeq ($(origin PYTHON),command line)
GPU_PYTHON ?= $(PYTHON)
else
GPU_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))
endif
GPU_CHECK_OUT ?= benchmarks/results/gpu_check.json
gpu-check:
	PYTHONPATH=src $(GPU_PYTHON) benchmarks/gpu_check.py --out $(GPU_CHECK_OUT)

clean:
	rm -rf $(VENV) $(DEMO_OUT) build *.egg-info src/*.egg-info
