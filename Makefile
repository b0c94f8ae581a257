# Two entry points: `make demo` (set up, then run the scientist on the bundled default problem)
# and `make test` (set up, then run the test suite). Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
# A CPU build on machines without a GPU; on a GPU machine install your platform's torch first,
# e.g. `make TORCH=torch demo`, or any torch already in the venv satisfies this step.
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1

.PHONY: demo test lint setup

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@

demo: setup
	$(BIN)/python -m graph.run

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
